"""The OpenAPI description of one incident: read it, and acknowledge it while it is open (its
reminders stop; the monitor's channels are told)."""

from __future__ import annotations

from monitor.api.openapi import _Builder, _id, _json
from monitor.api.params import MAX_ID

INCIDENT_ID = {"name": "incident_id", "in": "path", "required": True, "description": "the incident's id",
               "schema": {"type": "integer", "format": "int64", "minimum": 1, "maximum": MAX_ID}}  # fmt: skip
ACK_EXAMPLE = {"note": "on it: the database is failing over"}


def add_incidents(b: _Builder) -> None:
    r, monitor_id = b.refs, _id("monitor")
    base = "/api/v1/monitors/{id}/incidents/{incident_id}"
    # fmt: off
    b.add("get", base, "getIncident", "Read one of a monitor's incidents", tag="history",
          ok={200: _json(r["Incident"], "The incident.")}, errors=(404,),
          parameters=(monitor_id, INCIDENT_ID))
    b.add("post", f"{base}/acknowledge", "acknowledgeIncident",
          "Acknowledge an open incident (editor and up): its reminders stop, its channels get a short "
          "note, its recovery is still sent", tag="history",
          ok={200: _json(r["Incident"], "The incident, acknowledged.")}, errors=(404, 409),
          parameters=(monitor_id, INCIDENT_ID), body=("IncidentAcknowledge", ACK_EXAMPLE))
    # fmt: on
    # No body is no note.
    b.paths[f"{base}/acknowledge"]["post"]["requestBody"]["required"] = False
