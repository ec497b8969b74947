"""Files that cannot be applied: each problem the judging of objects finds (an unknown field, a
wrong type, a reference to a key the files do not define, a secret written inline, a value the
models refuse) names its file, line, column and field, every object's problem is named in one
run, and nothing is applied (checked in the database)."""

from __future__ import annotations

import asyncpg
import pytest
from support.ascode import read
from support.domain import Callers, callers_fixture, count, deps_fixture  # noqa: F401

from monitor.ascode import applying
from monitor.ascode.reading import Invalid, Problem, Secrets, read_texts
from monitor.domain.context import Deps

WEB = "monitors:\n  web:\n    url: http://127.0.0.1/\n"

# (id, text, (line, column, field, words of the message))
PROBLEMS: list[tuple[str, str, tuple[int, int, str, str]]] = [
    ("an unknown field", WEB + "    colour: red\n", (4, 13, "monitors.web.colour", "unknown field")),
    ("an unknown field of an assertion",
     WEB + "    assertions:\n      - {type: keyword, keyword: a, cas: true}\n",
     (5, 42, "monitors.web.assertions.0.cas", "unknown field")),
    ("an unknown field of a channel", "channels:\n  s: {kind: slack, config: {url: '${U}', colour: red}}\n",
     (2, 50, "channels.s.config.colour", "unknown field")),
    ("a wrong type", WEB + "    interval_seconds: often\n",
     (4, 23, "monitors.web.interval_seconds", "valid number")),
    ("a text for a number", "monitors:\n  db: {type: tcp, host: 127.0.0.1, port: '5432'}\n",
     (2, 42, "monitors.db.port", "valid integer")),
    ("a text for a list", WEB + "    tags: web\n", (4, 11, "monitors.web.tags", "valid list")),
    ("an unknown type", "monitors:\n  x: {type: carrier-pigeon}\n",
     (2, 13, "monitors.x.type", "unknown type")),
    ("an unknown kind", "channels:\n  x:\n    kind: pigeon\n", (3, 11, "channels.x.kind", "must be one of")),
    ("a missing channel", WEB + "    channels: [ops]\n",
     (4, 16, "monitors.web.channels.0", "no channels key 'ops' in the files")),
    ("a missing dependency", WEB + "    depends_on: [gateway]\n",
     (4, 18, "monitors.web.depends_on.0", "no monitors key 'gateway' in the files")),
    ("a dependency on itself", WEB + "    depends_on: [web]\n",
     (4, 18, "monitors.web.depends_on.0", "an object cannot refer to itself")),
    ("a window's missing monitor",
     "maintenance:\n  w:\n    recurring: {cron: '0 1 * * *', duration_minutes: 5}\n    monitors: [nothere]\n",
     (4, 16, "maintenance.w.monitors.0", "no monitors key 'nothere' in the files")),
    ("a group's missing monitor", "status_pages:\n  p:\n    slug: p\n    title: P\n"
                                  "    groups: [{name: a, monitors: [zz]}]\n",
     (5, 35, "status_pages.p.groups.0.monitors.0", "no monitors key 'zz' in the files")),
    ("keys that are not a list", WEB + "    channels: ops\n",
     (4, 15, "monitors.web.channels", "must be a list of keys of channels")),
    ("an inline secret header", WEB + "    headers: {Authorization: Bearer abc}\n",
     (4, 30, "monitors.web.headers.Authorization", "a secret: write it as ${VARIABLE}")),
    ("an inline password", WEB + "    auth: {type: basic, username: u, password: pw}\n",
     (4, 48, "monitors.web.auth.password", "a secret: write it as ${VARIABLE}")),
    ("an inline channel URL", "channels:\n  s:\n    kind: slack\n    config: {url: 'https://hooks.slack.com/x'}\n",
     (4, 19, "channels.s.config.url", "a secret: write it as ${VARIABLE}")),
    ("a value out of range", WEB + "    interval_seconds: 0.5\n",
     (4, 23, "monitors.web.interval_seconds", "must be between 1 and 86400 seconds")),
    ("a window that ends first",
     "maintenance:\n  w:\n    once: {from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z'}\n"
     "    tags: [x]\n",
     (3, 46, "maintenance.w.once.to", "must be after from")),
    ("a target the policy denies", "monitors:\n  lan: {type: tcp, host: 10.1.2.3, port: 22}\n",
     (2, 26, "monitors.lan.host", "target blocked")),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), [p[1:] for p in PROBLEMS], ids=[p[0] for p in PROBLEMS])
async def test_a_problem_names_its_file_line_column_and_field(
    deps: Deps, callers: Callers, db: asyncpg.Connection, text: str, expected: tuple[int, int, str, str]
) -> None:
    line, column, field, words = expected
    with pytest.raises(Invalid) as caught:
        await applying.apply(deps, callers.owner, read(text, {"U": "https://hooks.slack.com/u"}),
                             prune=False, dry_run=False)  # fmt: skip
    found = [p for p in caught.value.problems if p.path == field]
    assert found, caught.value.problems
    problem: Problem = found[0]
    assert (problem.place and problem.place.file, problem.place and problem.place.line) == ("case.yaml", line)
    assert problem.place is not None and problem.place.column == column, problem
    assert words in problem.message, problem
    assert await count(db, "monitors") + await count(db, "channels") == 0


async def test_every_object_s_problem_in_every_file_is_named_and_nothing_applied(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    texts = [
        ("channels.yaml", "channels:\n  ops: {kind: slack, config: {url: '${SLACK_URL}'}}\n"),
        ("monitors.yaml", WEB + "    channels: [ops, pager]\n    colour: red\n"
                          "  db: {type: tcp, host: 127.0.0.1, port: 99999}\n"),
        ("pages.yaml",
         "status_pages:\n  p: {slug: p, title: P, groups: [{name: a, monitors: [web, gone]}]}\n"),
    ]  # fmt: skip
    with pytest.raises(Invalid) as caught:
        doc = read_texts(texts, Secrets({}))
        await applying.apply(deps, callers.owner, doc, prune=False, dry_run=False)
    found = sorted(f"{p.place}: {p.path}" for p in caught.value.problems)
    assert found == [
        "channels.yaml:2:36: channels.ops.config.url",  # ${SLACK_URL} is not set
        "monitors.yaml:4:21: monitors.web.channels.1",  # no channel 'pager'
        "monitors.yaml:5:13: monitors.web.colour",
        "monitors.yaml:6:42: monitors.db.port",
        "pages.yaml:2:61: status_pages.p.groups.0.monitors.1",
    ], caught.value.problems
    for table in ("channels", "monitors", "status_pages", "config_objects"):
        assert await count(db, table) == 0


async def test_a_slug_another_account_holds_fails_the_apply_at_its_place_and_rolls_it_back(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    # Slugs (and domains) are unique over the installation: found only when the page is written,
    # after the plan's monitors were, which the failure takes back.
    page = "status_pages:\n  public:\n    slug: acme\n    title: A\n"
    page += "    groups: [{name: W, monitors: [web]}]\n"
    await applying.apply(deps, callers.other, read(WEB + page, {}), prune=False, dry_run=False)
    before = await count(db, "monitors")
    with pytest.raises(Invalid) as caught:
        await applying.apply(deps, callers.owner, read(WEB + page, {}), prune=False, dry_run=False)
    (problem,) = caught.value.problems
    assert (str(problem.place), problem.path) == ("case.yaml:6:11", "status_pages.public.slug"), problem
    assert problem.message == "another status page has this slug"
    assert await count(db, "monitors") == before
    managed = "SELECT count(*) FROM config_objects WHERE account_id = $1"
    assert await db.fetchval(managed, callers.owner.account_id) == 0
