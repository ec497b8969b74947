"""The OpenAPI description of the people of an account: its members and their roles, and the
audit log of who changed what."""

from __future__ import annotations

from monitor.api.openapi import CURSOR, LIMIT, _Builder, _id, _json, _links, _query
from monitor.domain.audit import FILTERS

MEMBER_EXAMPLE = {"email": "ada@example.com", "role": "editor"}
STRING = {"type": "string"}
ID = {"type": "integer", "format": "int64", "minimum": 1, "maximum": 2**63 - 1}
AUDIT_FILTERS = tuple(
    _query(name, ID if name in ("user_id", "key_id") else STRING, f"only the entries of this {name}")
    for name in FILTERS
)


def add_people(b: _Builder) -> None:
    r, user_id = b.refs, _id("member's user")
    # fmt: off
    b.add("get", "/api/v1/members", "listMembers", "List the account's members and roles (admin and up)",
          tag="members", ok={200: _json(r["MemberList"], "One page of members.")}, errors=(400, 403),
          parameters=(LIMIT, CURSOR))
    b.add("post", "/api/v1/members", "addMember",
          "Make a user a member with a role no higher than the caller's (admin and up)", tag="members",
          ok={201: {**_json(r["Member"], "The member, as added."),
                    "links": _links("changeMemberRole", "removeMember")}},
          errors=(403, 404, 409), body=("MemberAdd", MEMBER_EXAMPLE))
    b.add("patch", "/api/v1/members/{id}", "changeMemberRole",
          "Change a member's role (the last owner stays owner; their keys are lowered with them)",
          tag="members", ok={200: _json(r["Member"], "The member, as changed.")}, errors=(403, 404, 409),
          parameters=(user_id,), body=("MemberPatch", {"role": "viewer"}))
    b.add("delete", "/api/v1/members/{id}", "removeMember",
          "Remove a member (the last owner cannot leave; their keys are revoked)", tag="members",
          ok={204: {"description": "Removed."}}, errors=(403, 404, 409), parameters=(user_id,))
    b.add("get", "/api/v1/audit", "listAudit", "Who changed what, newest first (admin and up)", tag="audit",
          ok={200: _json(r["AuditList"], "One page of the audit log.")}, errors=(400, 403),
          parameters=(LIMIT, CURSOR, *AUDIT_FILTERS))
    # fmt: on
