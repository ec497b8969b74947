-- 007: alert channels of every kind the alerter's registry knows, and each event's place in
-- its monitor's sequence, so alerters keep a monitor's order across incidents and processes.

-- Kinds are validated by the API against the registry (monitor/alerter/channels); the table
-- only keeps the name well-formed, so a new kind needs no migration.
ALTER TABLE channels DROP CONSTRAINT channels_kind_check;
ALTER TABLE channels ADD CONSTRAINT channels_kind_check CHECK (kind ~ '^[a-z][a-z0-9_]{0,31}$');

-- seq: 1, 2, 3... per monitor. destinations: where the event goes (the registry's keys, e.g.
-- "telegram:-100123", "slack:7"); an alerter holds a monitor's newer event for a destination
-- while an older one for it has no final delivery.
ALTER TABLE outbox ADD COLUMN seq bigint;
ALTER TABLE outbox ADD COLUMN destinations text[] NOT NULL DEFAULT '{}';
UPDATE outbox o SET seq = n.seq
FROM (SELECT id, row_number() OVER (PARTITION BY monitor_id ORDER BY id) AS seq
      FROM outbox WHERE monitor_id IS NOT NULL) n
WHERE o.id = n.id;
CREATE UNIQUE INDEX outbox_monitor_seq ON outbox (monitor_id, seq) WHERE monitor_id IS NOT NULL;
