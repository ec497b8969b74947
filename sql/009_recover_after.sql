-- 009: recover_after, the consecutive successes that confirm a down monitor's recovery, and
-- the recovering streak in the monitor's state (so a scheduler restart mid-streak changes
-- nothing a user sees).
ALTER TABLE monitors ADD COLUMN recover_after integer NOT NULL DEFAULT 1
    CHECK (recover_after BETWEEN 1 AND 10);
ALTER TABLE monitor_state ADD COLUMN consecutive_successes integer NOT NULL DEFAULT 0;
ALTER TABLE monitor_state ADD COLUMN recovering_since timestamptz;
