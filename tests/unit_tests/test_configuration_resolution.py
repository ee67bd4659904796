"""A turn resolves its settings once: every node asks for the run's Configuration, and the parts
looked up from it (chat tokenizer, embeddings, similarity) are found once per Components and
settings, while a request's own settings still take effect."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage

import keel.components as components_module
from keel.components import Components
from keel.core.configuration import Configuration
from keel.graph import build_graph
from tests.fakes import BagOfWordsEmbeddings, StaticRetriever, WordTokenizer, passage_doc

FACT = "The Varden lighthouse was built in 1874 by the engineer Mara Holt."
GROUNDED = "<answer>The Varden lighthouse was built in 1874 by Mara Holt [Source 1].</answer>"
INVENTED = "<answer>The lighthouse was designed by Gustave Eiffel in Paris during the 1920s.</answer>"


@pytest.fixture
def resolutions(monkeypatch):
    """Counts: how often a node asked for the run's settings, and how often they were built."""
    counts = {"asked": 0, "built": 0}
    ask, resolve = Configuration.from_runnable_config.__func__, Configuration.resolve.__func__

    def counting_ask(cls, config=None):
        counts["asked"] += 1
        return ask(cls, config)

    def counting_resolve(cls, context, configurable):
        counts["built"] += 1
        return resolve(cls, context, configurable)

    monkeypatch.setattr(Configuration, "from_runnable_config", classmethod(counting_ask))
    monkeypatch.setattr(Configuration, "resolve", classmethod(counting_resolve))
    return counts


def turn(graph, question="Who built the Varden lighthouse?", **configurable):
    configurable.setdefault("user_id", f"u-{uuid.uuid4().hex[:12]}")  # settings no earlier test resolved
    return graph.invoke({"messages": [HumanMessage(question)]}, {"configurable": configurable})


def graph_with(responses, documents, **parts):
    parts = {"embeddings": BagOfWordsEmbeddings(), "tokenizer": WordTokenizer(), **parts}
    return build_graph(chat_model=FakeListChatModel(responses=responses),
                       retriever=StaticRetriever(documents=documents), **parts)


def test_a_turn_builds_its_configuration_once_however_many_steps_it_takes(resolutions):
    short = turn(graph_with([GROUNDED], [passage_doc(FACT)]))
    assert short["attempts"] == 1
    assert resolutions["built"] == 1 and resolutions["asked"] >= 6  # every node asked, one build
    asked_by_short = resolutions["asked"]

    resolutions.update(asked=0, built=0)
    long = turn(graph_with([INVENTED, INVENTED], [passage_doc(FACT)]))
    assert long["attempts"] == 3  # two more generate/validate rounds: more nodes asked ...
    assert resolutions["asked"] > asked_by_short
    assert resolutions["built"] == 1  # ... and still one build


def test_each_request_gets_its_own_settings(resolutions):
    graph = graph_with(["(Not from your documents) Mercury boils at 357 degrees Celsius."] * 3, [])
    user = f"u-{uuid.uuid4().hex[:12]}"
    question = "What is the boiling point of mercury?"
    strict = turn(graph, question, user_id=user)
    assert strict["status"] == "insufficient_context" and "357" not in strict["answer"]
    opened = turn(graph, question, user_id=user, grounding_mode="open")
    assert opened["status"] == "success" and "357" in opened["answer"]
    again = turn(graph, question, user_id=user)
    assert again["status"] == "insufficient_context"
    assert resolutions["built"] <= 3  # at most once per turn (the third may reuse the first's)


def test_equal_settings_share_one_resolution_and_any_difference_resolves_anew(monkeypatch, tmp_path):
    def settings(**configurable):
        return Configuration.from_runnable_config({"configurable": configurable})

    user = f"u-{uuid.uuid4().hex[:12]}"
    first = settings(user_id=user, doc_ids=["a", "b"], max_new_tokens=64, checkpoint_ns="ignored")
    assert settings(user_id=user, doc_ids=["a", "b"], max_new_tokens=64, checkpoint_ns="other") is first
    assert first.doc_ids == ("a", "b") and first.max_new_tokens == 64
    assert settings(user_id=user, doc_ids=["a", "b"], max_new_tokens=65).max_new_tokens == 65
    assert settings(user_id=user, doc_ids=["a"], max_new_tokens=64).doc_ids == ("a",)
    assert settings(user_id=user, require_citations=True).require_citations is True
    with pytest.raises(ValueError, match="require_citations"):  # 1 and True are not one setting: 1 is refused
        settings(user_id=user, require_citations=1)
    assert settings(user_id=user, followup_cues=["it"]).followup_cues == ("it",)  # a list is kept as a tuple
    assert settings(user_id=user, followup_cues=("it",)).followup_cues == ("it",)
    monkeypatch.setenv("KEEL_HOME", str(tmp_path))  # a default read from the environment changed
    assert settings(user_id=user).keel_home == str(tmp_path)
    with pytest.raises(ValueError, match="question_negation_pattern"):  # a bad setting fails every time
        settings(user_id=user, question_negation_pattern="(not")
    with pytest.raises(ValueError, match="question_negation_pattern"):
        settings(user_id=user, question_negation_pattern="(not")


def test_a_run_context_object_is_its_own_settings(monkeypatch):
    import keel.core.configuration as configuration_module

    context = Configuration(max_new_tokens=77)
    monkeypatch.setattr(configuration_module, "_runtime_context", lambda: context)
    one = Configuration.from_runnable_config({})
    assert one.max_new_tokens == 77 and Configuration.from_runnable_config({}) is one
    monkeypatch.setattr(configuration_module, "_runtime_context", lambda: Configuration(max_new_tokens=78))
    assert Configuration.from_runnable_config({}).max_new_tokens == 78
    assert Configuration.from_runnable_config({"configurable": {"max_new_tokens": 9}}).max_new_tokens == 9


@pytest.fixture
def lookups(monkeypatch):
    """The factories the Components fall back to, counted."""
    counts = {"tokenizer": [], "embeddings": []}

    def tokenizer(cfg):
        counts["tokenizer"].append(cfg.chat_tokenizer_path)
        if cfg.chat_tokenizer_path == "missing":
            raise FileNotFoundError("no tokenizer there")
        return WordTokenizer()

    def embeddings(cfg):
        counts["embeddings"].append(cfg.embedding_model_path)
        return BagOfWordsEmbeddings()

    monkeypatch.setattr(components_module, "get_chat_tokenizer", tokenizer)
    monkeypatch.setattr(components_module, "get_embeddings", embeddings)
    return counts


def test_components_find_the_tokenizer_and_embeddings_once_per_settings(lookups):
    parts, cfg = Components(), Configuration()
    assert [parts.count_tokens(cfg, "three short words") for _ in range(5)] == [3] * 5
    assert parts.chat_tokenizer(cfg) is parts.chat_tokenizer(cfg)
    assert len(lookups["tokenizer"]) == 1
    other = Configuration(chat_tokenizer_path="/models/other-tokenizer")
    parts.count_tokens(other, "a b")
    assert lookups["tokenizer"] == [None, "/models/other-tokenizer"]
    with pytest.raises(FileNotFoundError):  # a failure is not kept: the next call tries again
        parts.chat_tokenizer(Configuration(chat_tokenizer_path="missing"))
    with pytest.raises(FileNotFoundError):
        parts.chat_tokenizer(Configuration(chat_tokenizer_path="missing"))
    assert lookups["tokenizer"].count("missing") == 2

    similarity = parts.similarity(cfg)
    assert parts.similarity(cfg) is similarity and parts.embedder(cfg) is parts.embedder(cfg)
    assert similarity("lighthouse keeper", ["the lighthouse keeper", "tides"])[0] > 0.5
    assert lookups["embeddings"] == [None]
    assert Components().embedder(cfg) is not parts.embedder(cfg)  # kept per Components instance
    assert parts.embedder(Configuration(embedding_model_path="/models/other")) is not parts.embedder(cfg)


def test_a_turn_with_keels_own_tokenizer_and_embeddings_looks_them_up_once(lookups, resolutions):
    graph = graph_with([INVENTED, INVENTED], [passage_doc(FACT)], embeddings=None, tokenizer=None)
    result = turn(graph, moderation_backend="keywords")  # the fake "own" embeddings are not the safety classifier's model
    assert result["attempts"] == 3
    assert len(lookups["tokenizer"]) == 1 and len(lookups["embeddings"]) == 1
    assert resolutions["built"] == 1


def test_a_resolved_configuration_cannot_be_changed_in_place():
    """Every node of a turn shares one resolved instance: a change must be a copy, or one node's
    change would leak into the next request with the same settings."""
    import dataclasses

    cfg = Configuration.from_runnable_config({"configurable": {"max_new_tokens": 77}})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.max_new_tokens = 5  # type: ignore[misc]
    changed = dataclasses.replace(cfg, max_new_tokens=5)
    assert changed.max_new_tokens == 5
    assert Configuration.from_runnable_config({"configurable": {"max_new_tokens": 77}}).max_new_tokens == 77
