-- 022: sign-in (issue 28): dashboard sessions, two factors, the throttle of failed sign-ins,
-- invitations and password resets.
--
-- Nothing here is a secret in clear: a session id, an invitation or reset token and a recovery
-- code are stored as their SHA-256 only (each holds at least 80 random bits, so no slow hash is
-- needed); a TOTP secret, which must be read back to check a code, is sealed with
-- MONITOR_SECRET_KEY (enc:v1:, monitor/secrets.py) and re-sealed by `monitor secrets rotate`.

CREATE TABLE sessions (
    id_hash      bytea       PRIMARY KEY CHECK (length(id_hash) = 32),
    user_id      bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    -- the earlier of last_seen_at + idle and created_at + absolute (monitor/domain/session_ids.py)
    expires_at   timestamptz NOT NULL,
    address      text,
    user_agent   text CHECK (length(user_agent) <= 512)
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

-- One TOTP secret per user; confirmed_at NULL while enrolment waits for a first right code.
-- last_step: the 30-second step of the last code accepted, so no code is accepted twice.
CREATE TABLE user_totp (
    user_id      bigint      PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    secret       text        NOT NULL CHECK (secret LIKE 'enc:v1:%'),
    created_at   timestamptz NOT NULL DEFAULT now(),
    confirmed_at timestamptz,
    last_step    bigint
);

CREATE TABLE recovery_codes (
    user_id   bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash bytea  NOT NULL CHECK (length(code_hash) = 32),
    PRIMARY KEY (user_id, code_hash)
);

-- Failed sign-ins per e-mail (as typed, hashed) and per client address (its /64 for IPv6),
-- monitor/domain/throttle.py; a count older than a day starts again.
CREATE TABLE signin_throttle (
    scope        text        NOT NULL CHECK (scope IN ('email', 'address')),
    key          bytea       NOT NULL,
    failures     integer     NOT NULL CHECK (failures > 0),
    last_failure timestamptz NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX signin_throttle_last ON signin_throttle (last_failure);

-- An invitation to join an account with a role, sent by e-mail; used once, before it expires.
CREATE TABLE invitations (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_hash bytea       NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    account_id bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email      text        NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
    role       text        NOT NULL CHECK (role IN ('owner', 'admin', 'editor', 'viewer', 'notify')),
    invited_by bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX invitations_account ON invitations (account_id);

-- A password reset, sent by e-mail to the user's address; used once, before it expires.
CREATE TABLE password_resets (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_hash bytea       NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    user_id    bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX password_resets_user ON password_resets (user_id);
