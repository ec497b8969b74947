-- 015: checks from several locations with a quorum (issue 16, item 3).
--
-- A monitor naming `locations` is checked in each of them, by the member its location's live
-- schedulers choose for it (monitor/scheduler/cluster.py). Each location confirms its own
-- streak (confirm_after / recover_after) into `location_state`; the member in the first live
-- location of the list (the monitor's *primary*) reads the others' and goes down when
-- `quorum` of the live locations are down, and up when `quorum` of them are up
-- (monitor/scheduler/quorum.py). NULL quorum: a majority of the locations. An empty list: one
-- check per tick by any member, as before.
ALTER TABLE monitors
    ADD COLUMN locations text[]  NOT NULL DEFAULT '{}',
    ADD COLUMN quorum    integer CHECK (quorum BETWEEN 1 AND 16);

-- Each location's confirmed view of a monitor, written by the member that checks it there.
CREATE TABLE location_state (
    monitor_id            bigint      NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    location              text        NOT NULL,
    status                text        NOT NULL CHECK (status IN ('unknown', 'up', 'degraded', 'down')),
    consecutive_failures  integer     NOT NULL DEFAULT 0,
    streak_started_at     timestamptz,
    consecutive_successes integer     NOT NULL DEFAULT 0,
    recovering_since      timestamptz,
    consecutive_slow      integer     NOT NULL DEFAULT 0,
    slow_since            timestamptz,
    -- When the status last changed: the first check of the streak that confirmed it.
    changed_at            timestamptz,
    -- Why it is down or degraded: the error of the check that confirmed it, or the reason.
    reason                text,
    last_check_at         timestamptz NOT NULL,
    last_ok               boolean     NOT NULL,
    PRIMARY KEY (monitor_id, location)
);

-- Each location's outages, as incidents are the monitor's: per-location uptime.
CREATE TABLE location_incidents (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    monitor_id  bigint      NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    location    text        NOT NULL,
    started_at  timestamptz NOT NULL,
    ended_at    timestamptz,
    error       text
);
CREATE UNIQUE INDEX location_incidents_one_open ON location_incidents (monitor_id, location) WHERE ended_at IS NULL;
CREATE INDEX location_incidents_monitor_started ON location_incidents (monitor_id, started_at DESC);
