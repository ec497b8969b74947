-- 021: people (issue 28): users, their membership of accounts with a role, keys with a role
-- and a maker, and the audit log of every write.
--
-- Expand only: nothing existing changes meaning. An API key made before this migration (or by a
-- process of the release before, which does not write the new columns) gets role 'owner' and no
-- maker, so it keeps doing everything in its account, as it did. api_keys.last_used_at is there
-- since 002 and is now written (at most once a minute per key).

CREATE TABLE users (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email         text        NOT NULL CHECK (length(email) BETWEEN 3 AND 254 AND email LIKE '%_@_%'),
    display_name  text        NOT NULL DEFAULT '' CHECK (length(display_name) <= 100),
    -- argon2id, PHC string form ($argon2id$v=19$m=...); NULL: no password yet (invited, or signs
    -- in only through single sign-on).
    password_hash text,
    created_at    timestamptz NOT NULL DEFAULT now()
);
-- One user per address, whatever its case: Alice@Example.com and alice@example.com are one.
CREATE UNIQUE INDEX users_email ON users (lower(email));

CREATE TABLE memberships (
    account_id bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id    bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       text        NOT NULL CHECK (role IN ('owner', 'admin', 'editor', 'viewer', 'notify')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, user_id)
);
CREATE INDEX memberships_user ON memberships (user_id);

ALTER TABLE api_keys
    ADD COLUMN role text NOT NULL DEFAULT 'owner'
        CHECK (role IN ('owner', 'admin', 'editor', 'viewer', 'notify')),
    ADD COLUMN created_by bigint REFERENCES users (id) ON DELETE SET NULL;

-- Who (a user, a key or both: a key its maker made), what (resource, object id, operation and
-- the names of the fields changed, never their values), when and from where. Rows older than
-- MONITOR_AUDIT_RETENTION_DAYS are swept by the scheduler (monitor/scheduler/retention.py).
CREATE TABLE audit_log (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id  bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    at          timestamptz NOT NULL DEFAULT now(),
    user_id     bigint REFERENCES users (id) ON DELETE SET NULL,
    key_id      bigint REFERENCES api_keys (id) ON DELETE SET NULL,
    resource    text        NOT NULL,
    object_id   text,
    operation   text        NOT NULL,
    fields      text[]      NOT NULL DEFAULT '{}',
    address     text
);
CREATE INDEX audit_log_account ON audit_log (account_id, id);
CREATE INDEX audit_log_at ON audit_log (at);
