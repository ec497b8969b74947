-- 017: a destination's recent messages (issue 26, item 7). An alerter that finds the shared
-- pacing windows gone (Redis restarted without its data) reads what went to each destination
-- in its last window from here before sending there again (monitor/alerter/history.py).
-- Partial: only sent rows are read, and every write of a delivery keeps one entry at most.
CREATE INDEX deliveries_recent_sent ON deliveries (channel, sent_at) WHERE status = 'sent';
