-- 011: maintenance windows (issue 13, point 3). A window is one-off (starts_at to ends_at) or
-- recurring (an RFC 5545 RRULE or a 5-field cron expression read on the wall clock of
-- `timezone` from `dtstart` on, each occurrence lasting duration_seconds); it applies to the
-- monitors it names and to the account's monitors with any of its tags. The schedule's rules
-- (a valid RRULE, a zone that exists, a rule that ever occurs) are monitor/maintenance.py's.

CREATE TABLE maintenance_windows (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id       bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name             text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    kind             text        NOT NULL CHECK (kind IN ('once', 'rrule', 'cron')),
    -- once: the window, two instants.
    starts_at        timestamptz,
    ends_at          timestamptz,
    -- rrule, cron: the rule, its first wall-clock start (the RRULE's DTSTART; a time, not an
    -- instant: 02:30 on a night the clock skips it stays 02:30), the zone, the length.
    rrule            text,
    cron             text,
    dtstart          timestamp,
    timezone         text,
    duration_seconds integer     CHECK (duration_seconds BETWEEN 1 AND 31 * 86400),
    -- Monitors of the account it applies to, by id and by tag (any of them).
    monitor_ids      bigint[]    NOT NULL DEFAULT '{}',
    tags             text[]      NOT NULL DEFAULT '{}',
    -- Tell the monitors' channels when the window opens and closes.
    notify           boolean     NOT NULL DEFAULT false,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CHECK (CASE kind
        WHEN 'once' THEN starts_at IS NOT NULL AND ends_at > starts_at
                         AND rrule IS NULL AND cron IS NULL AND duration_seconds IS NULL
        WHEN 'rrule' THEN rrule IS NOT NULL AND cron IS NULL AND dtstart IS NOT NULL
                          AND timezone IS NOT NULL AND duration_seconds IS NOT NULL
        ELSE cron IS NOT NULL AND rrule IS NULL AND dtstart IS NOT NULL
             AND timezone IS NOT NULL AND duration_seconds IS NOT NULL
    END)
);
CREATE INDEX maintenance_windows_account ON maintenance_windows (account_id, id);
CREATE INDEX maintenance_windows_monitors ON maintenance_windows USING gin (monitor_ids);
CREATE INDEX maintenance_windows_tags ON maintenance_windows USING gin (tags);

-- Every change is announced, as monitors' are: the scheduler reloads its calendar.
CREATE FUNCTION maintenance_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('maintenance_changed', COALESCE(NEW.id, OLD.id)::text);
    RETURN NULL;
END $$;

CREATE TRIGGER maintenance_changed AFTER INSERT OR UPDATE OR DELETE ON maintenance_windows
    FOR EACH ROW EXECUTE FUNCTION maintenance_notify();

-- A deleted monitor leaves the windows that name it (ids are never reused, but a window
-- should not list what is gone).
CREATE FUNCTION maintenance_forget_monitor() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE maintenance_windows SET monitor_ids = array_remove(monitor_ids, OLD.id), updated_at = now()
    WHERE monitor_ids @> ARRAY[OLD.id];
    RETURN NULL;
END $$;

CREATE TRIGGER maintenance_forget_monitor AFTER DELETE ON monitors
    FOR EACH ROW EXECUTE FUNCTION maintenance_forget_monitor();
