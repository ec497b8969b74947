-- 014: several schedulers share the monitors (issue 16). Each running scheduler holds a row
-- here: a lease it renews every few seconds (monitor/scheduler/membership.py). The monitors
-- are divided among the live rows by rendezvous hashing of the monitor id on the member's
-- name (monitor/scheduler/cluster.py). Every change of the set of rows (a join, a release,
-- an expired lease removed) bumps `scheduler_cluster.generation` in the same transaction;
-- a member records in `acked` the generation whose division it has applied (it stopped the
-- monitors that moved away and wrote their last results), and a member starts a monitor that
-- moved to it only once every live member has acked that generation, so no tick runs twice.

CREATE SEQUENCE scheduler_epochs;

CREATE TABLE scheduler_members (
    -- A new epoch for every registration: what fences a member's writes (writer.py).
    epoch         bigint      PRIMARY KEY DEFAULT nextval('scheduler_epochs'),
    name          text        NOT NULL UNIQUE,
    location      text        NOT NULL,
    host          text        NOT NULL,
    pid           integer     NOT NULL,
    joined_at     timestamptz NOT NULL DEFAULT now(),
    lease_until   timestamptz NOT NULL,
    acked         bigint      NOT NULL DEFAULT 0,
    monitors      integer     NOT NULL DEFAULT 0,
    checks_per_s  real        NOT NULL DEFAULT 0
);

CREATE TABLE scheduler_cluster (
    one        boolean PRIMARY KEY DEFAULT true CHECK (one),
    generation bigint  NOT NULL
);
INSERT INTO scheduler_cluster VALUES (true, 1);
