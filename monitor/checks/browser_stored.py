"""A browser monitor's fields as stored and as read back: the secret fill values apart, masked.

``monitors.settings`` holds the settings as validated (``url``, ``steps``, ``viewport``), each
secret ``fill`` without its ``value``; the values are in the monitor's ``monitor_secrets`` row
as ``{"fills": [[step_index, value], ...]}``, sealed as an http monitor's header values are
(``monitor/secrets.py``). Reads never open them: a secret fill reads back with ``MASK`` as its
value, and a PATCH that sends ``MASK`` back keeps the stored value of the fill of the same
selector (at the same place if there is one), so a client may move steps around.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from monitor.checks.base import SettingsError
from monitor.checks.browser_steps import SECRET_SELECTOR, BrowserSettings
from monitor.secrets import MASK

# The key of monitor_secrets.secrets that holds the fills' values.
FILLS = "fills"


def is_secret(step: Mapping[str, Any]) -> bool:
    """Whether a step (plain JSON) is a fill whose value is a secret."""
    if step.get("action") != "fill":
        return False
    return bool(step.get("secret")) or bool(SECRET_SELECTOR.search(str(step.get("selector", ""))))


def to_stored(settings: BrowserSettings) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(``monitors.settings``, ``monitor_secrets.secrets`` or None) of validated settings."""
    stored = settings.model_dump(include=set(BrowserSettings.model_fields), mode="json", exclude_none=True)
    fills: list[list[Any]] = []
    for index, step in enumerate(stored["steps"]):
        if is_secret(step):
            fills.append([index, step.pop("value")])
    return stored, ({FILLS: fills} if fills else None)


def whole(settings: Mapping[str, Any] | None, secrets: Mapping[str, Any] | None) -> dict[str, Any]:
    """The fields of a stored monitor as a body gives them, secret values included."""
    found = dict(settings or {})
    steps = [dict(step) for step in found.get("steps", ())]
    for index, value in (secrets or {}).get(FILLS, ()):
        if isinstance(index, int) and 0 <= index < len(steps):
            steps[index]["value"] = value
    if "steps" in found:
        found["steps"] = steps
    return found


def shown(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """The stored fields as the API shows them: every secret fill's value ``MASK``."""
    found = dict(settings or {})
    if "steps" in found:
        found["steps"] = [{**s, "value": MASK} if is_secret(s) else dict(s) for s in found["steps"]]
    return found


def unmask(given: dict[str, Any], stored: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` with each ``MASK`` sent as a secret fill's value replaced by the stored value of
    the fill with that selector (the one at the same index first); a ``SettingsError`` naming
    the step's value where there is none to keep."""
    steps = given.get("steps")
    if not isinstance(steps, list):
        return given
    kept = [
        (index, step)
        for index, step in enumerate(stored.get("steps") or ())
        if is_secret(step) and isinstance(step.get("value"), str)
    ]
    used: set[int] = set()
    for index, step in enumerate(steps):
        if not isinstance(step, dict) or not is_secret(step) or step.get("value") != MASK:
            continue
        same = [(i, s) for i, s in kept if s.get("selector") == step.get("selector") and i not in used]
        match = next(((i, s) for i, s in same if i == index), same[0] if same else None)
        if match is None:
            raise SettingsError(
                f"steps.{index}.value",
                f"{MASK} stands for the stored value of a secret fill of this selector, and there is "
                "none to keep; send the value itself",
            )
        used.add(match[0])
        steps[index] = {**step, "value": match[1]["value"]}
    return given
