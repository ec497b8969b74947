-- 028: an account's time zone (issue 32): the calendar its SLA reports' months and quarters are
-- cut in (a month across a DST change is 743 or 745 hours long). An IANA name, checked by the
-- code that sets it (monitor.maintenance.zone); UTC until someone says otherwise.
--
-- Expand-only: a column with a constant default, no rewrite of the table.
ALTER TABLE accounts
    ADD COLUMN timezone text NOT NULL DEFAULT 'UTC' CHECK (length(timezone) BETWEEN 1 AND 64);
