"""Keel's graph as the multi-user server offers it.

Its config schema (what /chat/config_schema and the playground show, and what LangServe validates a
body's config against) lists only the request settings, and every run's config is rebuilt here:
the deployment's values, the caller's checked settings, the credential's user id and the
conversation the gate claimed for them.

What it returns is the graph's, except for the inside of the server: a reason code whose detail
names an endpoint's URL or a log file's path (``model_unavailable:<where>``) reaches the client as
its code alone (``model_unavailable``), in answers, streamed chunks, run logs and events alike; the
detail goes to the server log. The library and ``keel ask`` keep the detail (the CLI names the
endpoint that did not answer).
"""

from __future__ import annotations

import logging
import typing
from typing import Any

from fastapi import FastAPI, HTTPException
from langchain_core.runnables import RunnableBinding
from langchain_core.tracers.log_stream import RunLog, RunLogPatch
from pydantic import BaseModel, Field, create_model
from pydantic.json_schema import (
    DEFAULT_REF_TEMPLATE,
    GenerateJsonSchema,
    JsonSchemaMode,
    JsonSchemaValue,
)
from pydantic_core import core_schema

from keel.chains.model_recovery import MODEL_REFUSED, MODEL_UNAVAILABLE
from keel.core.configuration import Configuration
from keel.graph.chat_graph import whole_turn_saves
from keel.graph.client_streams import answer_log, user_event_stream
from keel.server.settings_policy import RequestRefused, request_settings, run_configurable

log = logging.getLogger("keel.server")
# Reason codes whose detail (after the colon) describes the server's inside, not the answer.
INTERNAL_DETAIL_CODES = (MODEL_UNAVAILABLE, MODEL_REFUSED)
_DETAIL_PREFIXES = tuple(f"{code}:" for code in INTERNAL_DETAIL_CODES)
# The held draft (state) and the pause's payload (LangGraph's output key): what only a reviewer sees.
REVIEWER_ONLY_KEYS = frozenset({"held_answer", "__interrupt__"})


def _schema_type(hint: Any) -> Any:
    """The JSON-friendly type of a request setting (tuples are lists on the wire)."""
    args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    if typing.get_origin(hint) in (typing.Union,) and len(args) == 1:
        hint = args[0]
    if typing.get_origin(hint) is tuple:
        return list[str]
    return hint


class WithoutNullBranches(GenerateJsonSchema):
    """JSON schemas without a ``{"type": "null"}`` branch: an optional value is shown as its own
    type and a default of None is left out.

    The LangServe playground builds its forms with JSON Forms, which cannot render a null branch
    (``anyOf [string, null]`` leaves the whole page blank). Leaving a field out of a request means
    the same as null (the server's value holds), so the schema loses nothing a client needs; the
    models themselves still accept null, so no body that validated before is refused."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        if "default_factory" not in schema and schema.get("default") is None:
            return self.generate_inner(schema["schema"])
        return super().default_schema(schema)


class PlaygroundSchema(BaseModel):
    """A model whose JSON schema (what the schema routes and the playground show) has no null branch."""

    @classmethod
    def model_json_schema(cls, by_alias: bool = True, ref_template: str = DEFAULT_REF_TEMPLATE,
                          schema_generator: type[GenerateJsonSchema] = WithoutNullBranches,
                          mode: JsonSchemaMode = "validation", **options: Any) -> dict[str, Any]:
        return super().model_json_schema(by_alias=by_alias, ref_template=ref_template,
                                         schema_generator=schema_generator, mode=mode, **options)


def request_config_model() -> type[BaseModel]:
    """The request settings a body's ``config.configurable`` may carry, each optional (left out or
    null: the server's value), typed and described by its field's documentation."""
    settings = {
        name: (_schema_type(hint) | None, Field(None, description=item.metadata.get("doc")))
        for name, (item, hint) in request_settings().items()
    }
    configurable = create_model("KeelRequestSettings", __base__=PlaygroundSchema, **settings)
    return create_model("KeelRunConfig", __base__=PlaygroundSchema, configurable=(configurable | None, None))


def add_playground_input_schema(app: FastAPI, served: RunnableBinding, path: str = "/chat") -> None:
    """``GET {path}/c/{settings}/input_schema``: the input schema, where the playground asks for it
    once a setting is chosen in its form (it names the chosen settings in the URL, LangServe's config
    hash). Settings reach a run only in a request's body (the config-hash routes are off), and the
    graph's input is the same whatever the settings, so this answers the schema of
    ``{path}/input_schema`` and reads nothing from the URL."""

    @app.get(f"{path}/c/{{config_hash}}/input_schema", include_in_schema=False)
    def input_schema_for_playground(config_hash: str) -> dict:  # noqa: ARG001 - see above
        return served.get_input_schema().model_json_schema()


class ClientView:
    """Cuts internal details out of what one call returns, and logs each cut detail once."""

    def __init__(self):
        self.cut: set[str] = set()

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            if value.startswith(_DETAIL_PREFIXES):
                self.cut.add(value)
                return value.split(":", 1)[0]
            return value
        if isinstance(value, RunLog):
            return RunLog(*self(list(value.ops)), state=self(value.state))
        if isinstance(value, RunLogPatch):
            return RunLogPatch(*self(list(value.ops)))
        if isinstance(value, dict):
            # a turn held for review: its draft is for the reviewer (keel/server/review_routes.py), not the asker
            items = {key: self(item) for key, item in value.items() if key not in REVIEWER_ONLY_KEYS}
            return items if type(value) is dict else _same_kind(value, items)
        if isinstance(value, (list, tuple)):
            items = [self(item) for item in value]
            if type(value) is list:
                return items
            return type(value)(*items) if hasattr(value, "_fields") else _same_kind(value, items)
        return value  # messages, documents and numbers carry no reason codes

    def log_cut(self) -> None:
        for detail in sorted(self.cut):
            log.info("shown to the client as its code only: %s", detail)


def _same_kind(value: Any, items: Any) -> Any:
    try:
        return type(value)(items)
    except Exception:  # noqa: BLE001 - a container that cannot be rebuilt from its items: a plain one
        return items


class ServedGraph(RunnableBinding):
    """The graph, except that its config schema is the request allowlist and what it returns is a
    client's view (``ClientView``): every way LangServe and /chat/events call it goes through here."""

    def config_schema(self, *, include=None) -> type[BaseModel]:  # noqa: ARG002 - one schema for every caller
        return request_config_model()

    def invoke(self, input, config=None, **kwargs):
        view = ClientView()
        try:
            return view(super().invoke(input, config, **kwargs))
        finally:
            view.log_cut()

    async def ainvoke(self, input, config=None, **kwargs):
        view = ClientView()
        try:
            return view(await super().ainvoke(input, config, **kwargs))
        finally:
            view.log_cut()

    def batch(self, inputs, config=None, *, return_exceptions=False, **kwargs):
        view = ClientView()
        try:
            return view(super().batch(inputs, config, return_exceptions=return_exceptions, **kwargs))
        finally:
            view.log_cut()

    async def abatch(self, inputs, config=None, *, return_exceptions=False, **kwargs):
        view = ClientView()
        try:
            return view(await super().abatch(inputs, config, return_exceptions=return_exceptions, **kwargs))
        finally:
            view.log_cut()

    def stream(self, input, config=None, **kwargs):
        view = ClientView()
        try:
            for chunk in super().stream(input, config, **kwargs):
                yield view(chunk)
        finally:
            view.log_cut()

    async def astream(self, input, config=None, **kwargs):
        view = ClientView()
        try:
            async for chunk in super().astream(input, config, **kwargs):
                yield view(chunk)
        finally:
            view.log_cut()

    async def astream_log(self, input, config=None, **kwargs):
        """The run log of the answer's run only, its streamed output the answer and its sources
        (graph/client_streams.py: the playground renders it), whatever graph the server was given."""
        view = ClientView()
        try:
            async for item in answer_log(super().astream_log, input, config, **kwargs):
                yield view(item)
        finally:
            view.log_cut()

    def astream_events(self, input, config=None, **kwargs):
        """The graph's own run and the relayed answer, no node's run (graph/client_streams.py); only
        the event stream versions LangServe serves (v1, v2) are offered."""
        if kwargs.get("version", "v2") not in ("v1", "v2"):
            raise ValueError("the server streams events in version v1 or v2 only")
        return self._client_events(user_event_stream(super().astream_events, input, config, **kwargs))

    async def _client_events(self, events):
        view = ClientView()
        try:
            async for event in events:
                yield view(event)
        finally:
            view.log_cut()


def serve_graph(graph) -> ServedGraph:
    """The graph as the server runs it. A graph with a checkpointer saves a turn when it ends
    (LangGraph's ``durability="exit"``), not step by step: a replica killed mid-answer leaves the
    conversation as it was before the question, so the client's retry on another replica continues
    it without a half-saved turn (the question stored without its answer, then asked again). An
    interrupted or failed run is still saved when it stops, as LangGraph does in this mode."""
    return ServedGraph(bound=graph, kwargs=whole_turn_saves(graph))


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
