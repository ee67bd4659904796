"""The caller's documents for the web page: ``GET /documents`` lists them, ``DELETE
/documents/{doc_id}`` removes one. Uploads stay ``POST /ingest`` (keel/server/app.py).

The user is always the credential's, never a name in the URL or the body, and a document is looked
up only among the caller's own: another user's document id is answered exactly like an unknown one
(404), so ids cannot be probed. An id is checked as /ingest checks one (a 400 names the problem).
"""

from __future__ import annotations

from fastapi import FastAPI, HTTPException, Request

from keel.core.configuration import Configuration
from keel.models.embeddings import get_embeddings
from keel.server.ownership import conversation_of
from keel.server.web_page import caller
from keel.stores.connections import get_vector_store
from keel.stores.tag_filters import validate_tag_id


def checked_id(name: str, value: str, cfg: Configuration) -> str:
    """An id from a URL, checked like the ids of a chat or upload body; 400 when it cannot be one."""
    try:
        validate_tag_id(name, value)
    except ValueError as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from exc
    if len(value) > cfg.max_request_id_chars:
        raise HTTPException(status_code=400, detail=f"{name} must be an id of at most {cfg.max_request_id_chars} "
                                                    "characters")
    return value


def document_row(document: dict, user_id: str) -> dict:
    """What the page shows of a stored document: its name, pages, when it was added and the caller's
    id of the conversation it was uploaded in."""
    return {
        "doc_id": document["doc_id"],
        "name": document["source"],
        "pages": document["pages"],
        "ingested_at": document["ingested_at"],  # seconds since the epoch
        "conversation_id": conversation_of(user_id, document["conversation_id"])
        if document.get("conversation_id") else None,
    }


def add_document_routes(app: FastAPI, cfg: Configuration, store=None) -> None:
    """GET /documents and DELETE /documents/{doc_id} over ``store`` (by default the configured
    RediSearch chunk store, opened on first use, as /ingest does)."""
    holder = {"store": store}

    def chunk_store():
        if holder["store"] is None:
            holder["store"] = get_vector_store(cfg, get_embeddings(cfg))
        return holder["store"]

    @app.get("/documents")
    def list_documents(request: Request) -> dict:
        user_id = caller(request)
        documents = chunk_store().list_documents(user_id)
        newest_first = sorted(documents, key=lambda document: -float(document.get("ingested_at") or 0))
        return {"documents": [document_row(document, user_id) for document in newest_first]}

    @app.delete("/documents/{doc_id}")
    def delete_document(doc_id: str, request: Request) -> dict:
        checked_id("doc_id", doc_id, cfg)
        if not chunk_store().delete_document(caller(request), doc_id):
            raise HTTPException(status_code=404, detail="document not found")
        return {"deleted": doc_id}
