"""Is a generated answer finished, or was it cut off? (seed 000 §2, basic form)

Issue-level depth (structure plans, numbered lists, semantic checks) grows here later.
"""

from __future__ import annotations

import re

INCOMPLETE_ENDINGS = re.compile(r"(,|;|:|\band|\bor|\bbut|\bwith|\bfor|\bto|\bthe|\ba|\ban|\bof)\s*$", re.I)
FINISHED = re.compile(r"([.!?\"')\]]|</answer>|```)\s*$")


def looks_complete(text: str) -> bool:
    stripped = text.rstrip()
    if not stripped:
        return False
    if INCOMPLETE_ENDINGS.search(stripped):
        return False
    return bool(FINISHED.search(stripped))
