-- 002: accounts and API keys, alert channels, tags, pause history, hourly rollups.

CREATE TABLE accounts (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text        NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 100),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Keys are random; only a SHA-256 of the whole key is kept (a high-entropy secret needs
-- no slow hash), with its first characters as a prefix the owner can recognise.
CREATE TABLE api_keys (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id   bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         text        NOT NULL DEFAULT '',
    prefix       text        NOT NULL,
    hash         bytea       NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_account ON api_keys (account_id, id);

-- Monitors created before accounts existed belong to an account named "default".
INSERT INTO accounts (name) SELECT 'default' WHERE EXISTS (SELECT 1 FROM monitors);
ALTER TABLE monitors ADD COLUMN account_id bigint REFERENCES accounts (id) ON DELETE CASCADE;
UPDATE monitors SET account_id = (SELECT id FROM accounts WHERE name = 'default');
ALTER TABLE monitors ALTER COLUMN account_id SET NOT NULL;
ALTER TABLE monitors ADD COLUMN tags text[] NOT NULL DEFAULT '{}';
CREATE INDEX monitors_account ON monitors (account_id, id);
CREATE INDEX monitors_tags ON monitors USING gin (tags);

CREATE TABLE channels (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind       text        NOT NULL CHECK (kind IN ('telegram')),
    name       text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    -- Kind-specific settings, validated by the API's schema of that kind ({"chat_id": ...}).
    config     jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX channels_account ON channels (account_id, id);

CREATE TABLE monitor_channels (
    monitor_id bigint NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    channel_id bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    PRIMARY KEY (monitor_id, channel_id)
);
CREATE INDEX monitor_channels_channel ON monitor_channels (channel_id);

-- The first issue's telegram_chat_id becomes a channel of the monitor's account.
INSERT INTO channels (account_id, kind, name, config)
SELECT DISTINCT account_id, 'telegram', 'Telegram ' || telegram_chat_id, jsonb_build_object('chat_id', telegram_chat_id)
FROM monitors WHERE telegram_chat_id IS NOT NULL;
INSERT INTO monitor_channels (monitor_id, channel_id)
SELECT m.id, c.id FROM monitors m
JOIN channels c ON c.account_id = m.account_id AND c.kind = 'telegram' AND c.config ->> 'chat_id' = m.telegram_chat_id;
ALTER TABLE monitors DROP COLUMN telegram_chat_id;

-- Paused time is not counted in uptime: one row per pause, open while paused.
CREATE TABLE monitor_pauses (
    monitor_id bigint      NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    started_at timestamptz NOT NULL,
    ended_at   timestamptz,
    PRIMARY KEY (monitor_id, started_at)
);
INSERT INTO monitor_pauses (monitor_id, started_at) SELECT id, updated_at FROM monitors WHERE paused;

-- Hourly rollups of checks, kept by the scheduler in the same transaction as the rows
-- (so they work on TimescaleDB's Apache edition and outlive raw-check retention).
-- latency_hist counts checks per fixed latency bucket (monitor/rollups.py BUCKETS_MS),
-- so percentiles combine across hours by adding the arrays.
CREATE TABLE checks_hourly (
    monitor_id   bigint      NOT NULL,
    hour         timestamptz NOT NULL,
    checks       integer     NOT NULL,
    checks_up    integer     NOT NULL,
    latency_n    integer     NOT NULL,
    latency_sum  double precision NOT NULL,
    latency_max  double precision,
    latency_hist integer[]   NOT NULL,
    PRIMARY KEY (monitor_id, hour)
);

ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check CHECK (kind IN ('down', 'up', 'test'));
-- A test message of a channel is not about a monitor.
ALTER TABLE outbox ALTER COLUMN monitor_id DROP NOT NULL;
