"""Settings are checked and documented: every value is checked when a configuration is made (type,
bounds, choices, unknown keys), the error names each bad setting, and what Studio and LangServe show
describes each setting while keeping the deployment's own settings out of Studio's form."""

from __future__ import annotations

import dataclasses
import math
import typing
import uuid

import pytest
from fastapi.testclient import TestClient
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import TypeAdapter

import keel.components as components_module
from keel.core.configuration import (
    LANGGRAPH_CONFIGURABLE_KEYS,
    Configuration,
    ConfigurationError,
    RunContext,
)
from keel.core.settings.scope import REQUEST, scope_of
from keel.graph import build_graph
from keel.server.app import create_app
from keel.server.settings_policy import request_settings
from tests.answer_fakes import KeywordEmbeddings, ScriptedChatModel
from tests.fakes import StaticRetriever, WordTokenizer, passage_doc
from tests.serving_fakes import bearer, keys_and_owners

FIELDS = dataclasses.fields(Configuration)
HINTS = typing.get_type_hints(Configuration)
# Every mark a field's metadata may carry (keel/core/settings/checks.py, keel/server/settings_policy.py):
# a misspelt one ("minimun") would silently check nothing.
MARKS = {"doc", "scope", "minimum", "maximum", "exclusive_minimum", "maximum_setting", "max_chars_setting",
         "max_items_setting", "below_setting", "min_chars", "format", "url_schemes", "env", "choices",
         "choices_setting"}
ANSWER = "<answer>The Varden lighthouse was built in 1874 by the engineer Mara Holt [Source 1].</answer>"
FACT = "The Varden lighthouse was built in 1874 by the engineer Mara Holt."


def refusal(make, *args, **kwargs) -> ConfigurationError:
    with pytest.raises(ConfigurationError) as raised:
        make(*args, **kwargs)
    return raised.value


# --- every setting is documented and bounded ------------------------------------------------------

def test_every_setting_has_a_one_line_doc_and_only_known_marks():
    for item in FIELDS:
        doc = item.metadata.get("doc")
        assert isinstance(doc, str) and len(doc) > 15 and "\n" not in doc, item.name
        assert set(item.metadata) <= MARKS, (item.name, set(item.metadata) - MARKS)
        for name in (item.metadata.get("below_setting"), item.metadata.get("maximum_setting"),
                     item.metadata.get("choices_setting")):
            assert name is None or name in {f.name for f in FIELDS}, item.name


def test_every_numeric_setting_has_bounds_its_default_keeps():
    numeric = [item for item in FIELDS if HINTS[item.name] in (int, float)]
    assert len(numeric) > 100
    for item in numeric:
        marks = item.metadata
        assert {"minimum", "exclusive_minimum"} & set(marks), item.name
        default = item.default if item.default_factory is dataclasses.MISSING else item.default_factory()
        assert marks.get("minimum", -math.inf) <= default <= marks.get("maximum", math.inf), item.name
        assert default > marks.get("exclusive_minimum", -math.inf), item.name


# --- what Studio and LangServe show -----------------------------------------------------------------

def test_studio_shows_the_request_settings_each_described_and_the_library_schema_has_every_one():
    graph = build_graph(chat_model=ScriptedChatModel(responses=[ANSWER]), embeddings=KeywordEmbeddings(),
                        retriever=StaticRetriever(documents=[]), tokenizer=WordTokenizer())
    request = {item.name: item for item in FIELDS if scope_of(item) == REQUEST}
    context = graph.get_context_jsonschema()
    assert set(context["properties"]) == set(request)  # no deployment setting in Studio's form
    for name, shown in context["properties"].items():
        assert shown["description"] == request[name].metadata["doc"]
    assert context["properties"]["max_new_tokens"]["minimum"] == 1
    assert context["properties"]["doc_ids"]["items"]["minLength"] == 1
    with pytest.warns(Warning):  # deprecated by LangGraph, still what langgraph-api's config pane reads
        config = graph.get_config_jsonschema()
    assert set(config["$defs"]["RunContext"]["properties"]) == set(request)

    full = TypeAdapter(Configuration).json_schema()["properties"]  # every setting, for the library
    assert set(full) == {item.name for item in FIELDS}
    assert all(full[item.name]["description"] == item.metadata["doc"] for item in FIELDS)
    assert full["quality_threshold"]["minimum"] == 0.0 and full["quality_threshold"]["maximum"] == 1.0
    assert full["request_timeout_s"]["exclusiveMinimum"] == 0


def test_langserve_config_schema_describes_every_request_setting():
    client, keys = serving_client()
    schema = client.get("/chat/config_schema", headers=bearer(keys["alice"])).json()
    settings = schema["$defs"]["KeelRequestSettings"]["properties"]
    assert set(settings) == set(request_settings())
    assert all(settings[name]["description"] == item.metadata["doc"] for name, (item, _) in request_settings().items())


# --- each kind of bad value is an error naming the setting ---------------------------------------

@pytest.mark.parametrize("settings, why", [
    ({"quality_threshold": "banana"}, "must be a number"),
    ({"max_attempts": True}, "must be an integer"),  # a bool is not an int
    ({"max_attempts": 2.0}, "must be an integer"),
    ({"require_citations": 1}, "true or false"),
    ({"followup_cues": ["it", 3]}, "list of strings"),
    ({"fallback_answers": {"en": 1}}, "object of strings"),
    ({"max_attempts": -1}, "at least 1"),
    ({"quality_threshold": 1.5}, "at most 1.0"),
    ({"min_confidence": math.nan}, "finite"),
    ({"request_timeout_s": 0}, "greater than 0"),
    ({"grounding_mode": "wild"}, "one of 'strict', 'open'"),
    ({"vector_algorithm": "flat"}, "one of 'FLAT', 'HNSW'"),
    ({"evidence_negation_pattern": "(no"}, "regular expression"),
    ({"injection_patterns": ("fine", "[broken")}, "regular expression"),
    ({"redis_url": "localhost:6379"}, "redis://"),
    ({"llm_endpoint": "127.0.0.1:8080"}, "http://"),
    ({"index_name": ""}, "at least 1 character"),
    ({"max_new_tokens": 300, "llm_context_window": 300}, "smaller than llm_context_window"),
    ({"child_chunk_overlap": 150}, "smaller than child_chunk_tokens"),
])
def test_a_bad_value_is_refused_naming_its_setting(settings, why):
    name = next(iter(settings))
    for make in (lambda: Configuration(**settings),
                 lambda: Configuration.from_runnable_config({"configurable": settings}),
                 lambda: Configuration.resolve(settings, {})):
        error = refusal(make)
        assert error.fields == (name,) and name in str(error) and why in str(error), str(error)


def test_good_values_of_a_near_type_are_taken():
    cfg = Configuration(temperature=1, doc_ids=["a", "b"], quality_threshold=1, max_attempts=1)
    assert cfg.temperature == 1 and cfg.doc_ids == ("a", "b") and cfg.quality_threshold == 1
    assert Configuration.from_runnable_config({"configurable": {"thread_id": uuid.UUID(int=7)}}).thread_id == str(
        uuid.UUID(int=7))  # LangGraph takes any thread id; Keel keeps it as text
    # a run's None is "not set" (the default holds); made directly, a setting that has no None is refused
    assert Configuration.resolve({"fallback_answer": None}, {"max_attempts": None}).max_attempts == 3
    assert refusal(Configuration, fallback_answer=None).fields == ("fallback_answer",)


def test_several_bad_settings_are_named_in_one_error():
    error = refusal(Configuration, quality_threshold="banana", max_attempts=-1, max_atempts=3)
    assert error.fields == ("max_atempts",)  # an unknown key is refused before any value is read
    error = refusal(Configuration, quality_threshold="banana", max_attempts=-1)
    assert set(error.fields) == {"quality_threshold", "max_attempts"}
    assert "2 invalid settings" in str(error) and "quality_threshold" in str(error) and "max_attempts" in str(error)
    assert isinstance(error, ValueError)


def test_an_unknown_key_is_refused_with_the_setting_it_probably_meant():
    for make in (lambda: Configuration(max_atempts=3),
                 lambda: RunContext(max_atempts=3),
                 lambda: Configuration.resolve({"max_atempts": 3}, {}),
                 lambda: Configuration.from_runnable_config({"configurable": {"max_atempts": 3}})):
        error = refusal(make)
        assert error.fields == ("max_atempts",) and "did you mean 'max_attempts'?" in str(error)
    assert "did you mean" not in str(refusal(Configuration, zzz_qqq=1))


def test_keys_langgraph_and_its_server_put_in_configurable_are_accepted_and_in_the_context_refused():
    user = f"u-{uuid.uuid4().hex[:12]}"
    foreign = {key: "x" for key in LANGGRAPH_CONFIGURABLE_KEYS - {"thread_id", "user_id"}}
    foreign.update({"__pregel_runtime": object(), "__request_start_time_ms__": 1, "langgraph_auth_user": {"id": 1},
                    "langgraph_request_id": "r", "x-request-id": "r", "langsmith-trace": "t", "checkpoint_map": {}})
    cfg = Configuration.from_runnable_config({"configurable": {"user_id": user, "max_attempts": 2, **foreign}})
    assert cfg.user_id == user and cfg.max_attempts == 2
    error = refusal(Configuration.resolve, {"run_id": "r"}, {})  # a run's context is Keel's alone
    assert error.fields == ("run_id",)


def test_a_known_good_configurable_does_not_hide_an_unknown_key_added_to_it():
    good = {"user_id": f"u-{uuid.uuid4().hex[:12]}", "max_attempts": 2}
    assert Configuration.from_runnable_config({"configurable": good}).max_attempts == 2  # now kept resolved
    for _ in range(2):  # refused every time, never served from what was kept
        error = refusal(Configuration.from_runnable_config, {"configurable": {**good, "quality_treshold": 0.5}})
        assert "did you mean 'quality_threshold'?" in str(error)


@pytest.mark.parametrize("variable, value, name", [
    ("KEEL_CHAT_RUNTIME", "wild", "chat_runtime"),
    ("REDIS_URL", "localhost:6379", "redis_url"),
    ("MONGODB_URI", "127.0.0.1:27017", "mongodb_uri"),
    ("KEEL_EMBEDDING_ENDPOINT", "tei:8080", "embedding_endpoint"),
])
def test_a_malformed_environment_variable_is_an_error_naming_it(monkeypatch, variable, value, name):
    monkeypatch.setenv(variable, value)
    error = refusal(Configuration)
    assert error.fields == (name,) and f"environment variable {variable}" in str(error) and value in str(error)
    monkeypatch.delenv(variable)
    assert getattr(Configuration(), name) in (None, "auto")


def test_a_configuration_is_checked_when_replaced_too():
    with pytest.raises(ConfigurationError, match="max_attempts"):
        dataclasses.replace(Configuration(), max_attempts=0)


# --- through the server and the graph ---------------------------------------------------------------

def serving_client(cfg: Configuration | None = None):
    api_keys, keys, owners = keys_and_owners()
    graph = build_graph(chat_model=ScriptedChatModel(responses=[ANSWER] * 10), embeddings=KeywordEmbeddings(),
                        retriever=StaticRetriever(documents=[passage_doc(FACT)]), tokenizer=WordTokenizer(),
                        checkpointer=InMemorySaver())
    app = create_app(graph=graph, cfg=cfg or Configuration(rate_limit_burst=10_000, auth_failure_limit=0),
                     store=object(), api_keys=api_keys, owners=owners)
    return TestClient(app, raise_server_exceptions=False), keys


def body(**configurable) -> dict:
    return {"input": {"messages": [{"type": "human", "content": "Who built the Varden lighthouse?"}]},
            "config": {"configurable": configurable}}


def test_a_bad_request_setting_is_a_400_naming_it_on_every_route():
    # a short context window: a max_new_tokens within the request cap (512) still leaves the prompt no room
    client, keys = serving_client(Configuration(llm_context_window=300, rate_limit_burst=10_000, auth_failure_limit=0))
    cases = [({"max_new_tokens": 400}, ["max_new_tokens", "llm_context_window"]),  # the configuration refuses it
             ({"max_new_tokens": "banana"}, ["max_new_tokens"]),
             ({"grounding_mode": "wild"}, ["grounding_mode"]),
             ({"max_atempts": 3}, ["max_atempts", "did you mean 'max_attempts'"])]
    for settings, named in cases:
        for route in ("/chat/invoke", "/chat/stream", "/chat/events"):
            response = client.post(route, json=body(**settings), headers=bearer(keys["alice"]))
            assert response.status_code == 400, (settings, route, response.text)
            assert all(part in response.json()["detail"] for part in named), response.text
    assert client.post("/chat/invoke", json=body(max_new_tokens=200), headers=bearer(keys["alice"])).status_code == 200


def test_the_library_takes_any_setting_in_the_run_context():
    graph = build_graph(chat_model=ScriptedChatModel(responses=[ANSWER]), embeddings=KeywordEmbeddings(),
                        retriever=StaticRetriever(documents=[]), tokenizer=WordTokenizer())
    result = graph.invoke({"messages": [HumanMessage("Who built the Varden lighthouse?")]},
                          context={"fallback_answer": "No idea from your files.", "user_id": "alice"})
    assert result["answer"] == "No idea from your files."  # a deployment setting, from the context
    with pytest.raises(ConfigurationError, match="fallback_answer"):
        graph.invoke({"messages": [HumanMessage("Who built it?")]}, context={"fallback_answer": 42})


@pytest.fixture
def no_parts_made(monkeypatch):
    """Every default part of the graph (model, embeddings, tokenizer, retriever) fails the test if made."""
    made = []

    def forbidden(name):
        def make(*args, **kwargs):
            made.append(name)
            raise AssertionError(f"{name} was made for a run with a bad setting")
        return make

    for name in ("get_chat_model", "get_embeddings", "get_chat_tokenizer", "default_retriever"):
        monkeypatch.setattr(components_module, name, forbidden(name))
    return made


@pytest.mark.parametrize("run", [
    {"config": {"configurable": {"quality_threshold": "banana"}}},
    {"config": {"configurable": {"max_attempts": -1, "thread_id": "t-1"}}},
    {"context": {"grounding_mode": "wild"}},
    {"context": {"max_atempts": 3}},
], ids=["type", "range", "choice", "unknown-key"])
def test_keels_own_graph_with_a_bad_setting_fails_before_any_model_is_made(no_parts_made, run):
    from keel.graph import graph  # the exported graph, with Keel's default parts

    with pytest.raises(ConfigurationError) as raised:
        graph.invoke({"messages": [HumanMessage("When is the clinic open?")]}, **run)
    settings = {**run.get("context", {}), **run.get("config", {}).get("configurable", {})}
    assert raised.value.fields[0] in settings
    assert no_parts_made == []
