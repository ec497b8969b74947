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
# The idle time (ms) given to handed-back entries: longer than any claim threshold.
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
