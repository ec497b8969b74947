"""Reading files of configuration as code (monitor/ascode/reading.py): every problem names its
file, line and column (1-based, as editors count) and the field; a key defined twice names both
places; references are replaced, an unset one is a problem at its place."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.ascode.reading import Document, Invalid, Place, Problem, Secrets, file_texts, read_texts

Texts = list[tuple[str, str]]


def problems(texts: Texts, variables: dict[str, str] | None = None) -> list[Problem]:
    """What reading ``texts`` finds wrong: raised (the files cannot be read on) or kept for judging."""
    try:
        doc = read_texts(texts, Secrets(variables or {}))
    except Invalid as exc:
        return exc.problems
    return doc.problems


WEB = "monitors:\n  web:\n    url: http://127.0.0.1/\n"

# (id, texts, (file, line, column, field, words of the message))
PROBLEMS: list[tuple[str, Texts, tuple[str, int, int, str | None, str]]] = [
    ("a key in two files", [("a.yaml", WEB), ("b.yaml", "version: 1\n" + WEB)],
     ("b.yaml", 3, 3, "monitors.web", "defined twice (first at a.yaml:2:3)")),
    ("a channel key in two files", [("a.yaml", "channels:\n  ops: {kind: slack}\n"),
                                    ("b.yaml", "channels:\n\n  ops: {kind: email}\n")],
     ("b.yaml", 3, 3, "channels.ops", "defined twice (first at a.yaml:2:3)")),
    ("a field twice in a mapping", [("a.yaml", WEB + "    url: http://127.0.0.2/\n")],
     ("a.yaml", 4, 5, "monitors.web.url", "defined twice (first at a.yaml:3:5)")),
    ("an unset variable", [("a.yaml", "channels:\n  s:\n    kind: slack\n    config: {url: '${NOPE}'}\n")],
     ("a.yaml", 4, 19, "channels.s.config.url", "${NOPE} is not set")),
    ("an empty variable", [("a.yaml", "channels:\n  s:\n    config:\n      url: x${EMPTY}\n")],
     ("a.yaml", 4, 12, "channels.s.config.url", "${EMPTY} is not set")),
    ("file: through the API", [("a.yaml", "channels:\n  s:\n    config: {url: 'file:/run/x'}\n")],
     ("a.yaml", 3, 19, "channels.s.config.url", "file: references are not read through the API")),
    ("an unclosed bracket", [("ok.yaml", WEB), ("a.yaml", "monitors:\n  web:\n    tags: [a, b\n")],
     ("a.yaml", 4, 1, None, "not valid YAML: did not find expected ',' or ']' "
                            "(while parsing a flow sequence at a.yaml:3:11)")),
    ("a tab as indentation", [("a.yaml", "monitors:\n  web:\n\turl: x\n")],
     ("a.yaml", 3, 1, None, "not valid YAML: found character that cannot start any token")),
    ("a bad indentation", [("a.yaml", "monitors:\n  web:\n    url: x\n   tags: []\n")],
     ("a.yaml", 4, 4, None, "not valid YAML")),
    ("a list for a file", [("a.yaml", "- web\n")],
     ("a.yaml", 1, 1, None, "a file must be a mapping")),
    ("an unknown section", [("a.yaml", "version: 1\nmonitor:\n  web: {}\n")],
     ("a.yaml", 2, 1, "monitor", "unknown section 'monitor' (one of: version, channels, monitors")),
    ("another version", [("a.yaml", "version: 2\n")], ("a.yaml", 1, 10, "version", "must be 1")),
    ("a section that is a list", [("a.yaml", "monitors:\n  - web\n")],
     ("a.yaml", 2, 3, "monitors", "must be a mapping of key: object")),
    ("a key with a space", [("a.yaml", "monitors:\n  my web: {url: x}\n")],
     ("a.yaml", 2, 3, "monitors.my web", "not a key: 1 to 100 letters, digits")),
    ("an empty key", [("a.yaml", "channels:\n  '': {kind: slack}\n")],
     ("a.yaml", 2, 3, "channels.", "not a key")),
    ("a key of 101 characters", [("a.yaml", f"monitors:\n  {'a' * 101}: {{}}\n")],
     ("a.yaml", 2, 3, f"monitors.{'a' * 100}", "not a key")),
    ("a key that is a list", [("a.yaml", "monitors:\n  web:\n    ? [a]\n    : 1\n")],
     ("a.yaml", 3, 7, "monitors.web", "a key must be text")),
]  # fmt: skip


@pytest.mark.parametrize(("texts", "expected"), [p[1:] for p in PROBLEMS], ids=[p[0] for p in PROBLEMS])
def test_a_problem_names_its_file_line_column_and_field(
    texts: Texts, expected: tuple[str, int, int, str | None, str]
) -> None:
    file, line, column, field, words = expected
    found = problems(texts, {"EMPTY": ""})
    assert len(found) == 1, found
    (problem,) = found
    assert problem.as_json() == {
        "file": file,
        "line": line,
        "column": column,
        "field": field,
        "message": problem.message,
    }
    assert words in problem.message
    assert str(problem).startswith(f"{file}:{line}:{column}: {field + ': ' if field else ''}")


def test_every_problem_of_every_file_is_named_in_one_run() -> None:
    found = problems(
        [
            ("a.yaml", WEB + "channels:\n  s: {config: {url: '${A}'}}\n"),
            ("b.yaml", WEB + "channels:\n  t: {config: {url: '${B}'}}\n"),
            ("c.yaml", "monitors: [\n"),
        ]
    )
    assert [str(p.place) for p in found] == ["a.yaml:5:21", "b.yaml:2:3", "b.yaml:5:21", "c.yaml:2:1"]


def test_references_are_replaced_and_remembered() -> None:
    doc = read_texts(
        [("a.yaml", "channels:\n  s:\n    config: {url: 'https://${HOST}/${PATH}', token: 'file:/t'}\n")],
        Secrets({"HOST": "example.test", "PATH": "in"}, read_file=lambda path: f"read {path}"),
    )
    assert doc.sections["channels"]["s"]["config"] == {"url": "https://example.test/in", "token": "read /t"}
    assert doc.references == {("channels", "s", "config", "url"), ("channels", "s", "config", "token")}
    assert not doc.problems


def test_dates_stay_as_written_and_places_are_kept() -> None:
    doc = read_texts([("a.yaml", "maintenance:\n  w:\n    once: {from: 2026-01-04, to: 2026-01-05}\n")],
                     Secrets({}))  # fmt: skip
    assert doc.sections["maintenance"]["w"]["once"] == {"from": "2026-01-04", "to": "2026-01-05"}
    assert doc.place(("maintenance", "w", "once", "to")) == Place("a.yaml", 3, 34)
    # A field the file does not hold is placed at its nearest parent that it does.
    assert doc.place(("maintenance", "w", "once", "to", "x")) == Place("a.yaml", 3, 34)
    assert doc.place(("maintenance", "w", "recurring")) == Place("a.yaml", 2, 3)


def test_a_directory_is_its_yaml_and_json_files_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text("monitors: {}\n")
    (tmp_path / "a.json").write_text('{"channels": {}}')
    (tmp_path / "c.yml").write_text("")
    (tmp_path / "notes.txt").write_text("not read")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.yaml").write_text("not read either: [")
    names = [Path(name).name for name, _ in file_texts([tmp_path])]
    assert names == ["a.json", "b.yaml", "c.yml"]
    assert isinstance(read_texts(file_texts([tmp_path]), Secrets({})), Document)


def test_a_directory_without_files_and_an_unreadable_file_are_problems(tmp_path: Path) -> None:
    with pytest.raises(Invalid, match=r"no \.yaml, \.yml or \.json file given"):
        file_texts([tmp_path])
    (tmp_path / "bad.yaml").write_bytes(b"monitors: \xff\n")
    with pytest.raises(Invalid) as caught:
        file_texts([tmp_path])
    (problem,) = caught.value.problems
    assert problem.place == Place(str(tmp_path / "bad.yaml"), 1, 1) and "cannot read" in problem.message


def test_keys_are_the_text_written() -> None:
    # YAML 1.1 would read these as an octal, a hex and a bool: every key of the format is text.
    text = "monitors:\n  0123: {tags: [a]}\n  0x1f: {}\n  on: {}\n  12: {headers: {yes: '1'}}\n"
    doc = read_texts([("a.yaml", text)], Secrets({}))
    assert list(doc.sections["monitors"]) == ["0123", "0x1f", "on", "12"]
    assert doc.sections["monitors"]["12"] == {"headers": {"yes": "1"}}
    assert doc.place(("monitors", "0123", "tags", 0)) == Place("a.yaml", 2, 17)
