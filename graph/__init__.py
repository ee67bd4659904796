"""Keel's graphs. ``from keel.graph import graph`` gives the compiled chat graph; ``build_graph``
compiles one with your own chat model, embeddings, retriever or checkpointer."""

from __future__ import annotations

from keel.graph.chat_graph import build_graph, graph

__all__ = ["graph", "build_graph"]
