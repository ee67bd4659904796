"""The LangServe app: Keel's graph at /chat (invoke, batch, stream, stream_log, playground).

Who asks and in which conversation travel in ``config.configurable`` (user_id, thread_id), like
every other knob of ``graph.configuration.Configuration``. Conversations persist in MongoDB.
"""

from __future__ import annotations

from fastapi import FastAPI
from langserve import add_routes

from graph.configuration import Configuration


def create_app(graph=None, cfg: Configuration | None = None) -> FastAPI:
    """Build the app; ``graph`` defaults to Keel's graph with the MongoDB checkpointer."""
    if graph is None:
        from graph import build_graph
        from stores.history import get_checkpointer

        graph = build_graph(checkpointer=get_checkpointer(cfg or Configuration()))
    app = FastAPI(title="Keel", description="Grounded, cited answers from your documents.", version="0.1.0")

    @app.get("/healthz")
    def healthz() -> dict:
        return {"status": "ok"}

    add_routes(
        app,
        graph,
        path="/chat",
        config_keys=["configurable"],
        per_req_config_modifier=with_conversation_id,
        playground_type="default",
    )
    return app


def with_conversation_id(config: dict, request) -> dict:
    """A request without a thread_id starts a new conversation instead of failing."""
    import uuid

    configurable = dict(config.get("configurable") or {})
    if not configurable.get("thread_id"):
        configurable["thread_id"] = uuid.uuid4().hex
    return {**config, "configurable": configurable}
