"""The LangServe app: Keel's graph at /chat (invoke, batch, stream, stream_log, stream_events,
playground, schemas) and its filtered live answer at /chat/events.

Who asks and in which conversation travel in ``config.configurable`` (user_id, thread_id), like
every other knob of ``graph.configuration.Configuration``. Conversations persist in MongoDB.

No route shows the model's raw tokens: the raw model calls run without the callback handlers that
stream to a client (``chains.generation.private_model_config``), so /stream_log, /stream_events and
the playground see the graph's nodes and their checked outputs, never a reasoning marker. Live
answer text goes out through /chat/events: Server-Sent Events carrying the answer loop's custom
events (keel.attempt, keel.token filtered, keel.continuation with the indicator, keel.revert /
keel.discard retractions), then keel.final with the checked answer, which replaces whatever draft
the client showed.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import StreamingResponse
from langserve import add_routes
from pydantic import BaseModel, Field

from graph.configuration import Configuration


def create_app(graph=None, cfg: Configuration | None = None, store=None) -> FastAPI:
    """Build the app; ``graph`` defaults to Keel's graph with the MongoDB checkpointer, ``store``
    (where /ingest writes) to the configured RediSearch chunk store, created on first upload."""
    if graph is None:
        from graph import build_graph
        from stores.history import get_checkpointer

        graph = build_graph(checkpointer=get_checkpointer(cfg or Configuration()))
    app = FastAPI(title="Keel", description="Grounded, cited answers from your documents.", version="0.1.0")

    @app.get("/healthz")
    def healthz() -> dict:
        return {"status": "ok"}

    add_ingest_route(app, cfg or Configuration(), store)
    add_routes(
        app,
        graph,
        path="/chat",
        config_keys=["configurable"],
        per_req_config_modifier=with_conversation_id,
        playground_type="default",
    )
    add_events_route(app, graph)
    return app


# What keel.final tells the client: the outer graph's result, as `keel ask --json` shows it.
FINAL_KEYS = ("answer", "status", "route", "sources", "quality", "confidence", "attempts", "continuations", "usage",
              "reasons", "sources_markdown")


class EventsRequest(BaseModel):
    """Like LangServe's /invoke body: the graph input and its config (configurable only)."""

    input: dict[str, Any] = Field(..., description='The graph input, e.g. {"messages": [{"type": "human", "content": "When ...?"}]}.')
    config: dict[str, Any] = Field(default_factory=dict, description="{'configurable': {user_id, thread_id, ...}}")


def _sse(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


def add_events_route(app: FastAPI, graph) -> None:
    """POST /chat/events: the answer loop's custom events as Server-Sent Events, then keel.final."""

    @app.post("/chat/events")
    async def chat_events(body: EventsRequest, request: Request) -> StreamingResponse:
        config = with_conversation_id({"configurable": dict(body.config.get("configurable") or {})}, request)

        async def events():
            final: dict = {}
            try:
                async for namespace, mode, payload in graph.astream(
                    body.input, config, stream_mode=["custom", "values"], subgraphs=True
                ):
                    if mode == "custom" and isinstance(payload, dict) and str(payload.get("event", "")).startswith(
                        "keel."
                    ):
                        yield _sse(payload["event"], payload)
                    elif mode == "values" and not namespace:
                        final = payload
            except Exception as error:  # noqa: BLE001 - the stream is open: report in-band, not as a 500
                yield _sse("keel.error", {"event": "keel.error", "error": f"{type(error).__name__}: {error}"})
                return
            result = {key: final.get(key) for key in FINAL_KEYS if key in final}
            result["conversation_id"] = config["configurable"]["thread_id"]
            yield _sse("keel.final", {"event": "keel.final", **result})

        return StreamingResponse(events(), media_type="text/event-stream")


def with_conversation_id(config: dict, request) -> dict:
    """A request without a thread_id starts a new conversation instead of failing."""
    import uuid

    configurable = dict(config.get("configurable") or {})
    if not configurable.get("thread_id"):
        configurable["thread_id"] = uuid.uuid4().hex
    return {**config, "configurable": configurable}


class IngestRequest(BaseModel):
    """A document uploaded as base64, as API clients send it."""

    filename: str = Field(..., description="The file's name; its extension picks the loader.")
    data_base64: str = Field(..., description="The file's bytes, base64 (a data: URL prefix is accepted).")
    user_id: str = Field(..., description="Owner of the document (the uuid tag).")
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
            from models.embeddings import get_embeddings
            from stores.connections import get_vector_store

            holder["store"] = get_vector_store(cfg, get_embeddings(cfg))
        return holder["store"]

    @app.post("/ingest")
    def ingest_upload(request: IngestRequest) -> dict:
        from loaders.pipeline import ingest_base64

        try:
            report = ingest_base64(
                request.filename, request.data_base64, chunk_store(), cfg, user_id=request.user_id,
                conversation_id=request.conversation_id, mime_type=request.mime_type, password=request.password,
            )
        except ValueError as exc:  # an invalid user_id / conversation_id: the caller's mistake
            raise HTTPException(status_code=400, detail=str(exc)) from exc
        if not report.documents:
            raise HTTPException(status_code=422, detail=report.to_dict())
        return report.to_dict()
