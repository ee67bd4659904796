"""The ingestion graph's second step: store the files a run sent (checked by nodes/check_uploads.py)
with the pipeline that ``keel ingest`` and ``POST /ingest`` use (loaders/pipeline.py ``ingest_base64``).

A file that cannot be read (encrypted, corrupt, no text) is reported by name in the ingest
report's ``errors`` while the other files are stored, and what a stored file lost (a page, a
picture's text) in its ``warnings``, as ``keel ingest`` reports them.
"""

from __future__ import annotations

import base64
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.runnables import RunnableConfig

from keel.core.configuration import Configuration
from keel.core.ingest_state import IngestOutput, IngestState
from keel.loaders.pipeline import IngestReport, ingest_base64
from keel.models.embeddings import get_embeddings
from keel.nodes.check_uploads import conversation, owner
from keel.stores.connections import get_vector_store


def ingest_uploads(
    state: IngestState, config: RunnableConfig, *, store: Any = None, embeddings: Embeddings | None = None
) -> IngestOutput:
    """Store each file as ``POST /ingest`` stores an upload, and report them together."""
    cfg = Configuration.from_runnable_config(config)
    if store is None:
        store = get_vector_store(cfg, embeddings or get_embeddings(cfg))
    user_id, conversation_id = owner(state, cfg), conversation(state, cfg)
    report = IngestReport()
    for upload in state["files"]:
        text = upload.get("text")
        data = base64.b64encode(text.encode("utf-8")).decode("ascii") if text is not None else upload["data_base64"]
        one = ingest_base64(upload["filename"], data, store, cfg, user_id=user_id, conversation_id=conversation_id,
                            mime_type=upload.get("mime_type"), password=upload.get("password"))
        report.documents += one.documents
        report.parents += one.parents
        report.children += one.children
        report.seconds += one.seconds
        report.errors += one.errors
        report.doc_ids += one.doc_ids
        report.warnings += one.warnings
    report.seconds = round(report.seconds, 3)
    return report.to_dict()  # type: ignore[return-value]
