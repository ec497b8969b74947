-- 006: per-monitor request options and assertions, their secrets kept apart, and the
-- type-specific figures of each check.

-- The check type's settings (for http: method, headers that are not secret, request body,
-- body cap, tls_verify, assertions), validated by the type's model in monitor/checks/.
-- '{}' is a plain GET judged by its status, every monitor created before this migration.
ALTER TABLE monitors ADD COLUMN settings jsonb NOT NULL DEFAULT '{}';

-- Credentials (basic auth, bearer token, values of sensitive request headers) live apart
-- from the monitor row, so no query that renders or lists monitors reads them by accident:
-- the api writes them and shows them masked; only the scheduler reads them whole.
CREATE TABLE monitor_secrets (
    monitor_id bigint PRIMARY KEY REFERENCES monitors (id) ON DELETE CASCADE,
    secrets    jsonb  NOT NULL
);

-- What a check observed beyond the common columns: each assertion's outcome, whether the
-- body was cut at its cap, whether the certificate was checked. NULL for a plain status
-- check, so the common case costs nothing.
ALTER TABLE checks ADD COLUMN details jsonb;
