"""Keel's graphs. ``from graph import graph`` gives the compiled chat graph; ``build_graph``
compiles one with your own chat model, embeddings, retriever or checkpointer."""

from __future__ import annotations

from typing import Any

__all__ = ["graph", "build_graph"]


def __getattr__(name: str) -> Any:  # lazy: importing graph.configuration must stay cheap
    if name in __all__:
        from keel.graph import chat_graph

        return getattr(chat_graph, name)
    raise AttributeError(name)
