"""Configuration settings given on an eval's command line as ``FIELD=VALUE``: what an experiment
changes for every question of a run."""

from __future__ import annotations

import dataclasses
import typing

from keel.core.configuration import Configuration


def settings_overrides(pairs: list[str], option: str = "--set") -> dict:
    """``FIELD=VALUE`` pairs as Configuration values, typed like the field; unknown fields refused.
    ``option`` is the command-line option the pairs came with, named in the error."""
    fields = {f.name: f for f in dataclasses.fields(Configuration)}
    overrides = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or name not in fields:
            raise ValueError(f"{option} {pair!r}: expected FIELD=VALUE with a Configuration field")
        if name in ("user_id", "thread_id"):
            raise ValueError(f"{option} {pair!r}: an eval asks as its own fresh user, in a new conversation per question")
        default = getattr(Configuration(), name)
        if default is None and typing.get_type_hints(Configuration)[name] == (str | None):
            default = ""  # an optional text setting (escalation_model): set as text
        if not isinstance(default, (bool, int, float, str)):
            raise ValueError(f"{option} {pair!r}: only true/false, number and text settings can be set here")
        if isinstance(default, bool):
            if value.lower() not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise ValueError(f"{option} {pair!r}: {name} is true or false")
            overrides[name] = value.lower() in ("true", "1", "yes", "on")
        elif isinstance(default, (int, float)):
            overrides[name] = type(default)(value)
        else:
            overrides[name] = value
    Configuration(**overrides)  # the configuration's own checks name a bad value
    return overrides
