"""What each resource's input and answers look like, as pydantic models: the one place input is
validated (every face validates with these), and what the OpenAPI document and the dashboard's
forms are built from.

``common.py`` holds what every body shares (no unknown fields, no NUL, a name as alerts show
it, a tag); one module per resource holds its bodies and the shape of its answers. A monitor's
are three: ``monitors.py`` (its bodies, made for each check type), ``locations.py`` (where it is
checked from, and the quorum) and ``monitor_answers.py`` (how it reads back); then ``history.py``
(its checks, incidents, uptime and statistics) and ``summary.py`` (the account at a glance).
"""
