"""How many examples a property test draws, relative to the active Hypothesis profile.

A test that needs more (or, being slow, fewer) examples than the profile's default asks for
``examples(n)``: n under the default 100, scaled up with the profile (``explore`` draws 20x).
"""

from __future__ import annotations

from hypothesis import settings

BASELINE_EXAMPLES = 100  # Hypothesis's own default, what the per-test numbers are relative to


def examples(count: int) -> int:
    return max(1, count * settings.default.max_examples // BASELINE_EXAMPLES)
