"""Text splitters: token-bounded at word boundaries, and parent-child chunking (seed 003)."""

from splitters.parent_child import ParentChildSplitter, ParentWithChildren
from splitters.token_boundary import TokenBoundarySplitter

__all__ = ["ParentChildSplitter", "ParentWithChildren", "TokenBoundarySplitter"]
