-- 026: screenshots of browser checks (issue 30) and the baseline their visual change is
-- measured against. One row per screenshot kept, in one of three roles per monitor:
--   latest   the newest screenshot (one per monitor: each run replaces it in place);
--   onset    the first screenshot of a failing streak (a failed run, or a change judged down,
--            after a passing one): the one of the incident that streak opens, found by time
--            (incidents.started_at is the first failing check's time, this row's taken_at);
--            kept until MONITOR_SCREENSHOT_RETENTION_DAYS;
--   baseline the accepted one (one per monitor), with the masked rectangles (its pixels).
-- Size: a 1280x800 PNG of a page is ~20-500 KB (a plain local page: 19 KB); a monitor holds one
-- latest, one baseline and an onset per outage; rows past MONITOR_SCREENSHOT_MAX_BYTES are never
-- written (the check cap below is the hard stop, 8 MiB, above any setting's reach). bytea is
-- TOASTed out of line and compressed only where it helps (PNG is compressed already).
CREATE TABLE screenshots (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    monitor_id   bigint      NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    role         text        NOT NULL CHECK (role IN ('latest', 'onset', 'baseline')),
    -- When the check that took it started (its result's time).
    taken_at     timestamptz NOT NULL,
    -- The run it was taken of failed (the page was not as its steps expect).
    failed       boolean     NOT NULL DEFAULT false,
    -- The run counted down: failed, or changed beyond the threshold with severity down.
    down         boolean     NOT NULL DEFAULT false,
    width        integer     NOT NULL CHECK (width > 0),
    height       integer     NOT NULL CHECK (height > 0),
    png          bytea       NOT NULL CHECK (octet_length(png) <= 8388608),
    -- The comparison with the baseline when there was one (percent of compared pixels).
    diff_percent double precision CHECK (diff_percent BETWEEN 0 AND 100),
    baseline_id  bigint      REFERENCES screenshots (id) ON DELETE SET NULL,
    -- A baseline's masked rectangles: [{"x":..,"y":..,"width":..,"height":..}, ...].
    masks        jsonb       NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(masks) = 'array'),
    -- Who accepted a baseline (NULL: the first screenshot, taken as baseline by itself).
    accepted_at  timestamptz,
    accepted_by  bigint      REFERENCES users (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX screenshots_one_latest ON screenshots (monitor_id) WHERE role = 'latest';
CREATE UNIQUE INDEX screenshots_one_baseline ON screenshots (monitor_id) WHERE role = 'baseline';
CREATE INDEX screenshots_monitor_taken ON screenshots (monitor_id, taken_at DESC);
-- Retention sweeps onsets by age.
CREATE INDEX screenshots_onset_taken ON screenshots (taken_at) WHERE role = 'onset';
