"""Keel's graphs. ``from keel.graph import graph`` gives the compiled chat graph; ``build_graph``
compiles one with your own chat model, embeddings, retriever or checkpointer (``memory=True``:
Keel's MongoDB conversation store). ``ingestion_graph`` stores uploaded documents for the chat
graph to answer from (not named ``ingest_graph``, which is its module); ``build_ingestion_graph``
compiles one with your own embeddings or store."""

from __future__ import annotations

from keel.graph.chat_graph import build_graph, graph
from keel.graph.ingest_graph import build_ingestion_graph
from keel.graph.ingest_graph import graph as ingestion_graph

__all__ = ["graph", "build_graph", "ingestion_graph", "build_ingestion_graph"]
