"""A check type's own minimum interval (``Check.min_interval_seconds``), enforced where every
monitor's interval is validated (``domain/schemas/monitors.py``): a 422 naming interval_seconds
and the minimum, on create and on a PATCH, beyond the deployment's MONITOR_MIN_INTERVAL_SECONDS."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from monitor.checks.heavy import HeavyCheck
from monitor.domain.errors import from_validation
from monitor.domain.schemas import monitors as schemas


class PageSettings(BaseModel):
    page: str = "https://site.example/"


class Page(HeavyCheck):
    kind = "page"
    Settings = PageSettings

    def target(self, settings: Any) -> str:
        return str(settings.page)


AT_LEAST = "interval_seconds: must be at least 300 seconds for a page monitor"
CREATE = schemas._floored(schemas._typed_create(Page()), Page())
PATCH = schemas._floored(schemas._typed_patch(Page()), Page())


@pytest.mark.parametrize(
    ("model", "body", "deployment", "error"),
    [
        pytest.param(CREATE, {"interval_seconds": 300}, 1, None, id="create-at-the-minimum"),
        pytest.param(
            CREATE,
            {"interval_seconds": 299},
            1,
            AT_LEAST,
            id="create-below-the-types-minimum",
        ),
        pytest.param(
            CREATE,
            {"interval_seconds": 400},
            600,
            "interval_seconds: must be between 600 and 86400 seconds",
            id="the-deployments-minimum-when-higher",
        ),
        pytest.param(PATCH, {"interval_seconds": 900}, 30, None, id="patch-above"),
        pytest.param(
            PATCH,
            {"interval_seconds": 60},
            30,
            AT_LEAST,
            id="patch-below-the-types-minimum",
        ),
        pytest.param(PATCH, {"name": "x"}, 30, None, id="patch-without-an-interval"),
    ],
)
def test_a_types_minimum_interval(
    model: type[BaseModel], body: dict[str, Any], deployment: float, error: str | None
) -> None:
    full = {"type": "page", "name": "p", "timeout_seconds": 60, **body} if model is CREATE else body
    context = {"min_interval_seconds": deployment}
    if error is None:
        model.model_validate(full, context=context)
        return
    with pytest.raises(ValidationError) as caught:
        model.model_validate(full, context=context)
    problem = from_validation(caught.value, model)
    assert (problem.status, problem.field, problem.message) == (422, "interval_seconds", error)


def test_types_without_a_minimum_keep_the_deployments() -> None:
    body = {"name": "h", "url": "https://site.example/", "interval_seconds": 1}
    assert schemas.validate_create(body, {"min_interval_seconds": 1}).interval_seconds == 1  # type: ignore[attr-defined]
