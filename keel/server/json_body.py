"""A request body read as JSON without letting its shape hurt the server.

Python's parser recurses once per nesting level and converts integers of any length: a body nested
thousands deep raises RecursionError, and a 5,000-digit number a ValueError, both 500s before they
were caught. Here the nesting is measured first, on the body with its strings blanked out (brackets
inside strings do not count), and every failure is a 400 that names what is wrong.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Deeper than any request Keel takes (a chat body is about 6 levels; an ingest body 4).
MAX_JSON_DEPTH = 64
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


class BadJSON(ValueError):
    """The body cannot be taken as JSON; the message says why, for the client."""


def json_depth(body: bytes) -> int:
    """How deep the body's arrays and objects nest (0 for a scalar)."""
    depth = deepest = 0
    for bracket in _BRACKET.finditer(_STRING.sub(b'""', body)):
        depth += 1 if bracket.group() in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    return deepest


def parse_json_body(body: bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The body as JSON (``None`` for an empty one), or BadJSON naming the problem."""
    if not body:
        return None
    if json_depth(body) > max_depth:
        raise BadJSON(f"the request body nests arrays and objects deeper than {max_depth} levels")
    try:
        return json.loads(body)
    except UnicodeDecodeError:
        raise BadJSON("the request body is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise BadJSON(f"the request body is not valid JSON ({error.msg} at line {error.lineno}, "
                      f"column {error.colno})") from None
    except ValueError as error:  # an integer past Python's digit limit
        raise BadJSON(f"a number in the request body is too long ({str(error).split(';')[0]})") from None
    except RecursionError:
        raise BadJSON("the request body nests too deeply") from None
