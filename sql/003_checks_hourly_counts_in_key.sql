-- 003: the rollups' key carries the check counts, so uptime over a window (one monitor's 90
-- days, a page of 1,000 monitors' 30 days) is an index-only scan of the monitor's entries,
-- not one heap page per hour: rows of one monitor lie an hour's worth of writes apart.
ALTER TABLE checks_hourly DROP CONSTRAINT checks_hourly_pkey,
    ADD CONSTRAINT checks_hourly_pkey PRIMARY KEY (monitor_id, hour) INCLUDE (checks, checks_up);
