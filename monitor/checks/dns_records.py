"""DNS answers as comparable text, and the verdict on them: the pure half of the dns check.

A record is compared as the one line a zone file would hold for it, without TTL or quotes, so
what a user writes and what a server answers meet in one form:

    A      93.184.215.14                  (canonical IP text; AAAA compressed, lower case)
    CNAME  example.net                     (names: lower case, no trailing dot, "." for the root)
    NS     ns1.example.net
    MX     10 mail.example.com            (preference, exchange; RFC 7505's null MX is "0 .")
    TXT    v=spf1 -all                     (a record's strings joined, as SPF and DKIM read them)
    SOA    ns1.example.com hostmaster.example.com 2024010101 7200 3600 1209600 300
    CAA    0 issue letsencrypt.org         (flags, tag in lower case, value unquoted)
    SRV    10 5 5060 sip.example.com       (priority, weight, port, target)

Names are compared without regard to case, as DNS does; TXT values and CAA parameters are
compared exactly. A character a terminal or the database cannot hold (a control character in
a TXT record) is written as a ``\\xNN`` escape, so a hostile answer cannot break the row that
stores it. ``judge`` gives the cause of a failed check, or None.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from ipaddress import IPv4Address, IPv6Address
from typing import Any, Literal

from yarl import URL

RecordType = Literal["A", "AAAA", "CNAME", "MX", "TXT", "NS", "SOA", "CAA", "SRV"]
RECORD_TYPES: tuple[str, ...] = ("A", "AAAA", "CNAME", "MX", "TXT", "NS", "SOA", "CAA", "SRV")
# The numbers of the DNS record types (RFC 1035, 2782, 3596, 8659).
QTYPES: dict[str, int] = {
    "A": 1,
    "NS": 2,
    "CNAME": 5,
    "SOA": 6,
    "MX": 15,
    "TXT": 16,
    "AAAA": 28,
    "SRV": 33,
    "CAA": 257,
}
Expect = Literal["answer", "contains", "equals", "unchanged"]
EXPECTS: tuple[str, ...] = ("answer", "contains", "equals", "unchanged")

MAX_NAME_LENGTH = 253
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ALL_QUOTED = re.compile(r'\s*"(?:[^"\\]|\\.)*"(?:\s+"(?:[^"\\]|\\.)*")*\s*')
_U16 = 65535
_U32 = 2**32 - 1


def domain_name(text: str) -> str:
    """A name as DNS compares it: IDNA for Unicode labels, lower case, no trailing dot.

    Labels may hold letters, digits, hyphens and underscores (``_sip._tcp``, ``_dmarc``), and
    the first may be ``*``. ValueError with the reason otherwise.
    """
    value = text.strip().rstrip(".") if text.strip() not in (".", "") else ""
    if not value:
        raise ValueError("a name is required (the root is not monitored)")
    labels = value.split(".")
    out: list[str] = []
    for position, label in enumerate(labels):
        if not label:
            raise ValueError(f"empty label in {text!r}")
        if not label.isascii():
            try:  # yarl's IDNA (UTS 46), as URLs' hosts are encoded
                label = URL.build(scheme="http", host=label).raw_host or ""
            except ValueError:
                raise ValueError(f"invalid international label {label[:70]!r}") from None
        label = label.lower()
        if label == "*" and position == 0:
            out.append(label)
            continue
        if not _LABEL.fullmatch(label):
            raise ValueError(
                f"invalid label {label[:70]!r}: 1-63 letters, digits, hyphens or underscores,"
                " not starting or ending with a hyphen"
            )
        out.append(label)
    name = ".".join(out)
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"name longer than {MAX_NAME_LENGTH} characters")
    return name


def printable(text: str) -> str:
    """``text`` with every non-printable character escaped (``\\x00``, ``\\u200b``)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _answer_name(name: str) -> str:
    # A server's name, as c-ares wrote it: only case and the trailing dot to settle.
    return printable(name.rstrip(".").lower()) or "."


def answer_text(record_type: str, data: Any) -> str:
    """The comparable text of one answer's record data (pycares' ``*RecordData``)."""
    if record_type in ("A", "AAAA"):
        return str(IPv4Address(data.addr) if record_type == "A" else IPv6Address(data.addr))
    if record_type == "CNAME":
        return _answer_name(data.cname)
    if record_type == "NS":
        return _answer_name(data.nsdname)
    if record_type == "MX":
        return f"{data.priority} {_answer_name(data.exchange)}"
    if record_type == "TXT":
        raw = data.data if isinstance(data.data, bytes) else str(data.data).encode()
        return printable(raw.decode("utf-8", "backslashreplace"))
    if record_type == "SOA":
        numbers = f"{data.serial} {data.refresh} {data.retry} {data.expire} {data.minimum}"
        return f"{_answer_name(data.mname)} {_answer_name(data.rname)} {numbers}"
    if record_type == "CAA":
        return f"{data.critical} {_caa_tail(str(data.tag), str(data.value))}"
    if record_type == "SRV":
        return f"{data.priority} {data.weight} {data.port} {_answer_name(data.target)}"
    raise ValueError(f"unsupported record type {record_type!r}")


def _caa_tail(tag: str, value: str) -> str:
    tag = tag.lower()
    if tag in ("issue", "issuewild"):
        # The issuer is a domain name (case-insensitive); its parameters are not.
        issuer, sep, params = value.partition(";")
        value = issuer.strip().lower() + (f"; {params.strip()}" if sep else "")
    return printable(f"{tag} {value}".rstrip())


def expected_value(record_type: str, text: str) -> str:
    """A value a user expects, in the form answers are compared in (see the module's
    docstring). Accepts zone-file spellings: trailing dots, any case in names, quoted TXT
    strings and CAA values. ValueError with the reason otherwise."""
    value = text.strip()
    if not value:
        raise ValueError("empty value")
    if not value.isprintable():
        raise ValueError("control characters are not allowed in a value")
    if record_type == "A":
        return str(_address(IPv4Address, value, "an IPv4 address"))
    if record_type == "AAAA":
        return str(_address(IPv6Address, value, "an IPv6 address"))
    if record_type in ("CNAME", "NS"):
        return domain_name(value)
    if record_type == "TXT":
        if _ALL_QUOTED.fullmatch(value):
            return "".join(re.sub(r"\\(.)", r"\1", part) for part in _QUOTED.findall(value))
        return value
    fields = value.split()
    if record_type == "MX":
        _count(fields, 2, "preference exchange", "10 mail.example.com")
        return f"{_number(fields[0], _U16, 'preference')} {_target_name(fields[1])}"
    if record_type == "SRV":
        _count(fields, 4, "priority weight port target", "10 5 5060 sip.example.com")
        names = ("priority", "weight", "port")
        numbers = " ".join(str(_number(f, _U16, n)) for f, n in zip(fields[:3], names, strict=True))
        return f"{numbers} {_target_name(fields[3])}"
    if record_type == "SOA":
        _count(fields, 7, "mname rname serial refresh retry expire minimum", "ns1.example.com ...")
        numbers = " ".join(str(_number(f, _U32, "SOA number")) for f in fields[2:])
        return f"{domain_name(fields[0])} {domain_name(fields[1])} {numbers}"
    if record_type == "CAA":
        parts = value.split(None, 2)
        if len(parts) < 2:
            raise ValueError('a CAA value reads "flags tag value", like "0 issue letsencrypt.org"')
        flags = _number(parts[0], 255, "CAA flags")
        if not re.fullmatch(r"[A-Za-z0-9]{1,15}", parts[1]):
            raise ValueError(f"invalid CAA tag {parts[1][:20]!r}")
        tail = parts[2] if len(parts) > 2 else ""
        if len(tail) >= 2 and tail.startswith('"') and tail.endswith('"'):
            tail = tail[1:-1]
        return f"{flags} {_caa_tail(parts[1], tail)}"
    raise ValueError(f"unsupported record type {record_type!r}")


def _address(kind: type[IPv4Address] | type[IPv6Address], value: str, what: str) -> IPv4Address | IPv6Address:
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"{value[:60]!r} is not {what}") from None


def _count(fields: list[str], want: int, shape: str, example: str) -> None:
    if len(fields) != want:
        raise ValueError(f'expected "{shape}", like "{example}"')


def _number(text: str, top: int, what: str) -> int:
    if not text.isdigit() or int(text) > top:
        raise ValueError(f"{what} must be a whole number from 0 to {top}, not {text[:20]!r}")
    return int(text)


def _target_name(text: str) -> str:
    return "." if text.strip() == "." else domain_name(text)


def listing(values: Iterable[str], limit: int = 120) -> str:
    """``[a, b, c]``, cut to about ``limit`` characters with a count of what was left out."""
    items = list(values)
    shown: list[str] = []
    used = 0
    for item in items:
        if shown and used + len(item) > limit:
            break
        shown.append(item if len(item) <= limit else item[: limit - 3] + "...")
        used += len(shown[-1]) + 2
    rest = len(items) - len(shown)
    return "[" + ", ".join(shown) + (f", ... {rest} more" if rest else "") + "]"


def judge(
    expect: str, answers: tuple[str, ...], values: tuple[str, ...], baseline: tuple[str, ...] | None
) -> str | None:
    """The cause of a failed check, or None. ``answers`` and ``values`` are sorted, distinct
    comparable texts, and ``answers`` is not empty (no answer fails before judging);
    ``baseline`` is what ``unchanged`` compares with (None: this answer becomes it)."""
    if expect == "contains":
        missing = [v for v in values if v not in answers]
        if missing:
            among = "among the answers" if len(missing) == 1 else "all among the answers"
            return f"expected {', '.join(missing)} {among}, got {listing(answers)}"
    elif expect == "equals":
        if answers != values:
            missing = [v for v in values if v not in answers]
            extra = [a for a in answers if a not in values]
            parts = [f"missing {listing(missing, 80)}"] if missing else []
            parts += [f"unexpected {listing(extra, 80)}"] if extra else []
            return f"answers differ from the expected ones: {'; '.join(parts)} (got {listing(answers, 80)})"
    elif expect == "unchanged":
        if baseline is not None and answers != baseline:
            return f"answer changed: now {listing(answers)}, was {listing(baseline)}"
    return None
