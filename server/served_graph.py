"""Keel's graph as the multi-user server offers it.

Its config schema (what /chat/config_schema and the playground show, and what LangServe validates a
body's config against) lists only the request settings, and every run's config is rebuilt here:
the deployment's values, the caller's checked settings, the credential's user id and the
conversation the gate claimed for them.
"""

from __future__ import annotations

import typing
from typing import Any, Optional

from fastapi import HTTPException
from langchain_core.runnables import RunnableBinding
from pydantic import BaseModel, Field, create_model

from graph.configuration import Configuration
from server.settings_policy import RequestRefused, request_settings, run_configurable


def _schema_type(hint: Any) -> Any:
    """The JSON-friendly type of a request setting (tuples are lists on the wire)."""
    args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    if typing.get_origin(hint) in (typing.Union,) and len(args) == 1:
        hint = args[0]
    if typing.get_origin(hint) is tuple:
        return list[str]
    return hint


def request_config_model() -> type[BaseModel]:
    settings = {
        name: (Optional[_schema_type(hint)], Field(None, description=item.metadata.get("doc")))
        for name, (item, hint) in request_settings().items()
    }
    configurable = create_model("KeelRequestSettings", **settings)
    return create_model("KeelRunConfig", configurable=(Optional[configurable], None))


class ServedGraph(RunnableBinding):
    """The graph, unchanged, except that its config schema is the request allowlist."""

    def config_schema(self, *, include=None) -> type[BaseModel]:  # noqa: ARG002 - one schema for every caller
        return request_config_model()


def serve_graph(graph) -> ServedGraph:
    return ServedGraph(bound=graph)


def served_config(config: dict, request, cfg: Configuration, deployment: dict[str, Any]) -> dict:
    """The config one run gets; a LangServe ``per_req_config_modifier`` (and /chat/events uses it)."""
    requested = {key: value for key, value in (config.get("configurable") or {}).items()
                 if value is not None and key in request_settings()}
    user_id = getattr(request.state, "user_id", None)
    if not user_id or not requested.get("thread_id"):
        raise HTTPException(status_code=400, detail="the request was not checked by the server's gate")
    try:
        configurable = run_configurable(requested, cfg, user_id, deployment)
    except RequestRefused as refused:
        raise HTTPException(status_code=refused.status, detail=refused.message) from None
    # a batch's questions run one after another: one request holds one generation slot
    return {**config, "configurable": configurable, "max_concurrency": 1}
