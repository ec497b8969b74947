-- 024: an open incident can be acknowledged (issue 29): who did, when, and an optional short
-- note. Its reminders stop (the scheduler writes no "remind" for an acknowledged incident), and
-- the acknowledgement goes to the monitor's channels as an "acknowledged" event.
--
-- Expand-only: nullable columns, no rewrite of the table. The person and the key are kept by id
-- (set null if they go); acknowledged_by_name is the name shown, as it was said at the time, so
-- an incident still says who acknowledged it after that person left the account.
ALTER TABLE incidents
    ADD COLUMN acknowledged_at      timestamptz,
    ADD COLUMN acknowledged_by      bigint REFERENCES users (id) ON DELETE SET NULL,
    ADD COLUMN acknowledged_key_id  bigint REFERENCES api_keys (id) ON DELETE SET NULL,
    ADD COLUMN acknowledged_by_name text CHECK (length(acknowledged_by_name) <= 300),
    ADD COLUMN acknowledged_note    text CHECK (length(acknowledged_note) <= 280);
