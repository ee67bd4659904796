"""Safe RediSearch TAG values and filters.

A tag value is user input (user ids, conversation ids, file names). Unescaped, ``a|b`` becomes a
union, ``x}`` closes the clause and ``*`` or an empty value matches everything, so every value
is validated and escaped here and nowhere else. Found on RediSearch 2.10:

* leading/trailing whitespace is trimmed when indexing (so " a" would read as "a"): rejected;
* control characters do not survive escaping reliably: rejected in ids, replaced in file names;
* ASCII punctuation and spaces must be backslash-escaped; non-ASCII characters must NOT be
  (an escaped multi-byte character matches nothing);
* tag fields use the unit separator (0x1f) instead of "," so "report, final.pdf" stays one tag,
  and are CASESENSITIVE so "Alice" and "alice" are different users.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

TAG_SEPARATOR = "\x1f"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def escape_tag(value: str) -> str:
    """Backslash-escape every ASCII character except letters, digits and underscore."""
    return "".join(
        f"\\{ch}" if ord(ch) < 128 and not (ch.isalnum() or ch == "_") else ch for ch in value
    )


def validate_tag_id(name: str, value: object) -> str:
    """An id used as an exact-match tag (user_id, conversation_id, doc_id); a clear error otherwise."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    if value != value.strip():
        raise ValueError(f"{name} must not start or end with whitespace: {value!r}")
    if _CONTROL.search(value):
        raise ValueError(f"{name} must not contain control characters: {value!r}")
    return value


def clean_tag_text(value: str) -> str:
    """A free-text value (a file name) made safe to store as one tag: stripped, controls replaced."""
    return _CONTROL.sub("?", value).strip()


def tag_equals(field: str, value: str) -> str:
    """``@field:{value}`` for one validated, escaped value."""
    return f"@{field}:{{{escape_tag(value)}}}"


def tag_in(field: str, values: Iterable[str]) -> str:
    """``@field:{v1|v2|...}``: each value escaped on its own, so only our ``|`` is a union."""
    escaped = [escape_tag(value) for value in values]
    if not escaped:
        raise ValueError(f"tag_in({field!r}) needs at least one value; an empty list would match everything")
    return f"@{field}:{{{'|'.join(escaped)}}}"
