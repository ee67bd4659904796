"""Keel's ingestion graph, so LangGraph Studio users can add documents where they ask about them:

    START → check_uploads → ingest_uploads → END

Its input is the documents themselves (``{filename, data_base64 or text, mime_type?}``, with an
optional ``conversation_id``), never a path on the server; its output is the ingest report of
``keel ingest --json`` and ``POST /ingest``. The steps (nodes/check_uploads.py,
nodes/ingest_uploads.py) apply the same pipeline, limits and id checks as ``/ingest``, and file
the documents under the run's own user, which is where the chat graph (graph/chat_graph.py) looks
for them.
"""

from __future__ import annotations

from functools import partial

from langchain_core.embeddings import Embeddings
from langgraph.graph import END, START, StateGraph

from keel.core.configuration import RunContext
from keel.core.ingest_state import IngestInput, IngestOutput, IngestState
from keel.nodes.check_uploads import check_uploads
from keel.nodes.ingest_uploads import ingest_uploads


def build_ingestion_graph(embeddings: Embeddings | None = None, *, store=None):
    """Compile the ingestion graph. ``embeddings`` are Keel's default unless given (give the chat
    graph's own, so questions are embedded as the documents were); ``store`` is the configured
    RediSearch chunk store unless given."""
    builder = StateGraph(
        IngestState, context_schema=RunContext, input_schema=IngestInput, output_schema=IngestOutput
    )
    builder.add_node("check_uploads", check_uploads)
    builder.add_node("ingest_uploads", partial(ingest_uploads, store=store, embeddings=embeddings))
    builder.add_edge(START, "check_uploads")
    builder.add_edge("check_uploads", "ingest_uploads")
    builder.add_edge("ingest_uploads", END)
    return builder.compile(name="keel_ingest")


# The compiled graph LangGraph Studio loads as "keel_ingest" (langgraph.json); `from keel.graph import ingestion_graph`.
graph = build_ingestion_graph()
