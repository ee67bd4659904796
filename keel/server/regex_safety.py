"""Patterns a deployment configures are checked once, at start-up, for catastrophic backtracking.

Two checks: a static one that refuses a repeat nested inside another unbounded repeat (``(a+)+``,
``(\\w*)*``, ``(a|aa)+`` style alternation inside a repeat), and a timed trial that runs each pattern
on inputs built from its own literals in a child process, killed after the deadline. Requests
cannot send patterns at all (they are deployment settings), so this guards against configuration
mistakes rather than callers.
"""

from __future__ import annotations

import multiprocessing
import re
from dataclasses import fields

from keel.core.configuration import Configuration

try:  # Python 3.11+
    from re import _constants as sre_constants
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

_REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT}
_TRIAL_LENGTH = 5000  # characters of adversarial input per trial: enough to expose exponential time


class UnsafePattern(ValueError):
    """A configured regular expression that could freeze the server."""


def pattern_settings(cfg: Configuration) -> dict[str, list[str]]:
    """Every configured pattern by setting name (fields named ``*_pattern`` or ``*_patterns``)."""
    found: dict[str, list[str]] = {}
    for item in fields(cfg):
        if item.name.endswith("_pattern") or item.name.endswith("_patterns"):
            value = getattr(cfg, item.name)
            found[item.name] = [value] if isinstance(value, str) else list(value or ())
    return found


def nested_repeat(pattern: str) -> str | None:
    """Why ``pattern`` can backtrack exponentially (a nested unbounded repeat), or None."""
    try:
        parsed = sre_parse.parse(pattern)
    except re.error as error:
        raise UnsafePattern(f"not a valid regular expression: {error}") from error
    return _scan(parsed, inside_unbounded=False)


def _scan(items, inside_unbounded: bool) -> str | None:
    for op, arg in items:
        if op in _REPEATS:
            low, high, body = arg
            unbounded = high == sre_constants.MAXREPEAT
            if inside_unbounded and (unbounded or high > 1):
                return "a repeat nested inside an unbounded repeat"
            if unbounded and _has_ambiguous_branch(body):
                return "an alternation with overlapping branches inside an unbounded repeat"
            found = _scan(body, inside_unbounded or unbounded)
            if found:
                return found
        elif op is sre_constants.SUBPATTERN:
            found = _scan(arg[-1], inside_unbounded)
            if found:
                return found
        elif op is sre_constants.BRANCH:
            for branch in arg[1]:
                found = _scan(branch, inside_unbounded)
                if found:
                    return found
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            found = _scan(arg[1], inside_unbounded)
            if found:
                return found
    return None


def _has_ambiguous_branch(body) -> bool:
    """An alternation directly in a repeat whose branches can start with the same character."""
    for op, arg in body:
        if op is sre_constants.SUBPATTERN:
            return _has_ambiguous_branch(arg[-1])
        if op is sre_constants.BRANCH:
            starts = [_first_literal(branch) for branch in arg[1]]
            known = [start for start in starts if start is not None]
            return len(known) != len(set(known)) or None in starts and len(starts) > 1
    return False


def _first_literal(branch):
    for op, arg in branch:
        if op is sre_constants.LITERAL:
            return arg
        return None
    return None


def _trial_inputs(pattern: str) -> list[str]:
    """Long runs of the pattern's own letters ending in a character that breaks the match."""
    letters = sorted({ch for ch in pattern if ch.isalnum()}) or ["a"]
    runs = [ch * _TRIAL_LENGTH for ch in letters[:8]] + [" ".join(letters) * (_TRIAL_LENGTH // 10)]
    return [run + end for run in runs for end in ("\x00", "!")]


def _run_trials(pattern: str) -> None:
    compiled = re.compile(pattern, re.IGNORECASE)
    for text in _trial_inputs(pattern):
        compiled.search(text)


def finishes_in_time(pattern: str, timeout_s: float) -> bool:
    """Run the pattern on adversarial inputs in a child process; False when it is still running."""
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    child = context.Process(target=_run_trials, args=(pattern,), daemon=True)
    child.start()
    child.join(timeout_s)
    if child.is_alive():
        child.kill()
        child.join()
        return False
    return True


def check_configured_patterns(cfg: Configuration) -> dict[str, list[re.Pattern]]:
    """Compile every configured pattern once; ``UnsafePattern`` names the first unsafe one."""
    compiled: dict[str, list[re.Pattern]] = {}
    for name, patterns in pattern_settings(cfg).items():
        compiled[name] = []
        for pattern in patterns:
            try:
                reason = nested_repeat(pattern)
            except UnsafePattern as error:
                raise UnsafePattern(f"{name}: {error}") from None
            if reason:
                raise UnsafePattern(f"{name} {pattern!r} can backtrack catastrophically: {reason}")
            if not finishes_in_time(pattern, cfg.regex_check_timeout_s):
                raise UnsafePattern(f"{name} {pattern!r} did not finish within {cfg.regex_check_timeout_s}s "
                                    "on adversarial input")
            compiled[name].append(re.compile(pattern, re.IGNORECASE))
    return compiled
