"""Text splitters: the Adaptive Token Boundary splitter, parent-child chunking, mixed
text-and-image content, and n-gram importance hints for the embedded text."""

from keel.splitters.adaptive_token_boundary import AdaptiveTokenBoundarySplitter
from keel.splitters.mixed_content import MixedContentSplitter, image_description
from keel.splitters.ngram_hints import ImportantNgram, NgramImportance
from keel.splitters.parent_child import ParentChildSplitter, ParentWithChildren

__all__ = [
    "AdaptiveTokenBoundarySplitter",
    "ImportantNgram",
    "MixedContentSplitter",
    "NgramImportance",
    "ParentChildSplitter",
    "ParentWithChildren",
    "image_description",
]
