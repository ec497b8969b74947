-- 010: the alert rules of issue 13 beyond recovery confirmation: reminders, degraded state,
-- dependencies, flapping; and, in the monitor's state, everything they count, so a scheduler
-- restart or a failover in the middle of any of them changes nothing a user sees.

ALTER TABLE monitors ADD COLUMN remind_every_minutes integer
    CHECK (remind_every_minutes BETWEEN 1 AND 10080);
ALTER TABLE monitors ADD COLUMN remind_max integer CHECK (remind_max BETWEEN 1 AND 1000);
ALTER TABLE monitors ADD COLUMN degraded_above_ms integer
    CHECK (degraded_above_ms BETWEEN 1 AND 600000);
ALTER TABLE monitors ADD COLUMN cert_warn_days integer NOT NULL DEFAULT 14
    CHECK (cert_warn_days BETWEEN 0 AND 365);
ALTER TABLE monitors ADD COLUMN depends_on bigint[] NOT NULL DEFAULT '{}';
ALTER TABLE monitors ADD COLUMN flap_threshold integer CHECK (flap_threshold BETWEEN 2 AND 100);
ALTER TABLE monitors ADD COLUMN flap_window_minutes integer NOT NULL DEFAULT 30
    CHECK (flap_window_minutes BETWEEN 1 AND 1440);

ALTER TABLE monitor_state DROP CONSTRAINT monitor_state_status_check;
ALTER TABLE monitor_state ADD CONSTRAINT monitor_state_status_check
    CHECK (status IN ('unknown', 'up', 'degraded', 'down'));
-- The degraded streak (consecutive slow successes) and when it began.
ALTER TABLE monitor_state ADD COLUMN consecutive_slow integer NOT NULL DEFAULT 0;
ALTER TABLE monitor_state ADD COLUMN slow_since timestamptz;
-- What the monitor's channels were last told, when (the last down or reminder), and how many
-- reminders since; why a down is held back (a window, a dependency), if it is.
ALTER TABLE monitor_state ADD COLUMN told text NOT NULL DEFAULT 'up'
    CHECK (told IN ('up', 'degraded', 'down'));
ALTER TABLE monitor_state ADD COLUMN told_at timestamptz;
ALTER TABLE monitor_state ADD COLUMN reminders integer NOT NULL DEFAULT 0;
ALTER TABLE monitor_state ADD COLUMN held text;
-- Changes between down and not down within the flap window, and whether it is flapping.
ALTER TABLE monitor_state ADD COLUMN flips timestamptz[] NOT NULL DEFAULT '{}';
ALTER TABLE monitor_state ADD COLUMN flapping boolean NOT NULL DEFAULT false;
-- The maintenance window of the last check: {"id", "name", "until", "notify"}.
ALTER TABLE monitor_state ADD COLUMN maintenance jsonb;
-- The certificate's expiry as last seen in a TLS handshake.
ALTER TABLE monitor_state ADD COLUMN cert_not_after timestamptz;
-- Monitors down before this migration were told so.
UPDATE monitor_state SET told = 'down', told_at = changed_at WHERE status = 'down';

-- Degraded spells, like incidents: the first slow check of the confirming streak to the first
-- good one (or the outage that ended it).
CREATE TABLE degradations (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    monitor_id  bigint      NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    started_at  timestamptz NOT NULL,
    ended_at    timestamptz,
    reason      text,
    CHECK (ended_at IS NULL OR ended_at >= started_at)
);
CREATE INDEX degradations_monitor_started ON degradations (monitor_id, started_at DESC);
CREATE UNIQUE INDEX degradations_one_open ON degradations (monitor_id) WHERE ended_at IS NULL;

-- Alerts of any kind the alerter renders; the operator's alerts (the checker cut off) belong
-- to no monitor.
ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check CHECK (kind ~ '^[a-z][a-z_]{0,31}$');
ALTER TABLE outbox ALTER COLUMN monitor_id DROP NOT NULL;
