"""The LangServe app: Keel's graph at /chat (invoke, batch, stream, stream_log, stream_events,
playground, schemas) and its filtered live answer at /chat/events, plus /ingest for uploads, and the
web chat page at / with the routes it reads (keel/server/web_page.py, document_routes.py,
conversation_routes.py).

It serves several users at once: every route but /healthz needs an API key (keel/server/auth.py), the
user id comes from the key, a conversation id is the caller's own name for it
(keel/server/ownership.py), a request may set only the settings marked for requests
(keel/server/settings_policy.py), and limits on size, rate, concurrency and time hold for everyone
(keel/server/gate.py). Errors tell the client a status, a short message and the request id
(keel/server/errors.py).

No route shows the model's raw tokens: the raw model calls run without the callback handlers that
stream to a client (``keel.chains.generation.private_model_config``), so /stream_log, /stream_events and
the playground see the graph's nodes and their checked outputs, never a reasoning marker. The
accepted answer streams there as the chunks of one chat-model run, ``keel_answer``
(``keel.chains.answer_relay``): on_chat_model_stream events in /stream_events, its streamed output
in /stream_log. A chunk there cannot be taken back, so the live draft goes out through /chat/events
only: Server-Sent Events carrying the answer loop's custom events (keel.progress, what the search
found; keel.attempt, keel.token filtered, keel.continuation with the indicator, keel.revert / keel.discard retractions), then
keel.final with the checked answer, which replaces whatever draft the client showed, and its
citations: the passages behind it, numbered as its [Source N], with their text.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from functools import partial
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import StreamingResponse
from langserve import add_routes
from pydantic import BaseModel, Field

from keel.core.configuration import Configuration
from keel.loaders.pipeline import REDIS_UNAVAILABLE, ingest_base64
from keel.models.cancellation import GenerationCancelled
from keel.models.embeddings import get_embeddings
from keel.server.auth import ApiKeys
from keel.server.conversation_routes import add_conversation_routes, turn_citations
from keel.server.document_routes import add_document_routes
from keel.server.errors import INTERNAL_ERROR, add_error_handlers, request_id_of
from keel.server.gate import Guard, RequestGate
from keel.server.ownership import ThreadOwners, conversation_of
from keel.server.regex_safety import check_configured_patterns
from keel.server.review_routes import add_review_routes
from keel.server.served_graph import add_playground_input_schema, serve_graph, served_config
from keel.server.settings_policy import deployment_settings
from keel.server.web_page import add_web_page
from keel.stores.connections import get_vector_store
from keel.stores.history import get_checkpointer
from keel.stores.review_queue import ReviewQueue

log = logging.getLogger("keel.server")
# LangServe routes offered; not config_hashes (settings in the URL), feedback or trace links.
LANGSERVE_ENDPOINTS = ("invoke", "batch", "stream", "stream_log", "stream_events", "playground", "input_schema",
                       "output_schema", "config_schema")


def create_app(graph=None, cfg: Configuration | None = None, store=None, *, api_keys=None, owners=None,
               require_auth: bool = True, shared_limits: bool | None = None,
               review_queue: ReviewQueue | None = None) -> FastAPI:
    """Build the app; ``graph`` defaults to Keel's graph with the MongoDB checkpointer, ``store``
    (where /ingest writes) to the configured RediSearch chunk store, created on first upload.
    ``api_keys`` (server.auth.ApiKeys) and ``owners`` (server.ownership.ThreadOwners) default to the
    configured MongoDB; ``require_auth=False`` is for development on loopback only. ``shared_limits``:
    the per-user rate and the wrong-key bound counted in the configured Redis, one count for every
    replica (keel/server/shared_limits.py); by default they are when the conversation owners are the
    configured ones too (an app handed its own registry, a test's, keeps its counts in its process).
    ``review_queue``: the answers held for human review (the /review routes), by default in the
    configured MongoDB."""
    if shared_limits is None:
        shared_limits = owners is None
    cfg = cfg or Configuration()
    check_configured_patterns(cfg)  # a pattern that could freeze the server stops it from starting
    if require_auth and api_keys is None:
        api_keys = ApiKeys.from_config(cfg)
        if not api_keys.has_users():
            log.warning("no API users yet: every request will be refused (401); add one with `keel users add NAME`")
    if owners is None:
        owners = ThreadOwners.from_config(cfg)
    review_queue = review_queue or ReviewQueue.from_settings(cfg, cfg)
    if graph is None:  # imported here: keel.graph compiles Keel's default graph on import
        from keel.graph import build_graph

        graph = build_graph(checkpointer=get_checkpointer(cfg), review_queue=review_queue)
    served = serve_graph(graph)
    per_request = partial(served_config, cfg=cfg, deployment=deployment_settings(cfg))
    app = FastAPI(title="Keel", description="Grounded, cited answers from your documents.", version="0.1.0")
    add_error_handlers(app)

    @app.get("/healthz")
    def healthz() -> dict:
        return {"status": "ok"}

    add_ingest_route(app, cfg, store)
    add_routes(
        app,
        served,
        path="/chat",
        config_keys=["configurable"],
        per_req_config_modifier=per_request,
        playground_type="default",
        enabled_endpoints=list(LANGSERVE_ENDPOINTS),
    )
    add_playground_input_schema(app, served)
    add_events_route(app, served, per_request)
    add_web_page(app, cfg)  # the chat page for people who ask, at /
    add_document_routes(app, cfg, store)
    add_conversation_routes(app, cfg, graph, owners)
    add_review_routes(app, cfg, graph, review_queue, api_keys if require_auth else None, deployment_settings(cfg))
    app.add_middleware(RequestGate, guard=Guard.from_config(cfg, api_keys if require_auth else None, owners,
                                                            shared=shared_limits))
    return app


# What keel.final tells the client: the outer graph's result, as `keel ask --json` shows it.
FINAL_KEYS = ("answer", "status", "route", "sources", "quality", "confidence", "attempts", "continuations", "usage",
              "reasons", "sources_markdown", "standalone_question")


class EventsRequest(BaseModel):
    """Like LangServe's /invoke body: the graph input and its config (configurable only)."""

    input: dict[str, Any] = Field(..., description='The graph input, e.g. {"messages": [{"type": "human", "content": "When ...?"}]}.')
    config: dict[str, Any] = Field(default_factory=dict, description="{'configurable': {user_id, thread_id, ...}}")


def _sse(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


def add_events_route(app: FastAPI, graph, per_request) -> None:
    """POST /chat/events: the answer loop's custom events as Server-Sent Events, then keel.final.
    A client that disconnects stops its answer: the graph is cancelled at the next event."""

    @app.post("/chat/events")
    async def chat_events(body: EventsRequest, request: Request) -> StreamingResponse:
        config = per_request({"configurable": dict(body.config.get("configurable") or {})}, request)
        request_id = request_id_of(request)

        async def events():
            final: dict = {}
            try:
                async for namespace, mode, payload in graph.astream(
                    body.input, config, stream_mode=["custom", "values"], subgraphs=True
                ):
                    if await request.is_disconnected():
                        log.info("request %s: client disconnected; answer stopped", request_id)
                        return
                    if mode == "custom" and isinstance(payload, dict) and str(payload.get("event", "")).startswith(
                        "keel."
                    ):
                        yield _sse(payload["event"], payload)
                    elif mode == "values" and not namespace:
                        final = payload
            except asyncio.CancelledError:
                log.info("request %s: answer cancelled", request_id)
                raise
            except GenerationCancelled:  # the request is over (keel/server/gate.py): nobody to tell
                log.info("request %s: answer cancelled", request_id)
                return
            except Exception:  # the stream is open: report in-band (no internals), details in the log
                log.exception("request %s: /chat/events failed", request_id)
                yield _sse("keel.error", {"event": "keel.error", "status": 500, "message": INTERNAL_ERROR,
                                          "request_id": request_id})
                return
            result = {key: final.get(key) for key in FINAL_KEYS if key in final}
            configurable = config["configurable"]
            result["conversation_id"] = conversation_of(configurable["user_id"], configurable["thread_id"])
            result["citations"] = turn_citations(final)  # the passages behind the answer, numbered as [Source N]
            yield _sse("keel.final", {"event": "keel.final", **result})

        return StreamingResponse(events(), media_type="text/event-stream")


class IngestRequest(BaseModel):
    """A document uploaded as base64, as API clients send it."""

    filename: str = Field(..., description="The file's name; its extension picks the loader.")
    data_base64: str = Field(..., description="The file's bytes, base64 (a data: URL prefix is accepted).")
    user_id: str | None = Field(None, description="Owner of the document: the caller's own user id (another is a 403).")
    conversation_id: str | None = None
    mime_type: str | None = Field(None, description="Used when the file name has no known extension.")
    password: str | None = Field(None, description="For encrypted PDFs.")


def add_ingest_route(app: FastAPI, cfg: Configuration, store=None) -> None:
    """POST /ingest: decode, load, split, embed and store one upload; the answer is the ingest
    report (documents, parents, children, seconds, errors, doc_ids). A rejected upload is a 422
    whose detail names the file and the reason; bad ids are a 400."""
    holder = {"store": store}

    def chunk_store():
        if holder["store"] is None:
            holder["store"] = get_vector_store(cfg, get_embeddings(cfg))
        return holder["store"]

    @app.post("/ingest")
    def ingest_upload(upload: IngestRequest, request: Request) -> dict:
        try:
            report = ingest_base64(
                upload.filename, upload.data_base64, chunk_store(), cfg, user_id=request.state.user_id,
                conversation_id=upload.conversation_id, mime_type=upload.mime_type, password=upload.password,
            )
        except ValueError as exc:  # an invalid user_id / conversation_id: the caller's mistake
            raise HTTPException(status_code=400, detail=str(exc)) from exc
        body = client_report(report, request_id_of(request))
        if report.store_unavailable:
            raise HTTPException(status_code=503, detail=body, headers={"Retry-After": "30"})
        if not report.documents:
            raise HTTPException(status_code=422, detail=body)
        return body


# An unexpected failure's text is "ExceptionName: message": for the server log, not for a client.
_INTERNAL_ERROR = re.compile(r"^[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt)\b")


def client_report(report, request_id: str) -> dict:
    """The ingest report as a client may see it: Keel's own reasons for a rejected file (encrypted,
    legacy format, too large, no text) stay; a lost store or an unexpected failure becomes a short
    message with the request id, its details left in the server log."""
    body = report.to_dict()
    errors = []
    for error in body["errors"]:
        reason = error["error"]
        if reason.startswith(REDIS_UNAVAILABLE):
            reason = "the document store is unavailable; nothing was changed, try again later"
        elif _INTERNAL_ERROR.match(reason):
            reason = f"the file could not be stored because of an internal error (request id {request_id})"
        errors.append({**error, "error": reason})
    return {**body, "errors": errors}
