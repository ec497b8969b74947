"""The house's floors: which packages of ``monitor/`` may import which.

Arrows point down only. From the bottom:

- **ground**: modules that know no process (``config``, ``models``, ``events``, ``db``,
  ``secrets``, ``names``, ``times``, ...), and the plugins and the network guard every process
  shares (``checks/``, ``channels/``, ``net/``);
- **domain** (``domain/``, and ``ascode/``, which plans and orders its operations): what a user
  may do with a resource, for every face;
- **processes** (``scheduler/``, ``alerter/``, ``worker/``): each on its own, none imports another;
- **web** (``web/``): what the faces served over HTTP share (the application's resource keys,
  the session cookie);
- **faces** (``api/``, ``status/``, ``dashboard/``): what people and scripts see; ``status/`` (the
  public pages) and ``dashboard/`` are served by the api but know nothing of its handlers;
- **entry points** (``cli``, its command groups ``cli_*``, ``__main__``): may import anything.

An AST walk of every module (imports inside functions count too: they are arrows all the same)
checks each import against these rules. ``KNOWN`` holds the arrows that broke the rules when the
test was written; each is mended by issue 27 and then taken out of the list, and the test also
fails on an entry that no longer occurs, so the list can only shrink.

Within the ground floor the arrows must not go round either: a cycle there (config -> telegram
-> events -> redisconn -> config, as issue 27 found) makes the order in which modules are first
imported decide whether a name exists yet. That walk counts what runs (imports inside functions
too, ``if TYPE_CHECKING:`` blocks not: they are for the type checker, which reads cycles fine) and
follows ``from package import module`` to the module.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "monitor"

# Top-level names under monitor/ by floor; a module not named here is ground.
PROCESSES = frozenset({"scheduler", "alerter", "worker"})
FACES = frozenset({"api", "status", "dashboard"})
ENTRY = frozenset({"cli", "__main__"})
# ascode: configuration as code plans and orders the domain's operations, for every face.
DOMAIN = frozenset({"domain", "ascode"})
WEB = frozenset({"web"})
# What the domain layer never imports (its operations take plain values, not requests).
WEB_FRAMEWORKS = frozenset({"aiohttp", "jinja2"})
# What each face may import besides the floors below it: the api serves the public pages and
# the dashboard; the dashboard shows what the public side shows (badges, uptime's wording) and
# serves its static files as the public side does (status/bodies.py).
FACE_MAY_USE = {"api": frozenset({"status", "dashboard"}), "dashboard": frozenset({"status"})}

# Arrows that broke the rules when this test was written (importing module -> imported module).
KNOWN: frozenset[tuple[str, str]] = frozenset()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> Iterator[str]:
    """Every module ``path`` imports, absolute, wherever in the file the import is."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                yield ".".join(base + ([node.module] if node.module else []))
            elif node.module:
                yield node.module


def runtime_imports(path: Path, modules: frozenset[str]) -> Iterator[str]:
    """The modules of ``modules`` that importing ``path`` (or calling its functions) imports:
    ``from a import b`` counts as ``a.b`` when that is a module, ``if TYPE_CHECKING:`` not at all."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for statement in node.body
        for inner in ast.walk(statement)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found = sub if sub in modules else base
                if found in modules:
                    yield found


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (its modules in order, the first repeated at the end), or None."""
    done: set[str] = set()

    def visit(path: list[str]) -> list[str] | None:
        for following in sorted(graph.get(path[-1], ())):
            if following in path:
                return [*path[path.index(following) :], following]
            if following not in done:
                found = visit([*path, following])
                if found is not None:
                    return found
        done.add(path[-1])
        return None

    for start in sorted(graph):
        if start not in done:
            found = visit([start])
            if found is not None:
                return found
    return None


def floor(module: str) -> tuple[str, str]:
    """(floor, top-level package) of a ``monitor.*`` module."""
    top = module.split(".")[1] if "." in module else ""
    if top in ENTRY or top.startswith("cli_"):  # cli.py and the modules of its command groups
        return "entry", top
    if top in FACES:
        return "face", top
    if top in PROCESSES:
        return "process", top
    if top in DOMAIN:
        return "domain", top
    if top in WEB:
        return "web", top
    return "ground", top


RANK = {"ground": 0, "domain": 1, "web": 1.5, "process": 2, "face": 2, "entry": 3}


def allowed(importer: str, imported: str) -> bool:
    (floor_a, top_a), (floor_b, top_b) = floor(importer), floor(imported)
    if top_a == top_b or floor_a == "entry":
        return True
    if floor_b in ("process", "face"):
        # Processes and faces are each on their own: none imports another, but for what a face
        # is allowed to serve.
        return floor_a == "face" and top_b in FACE_MAY_USE.get(top_a, frozenset())
    return RANK[floor_b] <= RANK[floor_a]


def arrows() -> set[tuple[str, str]]:
    found = set()
    for path in sorted(ROOT.rglob("*.py")):
        importer = module_name(path)
        for imported in imports(path):
            if imported == "monitor" or imported.startswith("monitor."):
                found.add((importer, imported))
    return found


def test_no_arrow_points_up_or_across() -> None:
    broken = sorted(a for a in arrows() if not allowed(*a) and a not in KNOWN)
    assert not broken, "imports against the floors (see this module's docstring):\n" + "\n".join(
        f"  {a} -> {b}" for a, b in broken
    )


def test_known_breaks_are_taken_out_once_mended() -> None:
    gone = sorted(KNOWN - arrows())
    assert not gone, "mended: take these out of KNOWN:\n" + "\n".join(f"  {a} -> {b}" for a, b in gone)


def test_ground_floor_has_no_import_cycle() -> None:
    paths = {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}
    ground = frozenset(name for name in paths if floor(name)[0] == "ground")
    graph = {name: set(runtime_imports(paths[name], ground)) - {name} for name in ground}
    found = cycle(graph)
    assert found is None, "the ground floor imports in a circle: " + " -> ".join(found or ())


@pytest.mark.parametrize(
    ("graph", "found"),
    [
        ({"a": {"b"}, "b": set()}, None),
        ({"a": {"b", "c"}, "b": {"c"}, "c": set()}, None),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
        ({"a": {"b"}, "b": {"c"}, "c": {"b"}}, ["b", "c", "b"]),
    ],
)
def test_cycle(graph: dict[str, set[str]], found: list[str] | None) -> None:
    assert cycle(graph) == found


# Faces whose resources have their domain module: they parse, call an operation and answer.
THIN = (
    "api/channels.py",
    "api/maintenance.py",
    "api/status_pages.py",
    "api/keys.py",
    "api/monitors.py",
    "api/history.py",
    "api/summary.py",
    "api/pings.py",
    "cli_accounts.py",
)
_SQL = re.compile(r"\b(SELECT\s.+\sFROM|INSERT INTO|UPDATE\s+\w+\s.*SET|DELETE FROM)\b", re.S)


@pytest.mark.parametrize("path", THIN)
def test_a_thin_face_holds_no_sql(path: str) -> None:
    tree = ast.parse((ROOT / path).read_text())
    found = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.search(node.value)
    ]
    drivers = [name for name in imports(ROOT / path) if name.split(".")[0] == "asyncpg"]
    assert not found and not drivers, (found, drivers)


def test_the_domain_imports_no_web_framework() -> None:
    """Every face calls the domain; none of them may be assumed by it (the CLI has no aiohttp
    request, the dashboard no JSON API)."""
    found = sorted(
        (module_name(path), name)
        for path in sorted((ROOT / "domain").rglob("*.py"))
        for name in imports(path)
        if name.split(".")[0] in WEB_FRAMEWORKS
    )
    assert not found, found


@pytest.mark.parametrize(
    ("importer", "imported", "ok"),
    [
        ("monitor.config", "monitor.models", True),
        ("monitor.config", "monitor.scheduler.state", False),
        ("monitor.domain.monitors", "monitor.checks", True),
        ("monitor.domain.monitors", "monitor.api.errors", False),
        ("monitor.scheduler.writer", "monitor.alerter", False),
        ("monitor.scheduler.writer", "monitor.domain.monitors", True),
        ("monitor.api.public", "monitor.status.service", True),
        ("monitor.status.data", "monitor.api.uptime", False),
        ("monitor.api.monitors", "monitor.scheduler.cluster", False),
        ("monitor.cli", "monitor.scheduler.service", True),
        ("monitor.checks.http", "monitor.net.client", True),
    ],
)
def test_rules(importer: str, imported: str, ok: bool) -> None:
    assert allowed(importer, imported) is ok
