"""SLA reports (issue 32): the pure parts beside the domain's operation (``domain/reports.py``).

``periods`` turns a month, a quarter or a from/to range into UTC instants in the account's time
zone; ``sla`` adds per-monitor figures (read by the same functions /uptime and /incidents answer
from) into a summary with MTTR, MTBF and the error budget; ``documents`` writes a report as
JSON, CSV, HTML and PDF. Nothing here reads the database or knows a request.
"""
