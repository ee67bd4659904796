"""Safe RediSearch TAG values and filters (redisvl ``Tag`` filters with Keel's escaping).

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

from redisvl.query.filter import FilterExpression, Tag
from redisvl.utils.token_escaper import TokenEscaper

TAG_SEPARATOR = "\x1f"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Every ASCII character except letters, digits and underscore; never a non-ASCII one.
_ASCII_PUNCTUATION = re.compile(r"[\x00-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]")


class EscapedTag(Tag):
    """redisvl's ``Tag`` filter with the escaping found above instead of redisvl's own.

    redisvl escapes a fixed list of punctuation that leaves out the backtick; this escapes every
    ASCII punctuation character and space, and nothing non-ASCII, so a file name can hold any
    character without widening the filter."""

    escaper = TokenEscaper(escape_chars_re=_ASCII_PUNCTUATION)


def escape_tag(value: str) -> str:
    """Backslash-escape every ASCII character except letters, digits and underscore."""
    return EscapedTag.escaper.escape(value)


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


def tag_filter(field: str, values: str | Iterable[str]) -> FilterExpression:
    """``@field:{v1|v2|...}`` as a redisvl filter: each value escaped on its own, so only the
    filter's own ``|`` is a union. No value, or an empty one, is an error: redisvl would drop it
    and match every document instead."""
    values = [values] if isinstance(values, str) else list(values)
    if not values:
        raise ValueError(f"a filter on {field!r} needs at least one value; an empty list would match everything")
    if not all(isinstance(value, str) and value for value in values):
        raise ValueError(f"a filter on {field!r} takes non-empty strings, got {values!r}")
    return EscapedTag(field) == values


def tag_equals(field: str, value: str) -> str:
    """``@field:{value}`` for one validated, escaped value (a query string)."""
    return str(tag_filter(field, value))


def tag_in(field: str, values: Iterable[str]) -> str:
    """``@field:{v1|v2|...}`` (a query string); see ``tag_filter``."""
    return str(tag_filter(field, values))
