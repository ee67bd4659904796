"""Text splitters: the Adaptive Token Boundary splitter, parent-child chunking, mixed
text-and-image content, and n-gram importance hints for the embedded text."""

from splitters.adaptive_token_boundary import AdaptiveTokenBoundarySplitter
from splitters.mixed_content import MixedContentSplitter, image_description
from splitters.ngram_hints import ImportantNgram, NgramImportance
from splitters.parent_child import ParentChildSplitter, ParentWithChildren

TokenBoundarySplitter = AdaptiveTokenBoundarySplitter  # its earlier name, kept for old imports

__all__ = [
    "AdaptiveTokenBoundarySplitter",
    "ImportantNgram",
    "MixedContentSplitter",
    "NgramImportance",
    "ParentChildSplitter",
    "ParentWithChildren",
    "TokenBoundarySplitter",
    "image_description",
]
