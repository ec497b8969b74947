-- 018: response time from successful checks only (issue 26, item 4). The rollups' latency
-- columns (latency_n, latency_sum, latency_max, latency_hist of checks_hourly and checks_daily)
-- counted every check that took a time, failed ones too: a site that never answered showed the
-- few milliseconds a refused connection takes as its response time, and an average below its
-- median. From this release the scheduler adds only successful checks to them
-- (monitor/rollups.py). The columns keep their names and types, so every reader reads old
-- and new rows alike; the rows written before are corrected here where they can be:
-- - an hour with both successes and failures whose raw checks are all still kept (retention:
--   MONITOR_RETENTION_DAYS, 90) is recomputed from them;
-- - an hour or a day without a successful check keeps no response time;
-- - a day is summed again from its hours.
-- An hour older than the raw checks that had both successes and failures keeps what it had:
-- the latencies of all its checks (docs/status-pages.md says so).

-- The mixed hours with every raw check kept (as many rows, as many up, as the rollup counted).
UPDATE checks_hourly h
SET latency_n = r.n, latency_sum = r.total, latency_max = r.top, latency_hist = r.hist
FROM (
    SELECT c.monitor_id, m.hour, count(*) AS checks, count(*) FILTER (WHERE c.ok) AS checks_up,
           count(c.latency_ms) FILTER (WHERE c.ok) AS n,
           coalesce(sum(c.latency_ms) FILTER (WHERE c.ok), 0) AS total,
           max(c.latency_ms) FILTER (WHERE c.ok) AS top,
           ARRAY[
               count(*) FILTER (WHERE c.ok AND c.latency_ms <= 5),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 5 AND c.latency_ms <= 10),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 10 AND c.latency_ms <= 25),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 25 AND c.latency_ms <= 50),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 50 AND c.latency_ms <= 75),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 75 AND c.latency_ms <= 100),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 100 AND c.latency_ms <= 150),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 150 AND c.latency_ms <= 200),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 200 AND c.latency_ms <= 300),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 300 AND c.latency_ms <= 500),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 500 AND c.latency_ms <= 750),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 750 AND c.latency_ms <= 1000),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 1000 AND c.latency_ms <= 1500),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 1500 AND c.latency_ms <= 2000),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 2000 AND c.latency_ms <= 3000),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 3000 AND c.latency_ms <= 5000),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 5000 AND c.latency_ms <= 10000),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 10000 AND c.latency_ms <= 30000),
               count(*) FILTER (WHERE c.ok AND c.latency_ms > 30000)]::integer[] AS hist
    FROM checks_hourly m
    JOIN checks c
      ON c.monitor_id = m.monitor_id AND c.time >= m.hour AND c.time < m.hour + interval '1 hour'
    WHERE m.checks_up > 0 AND m.checks_up < m.checks
    GROUP BY c.monitor_id, m.hour
) r
WHERE h.monitor_id = r.monitor_id AND h.hour = r.hour AND h.checks = r.checks AND h.checks_up = r.checks_up;

-- No success, no response time.
UPDATE checks_hourly
SET latency_n = 0, latency_sum = 0, latency_max = NULL, latency_hist = array_fill(0, ARRAY[19])
WHERE checks_up = 0 AND latency_n > 0;

-- The days that were not all up, from their hours (where the hours add up to the day).
UPDATE checks_daily d
SET latency_n = x.n, latency_sum = x.total, latency_max = x.top, latency_hist = x.hist
FROM (
    SELECT h.monitor_id, dd.day, sum(h.checks) AS checks, sum(h.latency_n) AS n,
           sum(h.latency_sum) AS total, max(h.latency_max) AS top,
           ARRAY[sum(h.latency_hist[1]), sum(h.latency_hist[2]), sum(h.latency_hist[3]),
                 sum(h.latency_hist[4]), sum(h.latency_hist[5]), sum(h.latency_hist[6]),
                 sum(h.latency_hist[7]), sum(h.latency_hist[8]), sum(h.latency_hist[9]),
                 sum(h.latency_hist[10]), sum(h.latency_hist[11]), sum(h.latency_hist[12]),
                 sum(h.latency_hist[13]), sum(h.latency_hist[14]), sum(h.latency_hist[15]),
                 sum(h.latency_hist[16]), sum(h.latency_hist[17]), sum(h.latency_hist[18]),
                 sum(h.latency_hist[19])]::integer[] AS hist
    FROM checks_daily dd
    JOIN checks_hourly h
      ON h.monitor_id = dd.monitor_id AND h.hour >= dd.day AND h.hour < dd.day + interval '1 day'
    WHERE dd.checks_up < dd.checks
    GROUP BY h.monitor_id, dd.day
) x
WHERE d.monitor_id = x.monitor_id AND d.day = x.day AND d.checks = x.checks;

UPDATE checks_daily
SET latency_n = 0, latency_sum = 0, latency_max = NULL, latency_hist = array_fill(0, ARRAY[19])
WHERE checks_up = 0 AND latency_n > 0;
