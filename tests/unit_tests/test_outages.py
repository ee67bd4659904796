"""A server dying under Keel costs a retry, not the user's answer (fast tests with fakes).

MongoDB away mid-answer: the answer is returned, its turn kept and saved when MongoDB is back.
The chat model failing: one more try, then status error without internals. Redis away during
ingest: a per-file error and the rest of the report. The same faults on the real servers are in
tests/test_outages_real.py.
"""

from __future__ import annotations

import io

import pytest
import redis
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from pymongo.errors import AutoReconnect

from keel.cli.ask_outcome import EXIT_ERROR, EXIT_NOT_SAVED, EXIT_OK, ask_exit_code
from keel.graph import build_graph
from keel.core.configuration import Configuration
from keel.loaders.pipeline import REDIS_UNAVAILABLE, ingest
from keel.stores.resilient_history import HistoryUnavailableError, ResilientCheckpointSaver
from tests.fakes import BagOfWordsEmbeddings, StaticRetriever, WordTokenizer, passage_doc

FACT = "The Varden lighthouse was built in 1874 by the engineer Mara Holt."
ANSWER = "<answer>The Varden lighthouse was built in 1874 by Mara Holt [Source 1].</answer>"
WHERE = "mongodb://127.0.0.1:1/"


class FlakySaver(InMemorySaver):
    """An in-memory saver that fails like a dead MongoDB while ``down`` (or ``fail_next`` times)."""

    def __init__(self):
        super().__init__()
        self.down, self.fail_next, self.calls = False, 0, 0

    def _check(self):
        self.calls += 1
        if self.down or self.fail_next > 0:
            self.fail_next -= 1
            raise AutoReconnect("127.0.0.1:1: [Errno 111] Connection refused")

    def put(self, *args, **kwargs):
        self._check()
        return super().put(*args, **kwargs)

    def put_writes(self, *args, **kwargs):
        self._check()
        return super().put_writes(*args, **kwargs)

    def get_tuple(self, config):
        self._check()
        return super().get_tuple(config)


def resilient(saver: FlakySaver, sleeps: list | None = None, **kwargs) -> ResilientCheckpointSaver:
    pauses = sleeps if sleeps is not None else []
    return ResilientCheckpointSaver(lambda: saver, saver=saver, where=WHERE, sleep=pauses.append, **kwargs)


def checkpoint(number: int) -> dict:
    from langgraph.checkpoint.base import empty_checkpoint

    return {**empty_checkpoint(), "id": f"1ef0000{number}-0000-6000-8000-000000000000"}


CONFIG = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}


def test_a_failed_save_is_retried_with_doubling_backoff():
    saver, sleeps = FlakySaver(), []
    saver.fail_next = 2
    history = resilient(saver, sleeps, attempts=3, backoff_s=0.5)
    history.put(CONFIG, checkpoint(1), {}, {})
    assert sleeps == [0.5, 1.0] and history.pending == 0
    assert saver.get_tuple(CONFIG).checkpoint["id"] == checkpoint(1)["id"]


def test_saves_wait_in_order_while_the_store_is_down_and_are_written_when_it_is_back():
    saver = FlakySaver()
    saver.down = True
    history = resilient(saver, attempts=2, retry_interval_s=60)
    returned = history.put(CONFIG, checkpoint(1), {}, {})
    assert returned["configurable"]["checkpoint_id"] == checkpoint(1)["id"]  # the run goes on
    tries = saver.calls
    history.put({"configurable": {**returned["configurable"]}}, checkpoint(2), {}, {})
    assert saver.calls == tries  # queued at once: a run is not delayed at every step
    assert history.pending == 2 and WHERE in history.describe_failure()
    assert "AutoReconnect" in history.describe_failure()
    assert history.flush() is False
    saver.down = False
    assert history.flush() is True and history.pending == 0
    assert saver.get_tuple(CONFIG).checkpoint["id"] == checkpoint(2)["id"]
    assert saver.get_tuple(CONFIG).parent_config["configurable"]["checkpoint_id"] == checkpoint(1)["id"]


def test_a_read_writes_the_queue_first_and_names_the_server_when_down():
    saver = FlakySaver()
    saver.down = True
    history = resilient(saver, attempts=2)
    history.put(CONFIG, checkpoint(1), {}, {})
    with pytest.raises(HistoryUnavailableError, match="MongoDB at mongodb://127.0.0.1:1/ is unavailable"):
        history.get_tuple(CONFIG)
    saver.down = False
    assert history.get_tuple(CONFIG).checkpoint["id"] == checkpoint(1)["id"]
    assert history.pending == 0


def test_copies_langgraph_makes_share_one_queue():
    saver = FlakySaver()
    saver.down = True
    history = resilient(saver, attempts=1)
    clone = history.with_allowlist({("tests", "outages", "Thing")})
    clone.put(CONFIG, checkpoint(1), {}, {})
    assert history.pending == 1 and history.last_error is not None


def test_the_queue_is_bounded_and_refuses_writes_past_it_without_losing_the_kept_ones():
    saver = FlakySaver()
    saver.down = True
    history = resilient(saver, attempts=1, retry_interval_s=60, max_pending=2)
    history.put(CONFIG, checkpoint(1), {}, {})
    history.put(CONFIG, checkpoint(2), {}, {})
    with pytest.raises(HistoryUnavailableError, match="2 conversation writes already wait"):
        history.put(CONFIG, checkpoint(3), {}, {})
    assert history.pending == 2
    saver.down = False
    assert history.flush() is True
    assert saver.get_tuple(CONFIG).checkpoint["id"] == checkpoint(2)["id"]


def test_other_users_saves_are_not_stalled_by_one_backoff_pause():
    """One user's save sleeping between tries must not hold the lock every save needs."""
    import threading

    saver = FlakySaver()
    saver.fail_next = 1
    pausing, release = threading.Event(), threading.Event()

    def sleep(_seconds):
        pausing.set()
        release.wait(5)

    history = ResilientCheckpointSaver(lambda: saver, saver=saver, where=WHERE, sleep=sleep, attempts=2)
    first = threading.Thread(target=history.put, args=(CONFIG, checkpoint(1), {}, {}))
    first.start()
    assert pausing.wait(5)
    other = {"configurable": {"thread_id": "t2", "checkpoint_ns": ""}}
    second = threading.Thread(target=history.put, args=(other, checkpoint(2), {}, {}))
    second.start()
    second.join(2)
    stalled = second.is_alive()
    release.set()
    first.join(5)
    second.join(5)
    assert not stalled, "a save waited for another save's backoff pause"
    assert saver.get_tuple(other).checkpoint["id"] == checkpoint(2)["id"]
    assert saver.get_tuple(CONFIG).checkpoint["id"] == checkpoint(1)["id"]


class DyingStoreModel(FakeListChatModel):
    """Answers, but MongoDB dies while it generates."""

    saver: object = None

    def _stream(self, *args, **kwargs):
        self.saver.down = True
        yield from super()._stream(*args, **kwargs)


def graph_with(chat_model, checkpointer=None):
    return build_graph(chat_model=chat_model, embeddings=BagOfWordsEmbeddings(), tokenizer=WordTokenizer(),
                       retriever=StaticRetriever(documents=[passage_doc(FACT)]), checkpointer=checkpointer)


def test_mongodb_dying_during_an_answer_keeps_the_answer_and_saves_it_once_back():
    saver = FlakySaver()
    history = resilient(saver, attempts=2, retry_interval_s=60)
    graph = graph_with(DyingStoreModel(responses=[ANSWER], saver=saver), history)
    config = {"configurable": {"thread_id": "conv-1"}}
    result = graph.invoke({"messages": [HumanMessage("Who built the Varden lighthouse?")]}, config)
    assert result["status"] == "success" and "Mara Holt" in result["answer"]
    assert graph.checkpointer.pending > 0
    out = {"status": result["status"], "conversation_id": "conv-1"}
    err = io.StringIO()
    assert graph.checkpointer.flush() is False
    assert ask_exit_code(out, graph.checkpointer.describe_failure(), err=err) == EXIT_NOT_SAVED
    assert WHERE in err.getvalue() and "not saved to conversation conv-1" in err.getvalue()
    saver.down = False
    assert graph.checkpointer.flush() is True
    messages = graph.get_state(config).values["messages"]
    assert messages[-1].type == "ai" and "Mara Holt" in messages[-1].content


class DeadThenAliveModel(FakeListChatModel):
    failures: int = 1

    def _stream(self, *args, **kwargs):
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("connection refused by http://127.0.0.1:9")
        yield from super()._stream(*args, **kwargs)


def test_a_model_failure_is_retried_once_then_succeeds():
    result = graph_with(DeadThenAliveModel(responses=[ANSWER], failures=1)).invoke(
        {"messages": [HumanMessage("Who built the Varden lighthouse?")]})
    assert result["status"] == "success" and result["attempts"] == 1


def test_a_model_that_stays_down_is_status_error_without_internals_and_exit_1():
    graph = graph_with(DeadThenAliveModel(responses=[ANSWER], failures=5))
    result = graph.invoke({"messages": [HumanMessage("Who built the Varden lighthouse?")]})
    assert result["status"] == "error" and result["attempts"] == 1
    assert "127.0.0.1:9" not in result["answer"] and "Error" not in result["answer"]
    assert "model_unavailable:DeadThenAliveModel" in result["reasons"]
    err = io.StringIO()
    out = {"status": result["status"], "reasons": result["reasons"]}
    assert ask_exit_code(out, None, err=err) == EXIT_ERROR
    assert "the language model at DeadThenAliveModel did not answer" in err.getvalue()
    assert ask_exit_code({"status": "success"}, None, err=io.StringIO()) == EXIT_OK


def test_model_failure_retries_are_a_setting():
    graph = graph_with(DeadThenAliveModel(responses=[ANSWER], failures=2))
    result = graph.invoke({"messages": [HumanMessage("Who built the Varden lighthouse?")]},
                          {"configurable": {"model_failure_retries": 2}})
    assert result["status"] == "success"
    assert Configuration().model_failure_retries == 1


class StoreGoneAfterFirst:
    """A chunk store whose Redis goes away after the first document."""

    def __init__(self):
        self.stored = []
        self.client = self

    connection_pool = type("Pool", (), {"connection_kwargs": {"host": "127.0.0.1", "port": 6399, "db": 0}})()

    def ping(self):
        raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6399. Connection refused.")

    def add_document(self, parents, children, batch_size=None):
        if self.stored:
            self.ping()
        self.stored.append(parents[0].metadata["source"])


def test_redis_gone_during_ingest_is_a_per_file_error_and_the_report_completes(tmp_path):
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(f"File {name} says the lighthouse keeper lit the lamp at dusk every day.")
    store = StoreGoneAfterFirst()
    report = ingest([tmp_path], store, Configuration(), user_id="alice")
    assert report.documents == 1 and report.store_unavailable
    # read-ahead workers hand files back as they are ready: whichever came first was stored, the
    # other two are reported, in the order they were given
    stored = store.stored[0].rsplit("/", 1)[-1]
    assert [e["source"].rsplit("/", 1)[-1] for e in report.errors] == [n for n in ("a.txt", "b.txt", "c.txt") if n != stored]
    for error in report.errors:
        assert error["error"].startswith(f"{REDIS_UNAVAILABLE} at redis://127.0.0.1:6399/0")
