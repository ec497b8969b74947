"""UptimeRobot's v3 API answers in v2's field names and numbers, so one mapping
(``uptimerobot.py``) serves both: a v3 monitor (``GET /v3/monitors``: camelCase, string enums)
and a v3 contact (``GET /v3/integrations`` and ``GET /v3/user/alert-contacts``: type and status
by name or by number). Names and tables as UptimeRobot's Terraform provider's client reads them
(internal/client/integration.go, alert_contact.go).
"""

from __future__ import annotations

from typing import Any

METHODS = {1: "HEAD", 2: "GET", 3: "POST", 4: "PUT", 5: "PATCH", 6: "DELETE", 7: "OPTIONS"}
# v3's names of the same contact types (its integrations and alert contacts; the UptimeRobot
# Terraform provider's client lists them), lower-cased -> v2's numbers; 24 Mattermost is v3 only.
V3_CONTACT_TYPES = {"emailtosms": 1, "email": 2, "webhook": 5, "pushbullet": 6, "zapier": 7,
                    "prosms": 8, "pushover": 9, "slack": 11, "mobileappios": 12,
                    "mobileappandroid": 13, "voice": 14, "splunk": 15, "pagerduty": 16,
                    "opsgenie": 17, "telegram": 18, "msteams": 20, "googlechat": 21, "discord": 23,
                    "mattermost": 24}  # fmt: skip
V3_CONTACT_STATUS = {"notactivated": 0, "paused": 1, "active": 2}


V3_READ = {
    "id", "friendlyName", "type", "url", "port", "interval", "timeout", "status", "httpMethodType",
    "keywordType", "keywordValue", "keywordCaseType", "customHttpHeaders", "assignedAlertContacts",
    "httpUsername", "httpPassword", "authType", "followRedirections",
    "createDateTime", "currentStateDuration", "lastIncidentId", "lastDayUptimes", "userId",
}  # fmt: skip


def is_v3_contact(item: dict[str, Any]) -> bool:
    """A v3 integration or alert contact, not a monitor: no URL or interval, a contact type."""
    kind = item.get("type")
    named = isinstance(kind, str) and kind.replace(" ", "").lower() in V3_CONTACT_TYPES
    return "interval" not in item and "url" not in item and (named or isinstance(kind, int))


def v3_contact(c: dict[str, Any]) -> dict[str, Any]:
    """A v3 contact in v2's field names and numbers, so one mapping serves both."""
    kind, status = c.get("type"), c.get("status")
    if isinstance(kind, str):
        kind = V3_CONTACT_TYPES[kind.replace(" ", "").lower()]
    if isinstance(status, str):
        status = V3_CONTACT_STATUS.get(status.replace(" ", "").lower(), 2)
    value = c.get("value") or c.get("webhookURL") or c.get("urlToNotify") or ""
    return {"id": c.get("id"), "friendly_name": c.get("friendlyName"), "type": kind,
            "value": value, "status": status}  # fmt: skip


def v2_shape(m: dict[str, Any]) -> dict[str, Any]:
    """A v3 monitor in v2's field names and enums, so one mapping serves both."""
    inv_methods = {v: k for k, v in METHODS.items()}
    kw = str(m.get("keywordType") or "")
    return {
        "id": m.get("id"),
        "friendly_name": m.get("friendlyName"),
        "type": {"HTTP": 1, "KEYWORD": 2, "PING": 3, "PORT": 4, "HEARTBEAT": 5}.get(
            str(m.get("type")), m.get("type")
        ),
        "url": m.get("url"),
        "port": m.get("port"),
        "sub_type": 99 if m.get("port") else None,
        "interval": m.get("interval"),
        "timeout": m.get("timeout"),
        "status": 0 if m.get("status") == "PAUSED" else 2,
        "http_method": inv_methods.get(str(m.get("httpMethodType") or "GET").upper()),
        "keyword_type": 2 if "NOT" in kw.upper() else 1,
        "keyword_value": m.get("keywordValue"),
        "keyword_case_type": m.get("keywordCaseType"),
        "custom_http_headers": m.get("customHttpHeaders"),
        "http_username": m.get("httpUsername"),
        "http_password": m.get("httpPassword"),
        "http_auth_type": 2 if str(m.get("authType") or "").upper() == "DIGEST" else 1,
        "follow_redirects": m.get("followRedirections"),
        "alert_contacts": [
            {
                "id": a.get("alertContactId"),
                "threshold": a.get("threshold"),
                "recurrence": a.get("recurrence"),
            }
            for a in m.get("assignedAlertContacts") or []
            if isinstance(a, dict)
        ],
    }
