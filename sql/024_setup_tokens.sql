-- 024: the first run (issue 29): one-time setup tokens that let the first visitor of a fresh
-- installation make its first owner and account (monitor/domain/first_run.py).
--
-- A token exists only while no user does: `monitor api` at start and `monitor setup-url` make
-- one (each valid for 24 hours; several may be), and making the first owner deletes them all.
-- Stored as its SHA-256 only: the token holds 256 random bits, so no slow hash is needed.

CREATE TABLE setup_tokens (
    token_hash bytea       PRIMARY KEY CHECK (length(token_hash) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    CHECK (expires_at > created_at)
);

-- Failed setup attempts are throttled per client address like failed sign-ins, counted apart
-- (scope 'setup'), so guessing tokens neither locks out nor is hidden by sign-ins.
ALTER TABLE signin_throttle DROP CONSTRAINT signin_throttle_scope_check;
ALTER TABLE signin_throttle ADD CONSTRAINT signin_throttle_scope_check
    CHECK (scope IN ('email', 'address', 'setup'));
