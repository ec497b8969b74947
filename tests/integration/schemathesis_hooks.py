"""Schemathesis hooks for ``test_schemathesis.py``, loaded by its CLI from ``SCHEMATHESIS_HOOKS``.

The fuzzer learns key ids from ``GET /api/v1/keys`` and revokes them, which would revoke
the key it authenticates with and turn the rest of the run into 401s. Revoking that one
key is sent as revoking a spare key of the same account instead: the request keeps its
meaning (an existing key of the caller's, answered 204) and the run keeps its key.
"""

from __future__ import annotations

import os
from typing import Any

import schemathesis

OWN_KEY_ID = os.environ["FUZZ_OWN_KEY_ID"]
SPARE_KEY_ID = os.environ["FUZZ_SPARE_KEY_ID"]


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    if case.method.upper() == "DELETE" and case.operation.path == "/api/v1/keys/{id}":
        if str(case.path_parameters.get("id")) == OWN_KEY_ID:
            case.path_parameters["id"] = int(SPARE_KEY_ID)
