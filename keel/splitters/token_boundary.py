"""Former name of the Adaptive Token Boundary splitter, kept so existing imports keep working."""

from keel.splitters.adaptive_token_boundary import (
    AdaptiveTokenBoundarySplitter,
    WordUnits,
    merge_small_tail,
    pack_units,
)

TokenBoundarySplitter = AdaptiveTokenBoundarySplitter

__all__ = ["AdaptiveTokenBoundarySplitter", "TokenBoundarySplitter", "WordUnits", "merge_small_tail", "pack_units"]
