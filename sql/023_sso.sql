-- 023: single sign-on (issue 28): a login between the redirect to the identity provider and its
-- callback (monitor/domain/sso.py). Keyed by the SHA-256 of its state and deleted by the callback
-- that takes it, so a state works once; the PKCE verifier is sealed like every stored secret.
-- A row lives ten minutes; each new login sweeps the expired ones.
CREATE TABLE sso_logins (
    state_hash bytea       PRIMARY KEY CHECK (length(state_hash) = 32),
    nonce      text        NOT NULL CHECK (length(nonce) BETWEEN 43 AND 128),
    verifier   text        NOT NULL CHECK (verifier LIKE 'enc:v1:%'),
    return_to  text        NOT NULL CHECK (length(return_to) BETWEEN 1 AND 2000),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX sso_logins_expires ON sso_logins (expires_at);
