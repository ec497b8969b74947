"""HTML read as a tree, with the standard library's parser, for tests that check a page's
structure and text rather than match its source with regular expressions.

``parse`` also checks that every element is closed in order (void elements aside): a template
that leaves one open would otherwise be read as nested in the wrong place.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

# Elements that never have content nor an end tag (HTML, "void elements").
VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self) -> str:
        """Every text inside, in order, as it is (entities decoded)."""
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self) -> Iterator[Element]:
        """This element and every one inside it, in document order."""
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.iter()

    def find_all(self, tag: str, cls: str | None = None) -> list[Element]:
        """The elements inside (not this one) named ``tag`` with the class ``cls``, if given."""
        return [
            e for e in self.iter() if e is not self and e.tag == tag and (cls is None or cls in e.classes)
        ]

    def one(self, tag: str, cls: str | None = None) -> Element:
        found = self.find_all(tag, cls)
        assert len(found) == 1, f"{len(found)} <{tag} class={cls!r}> where one was expected"
        return found[0]

    def children_named(self, tag: str) -> list[Element]:
        return [c for c in self.children if isinstance(c, Element) and c.tag == tag]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {name: value or "" for name, value in attrs})
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag, {name: value or "" for name, value in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if self.stack[-1].tag != tag:
            self.problems.append(f"</{tag}> closes <{self.stack[-1].tag}>")
            if not any(e.tag == tag for e in self.stack[1:]):
                return
            while self.stack[-1].tag != tag:
                self.stack.pop()
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(text: str) -> Element:
    """The document's tree; fails the test if an element is closed out of order or left open."""
    builder = _Builder()
    builder.feed(text)
    builder.close()
    unclosed = [e.tag for e in builder.stack[1:]]
    assert not builder.problems and not unclosed, (builder.problems, unclosed)
    return builder.root
