"""``monitor apply`` and ``POST /api/v1/apply``: judge the files whole, plan, and apply the plan
in one transaction.

1. Every object is judged before anything is written, by the domain's own ``prepare`` (the
   API's models, the vetting of targets), references are resolved against the files' keys, and
   a secret written inline is refused: every problem is reported, each at its file:line:column.
2. The account's row is locked and the plan made against what is stored now (``state.py``,
   ``planning.py``), so two applies at once follow one another.
3. The plan runs through the domain's operations (create, update, delete: the same rules,
   audit and NOTIFYs as the API's), on one connection in one transaction
   (``db.OneConnection``): channels first, then monitors (their dependencies once all exist),
   windows and pages; deletions last, pages first. Any error rolls all of it back and is
   reported at the object's place. New monitors are made together (``monitors.create_many``)
   and their dependencies set together (``monitor_bulk.set_dependencies``), by the rules of
   one create and one update each, and what was applied is recorded in one statement: one
   operation per monitor, some twenty round trips each, made 10,000 monitors take over a
   minute (``bench/apply.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import Any

from monitor import db
from monitor.ascode import objects, state
from monitor.ascode.objects import Ids, Shaped
from monitor.ascode.planning import Change, Plan, make_plan, masked
from monitor.ascode.reading import SECTIONS, Document, Invalid, Path_, Problem, Secrets, read_texts
from monitor.domain import channels, maintenance, monitor_bulk, monitors, status_pages
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError
from monitor.domain.monitor_inserts import ItemError
from monitor.domain.roles import allows, authorize

RESOURCE = "config"
_DESIRED: dict[str, Callable[[Deps, str, dict[str, Any]], Awaitable[Shaped]]] = {
    "channels": objects.channel_desired,
    "monitors": objects.monitor_desired,
    "maintenance": objects.window_desired,
    "status_pages": objects.page_desired,
}
# Which file fields name objects of which kind.
_REFERS = {
    ("monitors", "channels"): "channels",
    ("monitors", "depends_on"): "monitors",
    ("maintenance", "monitors"): "monitors",
}


async def judge(deps: Deps, doc: Document) -> dict[str, dict[str, Shaped]]:
    """Every object of ``doc`` in canonical form, or ``Invalid`` with every problem found."""
    problems: list[Problem] = list(doc.problems)
    # An object with a reference that could not be read is not judged further: its value is not known.
    unread = {tuple(p.path.split(".")[:2]) for p in doc.problems}
    desired: dict[str, dict[str, Shaped]] = {s: {} for s in SECTIONS}
    for section in SECTIONS:
        for key, obj in doc.sections[section].items():
            path: Path_ = (section, key)
            if not isinstance(obj, dict):
                problems.append(doc.problem(path, "must be a mapping of the object's fields"))
                continue
            problems.extend(_references(doc, section, key, obj))
            if (section, key) in unread:
                continue
            try:
                shaped = await _DESIRED[section](deps, key, obj)
            except DomainError as exc:
                problems.append(_domain_problem(doc, path, exc))
                continue
            problems.extend(_inline_secrets(doc, path, obj, shaped.secrets))
            desired[section][key] = shaped
    if problems:
        raise Invalid(problems)
    return desired


def _references(doc: Document, section: str, key: str, obj: dict[str, Any]) -> list[Problem]:
    found = []
    named: list[tuple[Path_, Any, str]] = [
        ((section, key, f), obj.get(f), kind) for (s, f), kind in _REFERS.items() if s == section
    ]
    if section == "status_pages" and isinstance(obj.get("groups"), list):
        for i, group in enumerate(obj["groups"]):
            if isinstance(group, dict):
                named.append(((section, key, "groups", i, "monitors"), group.get("monitors"), "monitors"))
    for path, keys, kind in named:
        if keys is None:
            continue
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            found.append(doc.problem(path, f"must be a list of keys of {kind}"))
            continue
        for i, ref in enumerate(keys):
            if ref not in doc.sections[kind]:
                found.append(doc.problem((*path, i), f"no {kind} key {ref!r} in the files"))
            elif kind == section and ref == key:
                found.append(doc.problem((*path, i), "an object cannot refer to itself"))
    return found


def _inline_secrets(doc: Document, path: Path_, value: Any, secrets: frozenset[str]) -> list[Problem]:
    """A problem for each secret the file wrote out instead of as a reference."""
    if not secrets or path in doc.references:
        return []
    if isinstance(value, str):
        if value in secrets:
            return [doc.problem(path, "a secret: write it as ${VARIABLE} or file:/path, not inline")]
        return []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return [p for k, v in items for p in _inline_secrets(doc, (*path, k), v, secrets)]


def _domain_problem(doc: Document, path: Path_, exc: DomainError) -> Problem:
    field = tuple(exc.field.split(".")) if exc.field else ()
    message = exc.message
    if exc.field and message.startswith(f"{exc.field}: "):
        message = message[len(exc.field) + 2 :]
    if exc.status == 400 and exc.code == "target_blocked":
        message = f"target blocked: {message}"
    return doc.problem((*path, *_file_field(field)), message)


def _file_field(field: tuple[str, ...]) -> tuple[str | int, ...]:
    """The file's name of an API field (``channel_ids`` is ``channels``), list indexes as ints."""
    renamed = {"channel_ids": "channels", "monitor_ids": "monitors"}
    return tuple(int(p) if p.isdigit() else renamed.get(p, p) for p in field)


# -- plan and apply -------------------------------------------------------------------------------


async def apply(
    deps: Deps, actor: Actor, doc: Document, *, prune: bool, dry_run: bool, adopt: bool = False
) -> Plan:
    """The plan of ``doc`` for the actor's account; applied unless ``dry_run``. ``Invalid``
    (nothing applied) for files that cannot be, or a plan the account refuses. ``adopt``: a
    key of the files that no apply made but an export gives an object made by hand takes that
    object under management (``planning.make_plan``) instead of making another.

    A dry run only reads, so a viewer may make one (what the files would change); for a caller
    who may apply, it also reports each change their role may not make (an editor's plan that
    changes a channel, which needs admin), as the apply would."""
    authorize(actor, RESOURCE, "read" if dry_run else "write")
    desired = await judge(deps, doc)
    places = {(str(path[0]), str(path[1])): p for path, p in doc.places.items() if len(path) == 2}
    async with deps.pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE", actor.account_id)
        account = await state.read(conn, deps, actor.account_id, key_all=adopt)
        adoptable = account.unmanaged() if adopt else None
        plan = make_plan(desired, account.managed, prune=prune, places=places, adoptable=adoptable)
        if allows(actor.role, RESOURCE, "write"):
            _authorized(actor, plan, doc)
        if dry_run:
            return plan
        await _forget(conn, actor.account_id, plan.forgotten)
        if plan.empty:
            return plan
        run = _Run(replace(deps, pool=db.OneConnection(conn)), actor, doc, desired, account.ids)
        await run.all(plan)
    plan.applied = True
    return plan


async def apply_texts(
    deps: Deps,
    actor: Actor,
    texts: Iterable[tuple[str, str]],
    secrets: Secrets,
    *,
    prune: bool,
    dry_run: bool,
    adopt: bool = False,
) -> Plan:
    """``apply`` of files given as (name, text), as ``POST /api/v1/apply`` sends them: the
    caller's role is asked first, before the files are read, and the YAML is read in a thread
    (a second or so for the largest), so a process serving others goes on meanwhile."""
    authorize(actor, RESOURCE, "read" if dry_run else "write")
    doc = await asyncio.to_thread(read_texts, list(texts), secrets)
    return await apply(deps, actor, doc, prune=prune, dry_run=dry_run, adopt=adopt)


async def _forget(conn: Any, account_id: int, forgotten: list[tuple[str, str]]) -> None:
    """Drop the records of objects deleted by hand that the files no longer name: kept, they
    would stay in ``config_objects`` for ever."""
    if forgotten:
        await conn.execute(
            """DELETE FROM config_objects c USING unnest($2::text[], $3::text[]) AS f(resource, key)
               WHERE c.account_id = $1 AND c.resource = f.resource AND c.key = f.key""",
            account_id,
            [s for s, _ in forgotten],
            [k for _, k in forgotten],
        )


def _authorized(actor: Actor, plan: Plan, doc: Document) -> None:
    problems = []
    for change in plan.changes:
        try:
            authorize(actor, change.section, "write")
        except DomainError as exc:
            problems.append(doc.problem((change.section, change.key), f"{change.action}: {exc.message}"))
    if problems:
        raise Invalid(problems)


_KINDS = {
    "channels": channels,
    "monitors": monitors,
    "maintenance": maintenance,
    "status_pages": status_pages,
}


class _Run:
    """One plan's operations, in order, on one transaction."""

    def __init__(
        self, deps: Deps, actor: Actor, doc: Document, desired: dict[str, dict[str, Shaped]], ids: Ids
    ) -> None:
        self.deps, self.actor, self.doc, self.desired, self.ids = deps, actor, doc, desired, ids
        self.base = deps.settings.public_url or ""
        self.records: dict[tuple[str, str], int] = {}  # what _record writes, once, at the end

    async def all(self, plan: Plan) -> None:
        by_section = {s: [c for c in plan.changes if c.section == s] for s in SECTIONS}
        deletes = [c for s in reversed(SECTIONS) for c in by_section[s] if c.action in ("delete", "replace")]
        change: Change | None = None
        try:
            # Replaced objects go first (a page's slug or a channel's name is free again).
            for change in deletes:
                await self._delete(change)
            for section in SECTIONS:
                made = [c for c in by_section[section] if c.action in ("create", "replace")]
                if section == "monitors":
                    change = None
                    await self._create_monitors(made)
                    continue
                for change in made:
                    await self._create(change)
            for section in SECTIONS:
                linked: list[Change] = []  # new monitors, their dependencies set together
                for change in by_section[section]:
                    if change.action in ("update", "adopt"):
                        await self._dependencies(linked)  # in plan order, before this update
                        linked = []
                        if change.fields:
                            await self._update(change)
                        else:  # adopted as it is: only recorded
                            assert change.object_id is not None
                            self._record(change.section, change.key, change.object_id)
                    elif section == "monitors" and change.action in ("create", "replace"):
                        linked.append(change)
                change = None
                await self._dependencies(linked)
            await self._write_records()
        except DomainError as exc:
            path = (change.section, change.key) if change is not None else ("monitors",)
            raise Invalid([_domain_problem(self.doc, path, exc)]) from None

    def _body(self, section: str, key: str) -> dict[str, Any]:
        """The create body of a desired object: references as ids (a monitor's dependencies
        are set once every monitor exists)."""
        canonical = dict(self.desired[section][key].canonical)
        if section == "monitors":
            canonical["channel_ids"] = self.ids.ids("channels", canonical.pop("channels"))
            canonical["depends_on"] = []
        elif section == "maintenance":
            canonical["monitor_ids"] = self.ids.ids("monitors", canonical.pop("monitors"))
        elif section == "status_pages":
            canonical["groups"] = [
                {"name": g["name"], "monitor_ids": self.ids.ids("monitors", g["monitors"]), "tags": g["tags"]}
                for g in canonical["groups"]
            ]
        return canonical

    async def _create(self, change: Change) -> None:
        body = self._body(change.section, change.key)
        if change.section == "status_pages":
            made = await status_pages.create(self.deps, self.actor, body, base=self.base)
        else:
            made = await _KINDS[change.section].create(self.deps, self.actor, body)
        self.ids.add(change.section, change.key, made["id"])
        self._record(change.section, change.key, made["id"])

    async def _create_monitors(self, changes: list[Change]) -> None:
        """The new monitors at once (``monitors.create_many``: the rules of one create, its
        queries batched); their dependencies are set once all exist (``_dependencies``)."""
        bodies = [self._body("monitors", c.key) for c in changes]
        try:
            made = await monitors.create_many(self.deps, self.actor, bodies)
        except ItemError as exc:
            place = ("monitors", changes[exc.index].key)
            raise Invalid([_domain_problem(self.doc, place, exc.error)]) from None
        for change, monitor_id in zip(changes, made, strict=True):
            self.ids.add("monitors", change.key, monitor_id)
            self._record("monitors", change.key, monitor_id)

    async def _dependencies(self, changes: list[Change]) -> None:
        """The dependencies of new monitors, set at once (``monitor_bulk.set_dependencies``: the
        rules of an update of ``depends_on``, one after another, in a few queries)."""
        wanted = [(c, self.desired["monitors"][c.key].canonical["depends_on"]) for c in changes]
        wanted = [(c, keys) for c, keys in wanted if keys]
        items = [(self.ids.by_key["monitors"][c.key], self.ids.ids("monitors", keys)) for c, keys in wanted]
        if not items:
            return
        try:
            await monitor_bulk.set_dependencies(self.deps, self.actor, items)
        except ItemError as exc:
            place = ("monitors", wanted[exc.index][0].key)
            raise Invalid([_domain_problem(self.doc, place, exc.error)]) from None

    async def _update(self, change: Change) -> None:
        assert change.object_id is not None
        full = self._body(change.section, change.key)
        top = {f.path.split(".")[0] for f in change.fields}
        renamed = {"channels": "channel_ids", "monitors": "monitor_ids"}
        patch = {renamed.get(t, t): full[renamed.get(t, t)] for t in top}
        if change.section == "monitors" and "depends_on" in top:
            patch["depends_on"] = self.ids.ids(
                "monitors", self.desired["monitors"][change.key].canonical["depends_on"]
            )
        if change.section == "monitors":
            await monitors.update(self.deps, self.actor, change.object_id, patch, base=self.base)
        elif change.section == "status_pages":
            await status_pages.update(self.deps, self.actor, change.object_id, patch, base=self.base)
        else:
            await _KINDS[change.section].update(self.deps, self.actor, change.object_id, patch)
        self._record(change.section, change.key, change.object_id)

    async def _delete(self, change: Change) -> None:
        assert change.object_id is not None
        await _KINDS[change.section].delete(self.deps, self.actor, change.object_id)
        await self.deps.pool.execute(
            "DELETE FROM config_objects WHERE account_id = $1 AND resource = $2 AND key = $3",
            self.actor.account_id,
            change.section,
            change.key,
        )

    def _record(self, section: str, key: str, object_id: int) -> None:
        self.records[(section, key)] = object_id

    async def _write_records(self) -> None:
        """What each object created or updated was applied as (``config_objects``), in one
        statement (10,000 upserts one by one were seconds of an apply)."""
        if not self.records:
            return
        sections, keys, ids, applied = [], [], [], []
        for (section, key), object_id in self.records.items():
            shaped = self.desired[section][key]
            sections.append(section)
            keys.append(key)
            ids.append(object_id)
            applied.append(masked(shaped.canonical, shaped.secrets))
        await self.deps.pool.execute(
            """INSERT INTO config_objects (account_id, resource, key, object_id, applied)
               SELECT $1, r.resource, r.key, r.object_id, r.applied
               FROM unnest($2::text[], $3::text[], $4::bigint[], $5::jsonb[])
                    AS r(resource, key, object_id, applied)
               ON CONFLICT (account_id, resource, key)
               DO UPDATE SET object_id = EXCLUDED.object_id, applied = EXCLUDED.applied,
                             applied_at = now()""",
            self.actor.account_id,
            sections,
            keys,
            ids,
            applied,
        )
