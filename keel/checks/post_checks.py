"""Post-generation pattern checks (missing or invented citations, hallucination indicator phrases, an
answer far longer than its context), each failure a reason code.

Pure: the caller passes the answer, the passages shown to the model and the configuration.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from keel.core.settings.grounding import GroundingSettings
from keel.core.text import cited_sources

NO_CITATIONS = "no_citations"
UNKNOWN_CITATION = "unknown_citation"
INDICATOR_PHRASE = "hallucination_indicator"
LONGER_THAN_CONTEXT = "longer_than_context"


def post_generation_reasons(answer: str, passages: Sequence[str], cfg: GroundingSettings) -> list[str]:
    """Reason codes for every failed check; empty when the answer passes them all."""
    reasons: list[str] = []
    cited = cited_sources(answer)
    if cfg.require_citations and not cited:
        reasons.append(NO_CITATIONS)
    unknown = [n for n in cited if n < 1 or n > len(passages)]
    if unknown:
        reasons.append(f"{UNKNOWN_CITATION}:{','.join(map(str, unknown))}")
    context = " ".join(passages).lower()
    lowered = answer.lower()
    for phrase in cfg.hallucination_indicators:
        # A phrase the context itself uses is quoting, not reaching for outside knowledge.
        if re.search(rf"\b{re.escape(phrase)}\b", lowered) and phrase not in context:
            reasons.append(f"{INDICATOR_PHRASE}:{phrase}")
    context_chars = sum(len(p) for p in passages)
    if context_chars and len(answer) > cfg.max_answer_context_ratio * context_chars:
        reasons.append(LONGER_THAN_CONTEXT)
    return reasons
