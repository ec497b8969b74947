"""Files of the format read into one document, every value with the place it was written.

YAML (JSON is read as YAML) is composed into nodes by libyaml where it is built (the C
composer: a 10,000-monitor file of 2.6 MB is composed in about 0.6 s) and turned into plain
values here, keeping for every path (``("monitors", "web", "interval_seconds")``) the file,
line and column it came from, so any later error, even one found by the database, names where
to look. A key written twice in one mapping, or a section key defined in two files, is an error
naming both places. Dates and times stay the text they were written as (the models parse them),
so ``2026-01-04`` is not turned into a ``date`` behind the user's back.

Secret references (``${NAME}``, ``file:/path``) are replaced here, by the ``Secrets`` given
(the CLI's environment and files; the API's request), recording which paths held one: a field
that holds a secret must be a reference (``validation.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from monitor.ascode.keying import KEY_RULE

SECTIONS = ("channels", "monitors", "maintenance", "status_pages")
SUFFIXES = (".yaml", ".yml", ".json")
REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
FILE_PREFIX = "file:"
MAX_FILE_BYTES = 64 * 1024 * 1024
# How many values a file may hold beyond one per byte of its text (aliases: ``_read_one``).
VALUES_BEYOND_SIZE = 10_000
KEY_WORDS = "not a key: 1 to 100 letters, digits, '_', '.' and '-', the first a letter or digit"

Path_ = tuple[str | int, ...]
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Place:
    """Where a value was written: ``file:line:column`` (1-based, as editors count)."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the files: where, the field (``monitors.web.url``), what."""

    place: Place | None
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.place}: " if self.place else ""
        return f"{where}{self.path + ': ' if self.path else ''}{self.message}"

    def as_json(self) -> dict[str, Any]:
        place = self.place
        return {
            "file": place.file if place else None,
            "line": place.line if place else None,
            "column": place.column if place else None,
            "field": self.path or None,
            "message": self.message,
        }


class Invalid(Exception):
    """The files cannot be applied: every problem found, none applied."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(str(p) for p in problems[:3]))
        self.problems = problems


@dataclass
class Document:
    """The merged sections (key -> object, plain values) and where each value was written."""

    sections: dict[str, dict[str, Any]] = field(default_factory=lambda: {s: {} for s in SECTIONS})
    places: dict[Path_, Place] = field(default_factory=dict)
    references: set[Path_] = field(default_factory=set)  # the paths whose value held a reference
    # What reading found wrong in values it could read (an unset variable): reported with what
    # judging the objects finds, so one run names every problem.
    problems: list[Problem] = field(default_factory=list)

    def place(self, path: Path_) -> Place | None:
        """The place of ``path``, or of its nearest written parent."""
        for n in range(len(path), 0, -1):
            found = self.places.get(path[:n])
            if found is not None:
                return found
        return None

    def problem(self, path: Path_, message: str) -> Problem:
        return Problem(self.place(path), ".".join(str(p) for p in path), message)


# -- secrets ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Secrets:
    """Where references are looked up: ``variables`` for ``${NAME}``, and ``read_file`` for
    ``file:/path`` (None: refused, as through the API)."""

    variables: Mapping[str, str]
    read_file: Callable[[str], str] | None = None


def local_file(path: str) -> str:
    """A ``file:`` reference's value as the CLI reads it: the content, one final newline off."""
    text = Path(path).read_text(encoding="utf-8")
    return text[:-1] if text.endswith("\n") else text


def _resolve(value: str, secrets: Secrets) -> str:
    """``value`` with its references replaced (ValueError naming the one that cannot be)."""
    if value.startswith(FILE_PREFIX):
        name = value[len(FILE_PREFIX) :]
        if secrets.read_file is None:
            raise ValueError("file: references are not read through the API; send the value in secrets")
        try:
            return secrets.read_file(name)
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read {name}: {getattr(exc, 'strerror', None) or exc}") from None

    def one(match: re.Match[str]) -> str:
        got = secrets.variables.get(match.group(1))
        if not got:
            raise ValueError(f"${{{match.group(1)}}} is not set")
        return got

    return REFERENCE.sub(one, value)


def is_reference(value: Any) -> bool:
    return isinstance(value, str) and (value.startswith(FILE_PREFIX) or REFERENCE.search(value) is not None)


# -- nodes to values --------------------------------------------------------------------------------

# A scalar's value by its tag, YAML's own only (a `!tag` of an application is refused). Called
# directly, not through ``construct_object``, which would keep every node it ever made (a leak
# in a process that reads files for each request, as the api does) in state threads share.
_SCALARS = yaml.constructor.SafeConstructor()
_BY_TAG: dict[str, Callable[[yaml.ScalarNode], Any]] = {
    f"tag:yaml.org,2002:{name}": getattr(_SCALARS, f"construct_yaml_{name}")
    for name in ("null", "bool", "int", "float", "str")
}


class _BadScalar(Exception):
    def __init__(self, node: yaml.Node, message: str) -> None:
        super().__init__(message)
        self.node, self.message = node, message


def _place(name: str, node: yaml.Node) -> Place:
    return Place(name, node.start_mark.line + 1, node.start_mark.column + 1)


def _scalar(node: yaml.ScalarNode) -> Any:
    if node.tag in ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:binary"):
        return node.value  # as written: the models parse times
    construct = _BY_TAG.get(node.tag)
    if construct is None:
        raise _BadScalar(
            node, f"the tag {node.tag[:60]!r} is not read (only YAML's str, int, float, bool, null)"
        )
    try:
        return construct(node)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError):
        # The value itself is not repeated: it could be a secret written with a wrong tag.
        raise _BadScalar(node, f"this value cannot be read as !!{node.tag.rsplit(':', 1)[-1]}") from None


class _TooMany(Exception):
    """More values than the file's text can hold without aliases expanding them."""


def _key(node: yaml.Node) -> str | None:
    """A mapping key as written: every key of the format is text, so ``0123:`` is the key
    "0123" (not the octal 83), ``on:`` is "on" (not true); None for a list or mapping as a key."""
    return node.value if isinstance(node, yaml.ScalarNode) else None


class _Reader:
    def __init__(
        self, name: str, doc: Document, secrets: Secrets, problems: list[Problem], budget: int
    ) -> None:
        self.name, self.doc, self.secrets, self.problems = name, doc, secrets, problems
        self.budget = budget

    def value(self, node: yaml.Node, path: Path_) -> Any:
        self.budget -= 1
        if self.budget < 0:
            raise _TooMany
        self.doc.places[path] = _place(self.name, node)
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            seen: dict[str, Place] = {}
            for key_node, value_node in node.value:
                key = _key(key_node)
                if key is None:
                    self.problems.append(
                        Problem(_place(self.name, key_node), _dotted(path), "a key must be text")
                    )
                    continue
                if key in seen:
                    self.problems.append(
                        Problem(
                            _place(self.name, key_node),
                            _dotted((*path, key)),
                            f"defined twice (first at {seen[key]})",
                        )
                    )
                    continue
                seen[key] = _place(self.name, key_node)
                out[key] = self.value(value_node, (*path, key))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.value(item, (*path, i)) for i, item in enumerate(node.value)]
        value = _scalar(node)
        if isinstance(value, str) and is_reference(value):
            self.doc.references.add(path)
            try:
                return _resolve(value, self.secrets)
            except ValueError as exc:
                self.problems.append(Problem(_place(self.name, node), _dotted(path), str(exc)))
                return value
        return value


def _dotted(path: Path_) -> str:
    return ".".join(str(p) for p in path)


# -- files to one document --------------------------------------------------------------------------


def read_texts(texts: Iterable[tuple[str, str]], secrets: Secrets) -> Document:
    """The document of ``texts`` ((file name, text) in the order to merge): ``Invalid`` with
    every problem found in reading and merging."""
    doc = Document()
    problems: list[Problem] = []
    for name, text in texts:
        _read_one(name, text, doc, secrets, problems)
    if any(p.message.startswith("not valid YAML") or p.path == "" for p in problems):
        raise Invalid(problems)
    doc.problems = problems
    return doc


def _read_one(name: str, text: str, doc: Document, secrets: Secrets, problems: list[Problem]) -> None:
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        place = Place(name, mark.line + 1, mark.column + 1) if mark else Place(name, 1, 1)
        message = f"not valid YAML: {exc.problem or exc.context}"
        begun = exc.context_mark
        if exc.problem and exc.context and begun is not None:
            # Where the construct began: an unclosed bracket's place, when the problem is at the end.
            began = Place(name, begun.line + 1, begun.column + 1)
            if began != place:
                message += f" ({exc.context} at {began})"
        problems.append(Problem(place, "", message))
        return
    except yaml.YAMLError as exc:
        problems.append(Problem(Place(name, 1, 1), "", f"not valid YAML: {exc}"))
        return
    if root is None:
        return  # an empty file adds nothing
    if not isinstance(root, yaml.MappingNode):
        problems.append(
            Problem(_place(name, root), "", "a file must be a mapping (version, channels, monitors...)")
        )
        return
    # Every value written takes a byte of the text at least; an alias repeats a whole node, and
    # nested ones multiply (a "billion laughs" of a few hundred bytes): past this, refused.
    reader = _Reader(name, doc, secrets, problems, budget=len(text) + VALUES_BEYOND_SIZE)
    try:
        _read_sections(name, root, doc, problems, reader)
    except _BadScalar as exc:
        problems.append(Problem(_place(name, exc.node), "", f"not valid YAML: {exc.message}"))
    except _TooMany:
        problems.append(
            Problem(Place(name, 1, 1), "", "more values than its size can hold: aliases (*name) that "
                    "expand too far")
        )  # fmt: skip


def _read_sections(
    name: str, root: yaml.MappingNode, doc: Document, problems: list[Problem], reader: _Reader
) -> None:
    for key_node, value_node in root.value:
        key = _key(key_node)
        where = _place(name, key_node)
        if key == "version":
            version = _scalar(value_node) if isinstance(value_node, yaml.ScalarNode) else None
            if version != 1:
                problems.append(Problem(_place(name, value_node), "version", "must be 1 (the only version)"))
            continue
        if key not in SECTIONS:
            shown = repr(key)[:60]
            known = ", ".join(("version", *SECTIONS))
            problems.append(Problem(where, str(key), f"unknown section {shown} (one of: {known})"))
            continue
        if isinstance(value_node, yaml.ScalarNode) and _scalar(value_node) is None:
            continue  # "monitors:" with nothing under it
        if not isinstance(value_node, yaml.MappingNode):
            problems.append(Problem(_place(name, value_node), key, "must be a mapping of key: object"))
            continue
        section = doc.sections[key]
        for item_key_node, item_node in value_node.value:
            item_key = _key(item_key_node)
            item_place = _place(name, item_key_node)
            if item_key is None:
                problems.append(Problem(item_place, key, "a key must be text"))
                continue
            if not KEY_RULE.match(item_key):
                problems.append(Problem(item_place, _dotted((key, item_key[:100])), KEY_WORDS))
                continue
            path: Path_ = (key, item_key)
            if item_key in section:
                first = doc.places.get((*path, "#key"))
                problems.append(Problem(item_place, _dotted(path), f"defined twice (first at {first})"))
                continue
            doc.places[(*path, "#key")] = item_place
            section[item_key] = reader.value(item_node, path)
            doc.places[path] = item_place


def file_texts(paths: Iterable[Path]) -> list[tuple[str, str]]:
    """(name, text) of each path given, a directory as its ``*.yaml``, ``*.yml`` and ``*.json``
    files in name order; ``Invalid`` for one that cannot be read."""
    found: list[Path] = []
    problems: list[Problem] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.iterdir() if p.is_file() and p.suffix in SUFFIXES))
        else:
            found.append(path)
    texts = []
    for path in found:
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                raise OSError(f"larger than {MAX_FILE_BYTES // 2**20} MiB")
            texts.append((str(path), path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(
                Problem(Place(str(path), 1, 1), "", f"cannot read: {getattr(exc, 'strerror', None) or exc}")
            )
    if not found and not problems:
        problems.append(Problem(None, "", "no .yaml, .yml or .json file given"))
    if problems:
        raise Invalid(problems)
    return texts
