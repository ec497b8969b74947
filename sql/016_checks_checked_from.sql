-- 016: the location a check was made from (issue 16, item 3). `checks.location` is the
-- answer's Location header (a redirect's target) since 001; this is the scheduler's
-- MONITOR_LOCATION, kept for the checks of monitors that name locations and for every check
-- of a scheduler outside the "default" location. NULL: the default location.
ALTER TABLE checks ADD COLUMN checked_from text;
