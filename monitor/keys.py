"""Every Redis key, stream and group name, with its limits, in one place."""

from __future__ import annotations

# Confirmed state changes (down, up), published by the scheduler's outbox relay.
EVENTS_STREAM = "monitor:events"
# XADD ... MAXLEN ~ this: the stream is a hand-off, not an archive (the outbox
# table and the deliveries table are the record), so old entries may go.
EVENTS_MAXLEN = 100_000
# The alerter's consumer group on EVENTS_STREAM.
ALERTER_GROUP = "alerter"
# Events whose delivery failed for good or ran out of retries.
DEAD_STREAM = "monitor:events:dead"
DEAD_MAXLEN = 100_000
# A counter an alerter increments when it stops gracefully and hands its entries in hand back
# (their idle time set past any claim threshold): the others read it every second and
# reclaim at once, instead of waiting out MONITOR_ALERT_CLAIM_IDLE_SECONDS.
HANDBACK_KEY = "monitor:alerter:handback"
# The idle time (ms) given to handed-back entries (an alerter's, a worker's jobs at a stop):
# longer than any claim threshold.
HANDBACK_IDLE_MS = 365 * 24 * 3600 * 1000
# Field of a stream entry that holds the event as JSON.
EVENT_FIELD = "event"
# monitor:events:republished:<event id>: set (NX, expiring) by the alerter that publishes a
# lost event again (an older event of a monitor nowhere on the stream), so only one does.
REPUBLISHED_PREFIX = "monitor:events:republished:"
# monitor:alerter:sending:<event id>:<channel>: set (NX, expiring with the claim idle time,
# renewed with the claims) by the alerter that takes an event in hand for a destination. The
# relay publishes an event twice when its XADD went through and marking the row did not; should
# the two copies reach two alerters, the second waits for the first's delivery, not sending it.
SENDING_PREFIX = "monitor:alerter:sending:"
# The shared pacing of destinations (monitor/alerter/pacing.py): window and block keys, and the
# epoch key (when they began: a Redis that lost its data is told by it, and the windows seeded
# again from the deliveries table).
PACE_PREFIX = "monitor:pace:"

# Trial checks (``domain/trials.py``, ``scheduler/trials.py``): a monitor's body checked once
# by a scheduler, nothing saved. The api adds a request here; one scheduler of the group takes
# it (acknowledged as it is read: a request is done once or, should its scheduler die, not at
# all, and the api says no scheduler answered). A hand-off of a few seconds, so a short cap.
TRIALS_STREAM = "monitor:trials"
TRIALS_MAXLEN = 1_000
TRIALS_GROUP = "schedulers"
# Field of a trial's stream entry that holds the request as JSON.
TRIAL_FIELD = "trial"
# monitor:trials:reply:<random id>: the list the scheduler pushes the result on (the api BLPOPs
# it); it expires after TRIAL_REPLY_TTL_SECONDS, read or not.
TRIAL_REPLY_PREFIX = "monitor:trials:reply:"
TRIAL_REPLY_TTL_SECONDS = 60
# A trial runs with the monitor's timeout, at most this: the person waiting for it is at a form.
TRIAL_MAX_TIMEOUT_SECONDS = 30.0
# The api waits the check's timeout and this long (the scheduler's hard margin beyond a check's
# timeout, 5 s in scheduler/ticker.py, and 3 s for the queue and the reply), at most
# TRIAL_WAIT_MAX_SECONDS; a scheduler drops a request it reads after that deadline.
TRIAL_WAIT_MARGIN_SECONDS = 8.0
TRIAL_WAIT_MAX_SECONDS = 40.0
# The trials one scheduler runs at once (beside its monitors' checks).
TRIAL_CONCURRENCY = 4

# Heavy checks (``checks/heavy.py``): one stream per heavy kind, so that a slow kind's backlog
# never holds up another's, read by every ``monitor worker`` in one consumer group. The
# scheduler's Dispatcher (``scheduler/dispatch.py``) adds a job at the tick's due time: the
# monitor as the row form the trials use (``checks/jobs.py``, its secrets sealed), the tick's
# time, a deadline (start + the monitor's timeout) and an id. A worker acknowledges and deletes
# the job once its reply is sent, so a stream's length is what waits and its pending entries are
# what runs; a job's sealed secrets are not left behind.
WORK_STREAM_PREFIX = "monitor:work:"
# XADD ... MAXLEN ~ this, per kind: jobs are a few hundred at most (one per heavy monitor due
# in a minute); the cap is what bounds a queue nobody reads (no worker running for a day).
WORK_MAXLEN = 10_000
# The workers' consumer group on each kind's stream.
WORK_GROUP = "workers"
# Field of a job's stream entry that holds the job as JSON.
WORK_FIELD = "job"
# monitor:work:reply:<dispatcher id>: a scheduler's replies, one stream per scheduler process
# (its Dispatcher's random id, so a restarted scheduler never reads its predecessor's). Its one
# reader task resolves the waiting checks by job id and deletes what it read; a worker's XADD
# renews the key's expiry, so the stream of a scheduler gone for good disappears.
WORK_REPLY_PREFIX = "monitor:work:reply:"
WORK_REPLY_MAXLEN = 10_000
WORK_REPLY_TTL_SECONDS = 3600
# Field of a reply's stream entry that holds the reply (job id and result) as JSON.
WORK_REPLY_FIELD = "reply"
# The scheduler waits for a job's reply until its deadline and this long more (the worker cuts
# a run off at the deadline; its reply is one XADD): below the ticker's hard margin (5 s,
# scheduler/ticker.py), so the wait ends in a NOT_RUN result, never in the ticker's timeout.
WORK_REPLY_MARGIN_SECONDS = 3.0
# A worker keeps the jobs it runs claimed (XCLAIM ... JUSTID resets their idle time) every
# this many seconds; another worker takes over (XAUTOCLAIM) a job idle longer than the claim
# threshold (MONITOR_WORKER_CLAIM_IDLE_SECONDS, default WORK_CLAIM_IDLE_SECONDS): the job of a
# worker that died (SIGKILL, a lost machine). The threshold is three renewals at least, so a
# busy loop or a slow Redis round trip does not hand a live worker's job to another.
WORK_CLAIM_IDLE_SECONDS = 15.0
WORK_RENEW_FRACTION = 1 / 3
# A worker may run a job until its deadline and this long more: a job read within this of its
# start runs with the monitor's whole timeout (the queue's own delay is no part of it); the run
# is cut off (0.5 s after at most) and its reply sent before the scheduler's margin ends.
WORK_RUN_GRACE_SECONDS = 2.0
# A job taken over (or read late) is run only if at least this share of its timeout is left:
# a browser run cut short by our queue would read as the target's timeout (a false down), so
# with less left it is answered NOT_RUN at once.
WORK_MIN_LEFT_SHARE = 0.5
# The registry of workers (``monitor cluster status``): monitor:worker:<worker id> holds the
# worker's heartbeat as JSON (id, host, pid, kinds, running jobs, concurrency, started, seen),
# written every WORKER_HEARTBEAT_SECONDS and expiring after WORKER_TTL_SECONDS, so a dead
# worker drops out of the list on its own; monitor:workers is the set of their ids (an id whose
# key has expired is pruned by the reader).
WORKER_PREFIX = "monitor:worker:"
WORKERS_SET = "monitor:workers"
WORKER_HEARTBEAT_SECONDS = 5.0
WORKER_TTL_SECONDS = 20


def work_stream(kind: str) -> str:
    """The stream of a heavy kind's jobs."""
    return WORK_STREAM_PREFIX + kind


def work_reply(dispatcher: str) -> str:
    """The stream of one scheduler's replies."""
    return WORK_REPLY_PREFIX + dispatcher
