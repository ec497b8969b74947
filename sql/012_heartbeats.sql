-- 012: heartbeat (push) monitors (issue 14, point 5). A heartbeat monitor has a secret ping
-- token (its URL is /ping/<token>); the api inserts one row into `pings` per ping and the
-- scheduler turns each row into a result, deleting it in the transaction that writes that
-- result (monitor/scheduler/heartbeat.py), so a ping is neither lost nor counted twice.

ALTER TABLE monitors ADD COLUMN ping_token text;
CREATE UNIQUE INDEX monitors_ping_token ON monitors (ping_token) WHERE ping_token IS NOT NULL;

CREATE TABLE pings (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    monitor_id     bigint      NOT NULL,
    time           timestamptz NOT NULL,
    kind           text        NOT NULL CHECK (kind IN ('ok', 'start', 'fail')),
    body           text,
    body_truncated boolean     NOT NULL DEFAULT false
);

CREATE FUNCTION pings_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('pings_added', '');
    RETURN NULL;
END $$;

CREATE TRIGGER pings_added AFTER INSERT ON pings
    FOR EACH STATEMENT EXECUTE FUNCTION pings_notify();
