"""Every setting is checked when the settings are made, so a wrong value is an error that names the
setting, not a crash in the middle of a turn (a string where a number belongs) or a silent change
of behaviour (an unknown grounding mode, a negative number of attempts).

A value is checked against its type (an ``int`` is a fine ``float``; a string is not a number and a
``bool`` is not an ``int``; a ``Literal`` names the allowed choices) and against the marks in its
field's metadata, one vocabulary shared with the request policy (keel/server/settings_policy.py):

* ``minimum`` / ``maximum`` (inclusive) and ``exclusive_minimum``: numeric bounds;
* ``below_setting``: the value must be smaller than another setting's (checked where both are present);
* ``min_chars``: a string (or each string of a list) needs at least this many characters;
* ``format: "regex"``: a string (or each string of a list) must compile as a regular expression;
* ``choices``: a string (or each string of a list) must be one of these;
* ``url_schemes``: a URL (when set) must use one of these schemes;
* ``env``: the environment variable the default is read from, named when its value is wrong.

``minimum``, ``maximum``, ``exclusive_minimum`` and the doc go into the JSON schemas LangGraph Studio
and LangServe show (keel/core/configuration.py), with the JSON Schema spelling of each keyword.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import typing
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import fields
from functools import cache
from types import NoneType, UnionType
from typing import Any
from urllib.parse import urlsplit

# Ready-made bounds, spread into a field's metadata: ``metadata={"doc": ..., **SHARE}``.
SHARE: Mapping[str, float] = {"minimum": 0.0, "maximum": 1.0}  # similarities, overlaps, probabilities, penalties
NON_NEGATIVE: Mapping[str, int] = {"minimum": 0}  # counts and sizes where 0 means none or off
AT_LEAST_ONE: Mapping[str, int] = {"minimum": 1}  # counts and sizes that cannot be empty
POSITIVE: Mapping[str, int] = {"exclusive_minimum": 0}  # durations, rates and factors above zero

# A field's metadata mark -> the JSON Schema keyword it is exported as.
SCHEMA_KEYWORDS: Mapping[str, str] = {
    "minimum": "minimum", "maximum": "maximum", "exclusive_minimum": "exclusiveMinimum", "min_chars": "minLength",
}
SIMILAR_NAME_CUTOFF = 0.6  # difflib ratio from which an unknown setting is suggested its nearest known name


class ConfigurationError(ValueError):
    """Settings that cannot be used: ``fields`` names each bad setting (or unknown key), ``problems``
    says what is wrong with each; the message lists them all."""

    def __init__(self, problems: Mapping[str, str]):
        self.problems = dict(problems)
        self.fields = tuple(self.problems)
        listed = "; ".join(self.problems.values())
        super().__init__(listed if len(self.problems) == 1 else f"{len(self.problems)} invalid settings: {listed}")


def unknown_key_problems(keys: Iterable[str], known: Collection[str]) -> dict[str, str]:
    """What to say about each key that is not a setting: its name and the nearest setting's."""
    problems = {}
    for key in keys:
        near = difflib.get_close_matches(str(key), list(known), n=1, cutoff=SIMILAR_NAME_CUTOFF)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        problems[str(key)] = f"unknown setting '{key}'{hint}"
    return problems


class CheckedSettings:
    """Base of every setting group: making one checks all its fields (``check_settings``)."""

    def __post_init__(self) -> None:
        check_settings(self)


def check_settings(settings: Any) -> None:
    """Check every field of a settings dataclass in place; a list given for a tuple setting is kept
    as a tuple. Raises ``ConfigurationError`` naming every bad field at once."""
    problems: dict[str, str] = {}
    for name, check in _checks(type(settings)):
        value = getattr(settings, name)
        try:
            checked = check(value, settings)
        except _Bad as bad:
            # every problem ends ", got <value>" (the checks below): a secret's is cut there
            said = str(bad) if name not in _secret_names(type(settings)) else str(bad).split(", got ")[0]
            problems[name] = f"{name} {said}{_from_environment(type(settings), name, value)}"
            continue
        if checked is not value:
            object.__setattr__(settings, name, checked)
    if problems:
        raise ConfigurationError(problems)


@cache
def _secret_names(cls: type) -> frozenset[str]:
    """The fields kept out of the settings' repr (keys, tokens): a problem with one never shows its value."""
    return frozenset(f.name for f in fields(cls) if not f.repr)


class _Bad(Exception):
    """One value's problem, worded to follow the setting's name."""


Check = Callable[[Any, Any], Any]


@cache
def _checks(cls: type) -> tuple[tuple[str, Check], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((item.name, _check_for(item.name, hints[item.name], item.metadata)) for item in fields(cls))


def _from_environment(cls: type, name: str, value: Any) -> str:
    variable = next((item.metadata.get("env") for item in fields(cls) if item.name == name), None)
    if variable and value is not None and os.environ.get(variable, "").strip() == str(value):
        return f" (set by the environment variable {variable})"
    return ""


def _check_for(name: str, hint: Any, marks: Mapping[str, Any]) -> Check:
    """The check of one field: its type first, then its marks."""
    optional, base = _optional(hint)
    kind = _kind_check(name, base)
    extra = _mark_checks(marks)

    def check(value: Any, settings: Any) -> Any:
        if value is None:
            if optional:
                return value
            raise _Bad("must be set, got None")
        value = kind(value)
        for mark in extra:
            mark(value, settings)
        return value

    return check


def _optional(hint: Any) -> tuple[bool, Any]:
    if typing.get_origin(hint) in (typing.Union, UnionType) and NoneType in typing.get_args(hint):
        rest = [arg for arg in typing.get_args(hint) if arg is not NoneType]
        return True, rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]  # noqa: UP007 - built from a tuple at run time
    return False, hint


def _kind_check(name: str, hint: Any) -> Callable[[Any], Any]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return _literal(args)
    if hint is bool:
        return _boolean
    if hint is int:
        return _integer
    if hint is float:
        return _number
    if hint is str:
        return _string
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis and args[0] is str:
        return _strings
    if origin is dict and args == (str, str):
        return _string_map
    raise TypeError(f"setting {name}: no check for values of type {hint!r}; add one to keel/core/settings/checks.py")


def _literal(choices: tuple) -> Callable[[Any], Any]:
    listed = ", ".join(repr(choice) for choice in choices)

    def literal(value: Any) -> Any:
        if not any(value == choice and type(value) is type(choice) for choice in choices):
            raise _Bad(f"must be one of {listed}, got {value!r}")
        return value

    return literal


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Bad(f"must be true or false, got {value!r}")
    return value


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(f"must be an integer, got {value!r}")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Bad(f"must be a number, got {value!r}")
    if not math.isfinite(value):
        raise _Bad(f"must be a finite number, got {value!r}")
    return value


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise _Bad(f"must be a string, got {value!r}")
    return value


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise _Bad(f"must be a list of strings, got {value!r}")
    if not all(isinstance(item, str) for item in value):
        raise _Bad(f"must be a list of strings, got {value!r}")
    return value if isinstance(value, tuple) else tuple(value)


def _string_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise _Bad(f"must be an object of strings, got {value!r}")
    return value


def _mark_checks(marks: Mapping[str, Any]) -> list[Callable[[Any, Any], None]]:
    checks: list[Callable[[Any, Any], None]] = []
    low, high, above = marks.get("minimum"), marks.get("maximum"), marks.get("exclusive_minimum")
    if low is not None or high is not None or above is not None:
        checks.append(_bounds(low, high, above))
    if marks.get("below_setting"):
        checks.append(_below(marks["below_setting"]))
    if marks.get("min_chars"):
        checks.append(_each_text(lambda text: len(text) >= marks["min_chars"],
                                 f"needs at least {marks['min_chars']} character(s)"))
    if marks.get("format") == "regex":
        checks.append(_regex)
    if marks.get("choices"):
        choices = tuple(marks["choices"])
        checks.append(_each_text(lambda text: text in choices, f"must be one of {', '.join(choices)}"))
    if marks.get("url_schemes"):
        checks.append(_url(tuple(marks["url_schemes"])))
    return checks


def _bounds(low: Any, high: Any, above: Any) -> Callable[[Any, Any], None]:
    def bounded(value: Any, _settings: Any) -> None:
        if low is not None and value < low:
            raise _Bad(f"must be at least {low}, got {value!r}")
        if high is not None and value > high:
            raise _Bad(f"must be at most {high}, got {value!r}")
        if above is not None and value <= above:
            raise _Bad(f"must be greater than {above}, got {value!r}")

    return bounded


def _below(other: str) -> Callable[[Any, Any], None]:
    def below(value: Any, settings: Any) -> None:
        limit = getattr(settings, other, None)
        if isinstance(limit, (int, float)) and not isinstance(limit, bool) and value >= limit:
            raise _Bad(f"must be smaller than {other} ({limit}), got {value!r}")

    return below


def _each_text(test: Callable[[str], bool], wording: str) -> Callable[[Any, Any], None]:
    def each(value: Any, _settings: Any) -> None:
        for text in (value,) if isinstance(value, str) else value:
            if not test(text):
                raise _Bad(f"{wording}, got {text!r}")

    return each


def _regex(value: Any, _settings: Any) -> None:
    for text in (value,) if isinstance(value, str) else value:
        try:
            re.compile(text)
        except re.error as error:
            raise _Bad(f"must be a valid regular expression, got {text!r} ({error})") from None


def _url(schemes: tuple[str, ...]) -> Callable[[Any, Any], None]:
    listed = ", ".join(f"{scheme}://" for scheme in schemes)

    def url(value: Any, _settings: Any) -> None:
        parts = urlsplit(value)
        if parts.scheme.lower() not in schemes or not (parts.netloc or parts.path):
            raise _Bad(f"must be a URL starting with {listed}, got {value!r}")

    return url
