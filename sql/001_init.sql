-- 001: monitors, check results (hypertable), per-monitor state, incidents,
-- the event outbox and the alert delivery log.

CREATE EXTENSION IF NOT EXISTS timescaledb;

CREATE TABLE monitors (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name             text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    type             text        NOT NULL DEFAULT 'http',
    url              text        NOT NULL,
    interval_seconds double precision NOT NULL CHECK (interval_seconds > 0),
    timeout_seconds  double precision NOT NULL CHECK (timeout_seconds > 0),
    -- List of [low, high] inclusive status ranges, e.g. [[200, 399]].
    expected_status  jsonb       NOT NULL DEFAULT '[[200, 399]]',
    confirm_after    integer     NOT NULL DEFAULT 2 CHECK (confirm_after BETWEEN 1 AND 100),
    follow_redirects boolean     NOT NULL DEFAULT false,
    telegram_chat_id text,
    paused           boolean     NOT NULL DEFAULT false,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- Every change to a monitor is announced, whoever made it, so the scheduler can
-- restart just that monitor's task. The payload is the id; the scheduler reads the row.
CREATE FUNCTION monitors_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('monitors_changed', COALESCE(NEW.id, OLD.id)::text);
    RETURN NULL;
END $$;

CREATE TRIGGER monitors_changed AFTER INSERT OR UPDATE OR DELETE ON monitors
    FOR EACH ROW EXECUTE FUNCTION monitors_notify();

-- One row per check. No foreign key to monitors: a key check on every row of a
-- write-heavy hypertable costs more than it protects, and the rows of a deleted
-- monitor (ids are never reused) simply age out with the retention policy.
CREATE TABLE checks (
    time        timestamptz      NOT NULL,
    monitor_id  bigint           NOT NULL,
    ok          boolean          NOT NULL,
    status_code integer,
    latency_ms  double precision,
    error       text,
    location    text,
    lateness_ms double precision,
    dns_ms      double precision,
    connect_ms  double precision,
    tls_ms      double precision,
    ttfb_ms     double precision,
    -- (time, monitor_id) replaces TimescaleDB's default time index and makes a
    -- check result unique, so a batch written twice after an outage cannot double.
    PRIMARY KEY (time, monitor_id)
);

-- Chunks of one day: at 10,000 monitors every 30 s that is ~29 M rows a day,
-- whose chunk and indexes stay well inside memory (TimescaleDB's guidance is a
-- quarter of RAM for the recent chunks), while 90 days of retention is 90 chunks:
-- few enough for planning to stay fast, and drop_chunks frees whole days.
SELECT create_hypertable('checks', by_range('time', INTERVAL '1 day'), create_default_indexes => false);

-- "Latest checks of one monitor" is the hot read (API history, uptime).
CREATE INDEX checks_monitor_time ON checks (monitor_id, time DESC);

-- Per-monitor state machine, so a restarted scheduler continues a failure streak.
CREATE TABLE monitor_state (
    monitor_id           bigint PRIMARY KEY REFERENCES monitors (id) ON DELETE CASCADE,
    status               text        NOT NULL DEFAULT 'unknown' CHECK (status IN ('unknown', 'up', 'down')),
    consecutive_failures integer     NOT NULL DEFAULT 0,
    -- Time of the first failing check of the current failure streak.
    streak_started_at    timestamptz,
    last_check_at        timestamptz,
    last_ok              boolean,
    last_error           text,
    last_status_code     integer,
    last_latency_ms      double precision,
    changed_at           timestamptz
);

CREATE TABLE incidents (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    monitor_id  bigint      NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    -- The first failing check of the confirming streak.
    started_at  timestamptz NOT NULL,
    -- The first successful check after it; NULL while ongoing.
    ended_at    timestamptz,
    status_code integer,
    error       text,
    CHECK (ended_at IS NULL OR ended_at >= started_at)
);
CREATE INDEX incidents_monitor_started ON incidents (monitor_id, started_at DESC);
-- At most one open incident per monitor.
CREATE UNIQUE INDEX incidents_one_open ON incidents (monitor_id) WHERE ended_at IS NULL;

-- Transactional outbox: written in the same transaction as the state change and
-- its checks; the scheduler's relay publishes rows to Redis in id order.
CREATE TABLE outbox (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id     uuid        NOT NULL UNIQUE,
    monitor_id   bigint      NOT NULL,
    kind         text        NOT NULL CHECK (kind IN ('down', 'up')),
    payload      jsonb       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);
CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;

-- One row per (event, channel): the alerter's idempotency key and audit log.
CREATE TABLE deliveries (
    event_id   uuid        NOT NULL,
    channel    text        NOT NULL,
    status     text        NOT NULL CHECK (status IN ('sending', 'sent', 'dead')),
    attempts   integer     NOT NULL DEFAULT 0,
    last_error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    sent_at    timestamptz,
    PRIMARY KEY (event_id, channel)
);
