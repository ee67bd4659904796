"""What is refused before any retrieval or model call: questions over the token budget and blocked
phrases."""

from __future__ import annotations

from dataclasses import dataclass, field

from keel.core.settings.checks import AT_LEAST_ONE, CheckedSettings
from keel.core.settings.scope import DEPLOYMENT, default_scope


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True, frozen=True)
class GuardrailSettings(CheckedSettings):
    """The input budget and the moderator's extra phrases."""

    max_input_tokens: int = field(
        default=1024,
        metadata={"doc": "A question longer than this many tokens is refused (exceeded_token_budget).", **AT_LEAST_ONE},
    )
    blocked_terms: tuple[str, ...] = field(
        default=(),
        metadata={"doc": "Extra phrases the keyword moderator refuses, on top of its built-in list.", "min_chars": 1},
    )
