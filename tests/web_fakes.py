"""Fakes for the web chat page's tests: a document store that keeps what /ingest sends it in memory
(per user, as Keel's store files documents), a chat model that fails on demand, and Keel's app
built over them with two users."""

from __future__ import annotations

import time

from langgraph.checkpoint.memory import InMemorySaver

from keel.core.configuration import Configuration
from keel.graph import build_graph
from keel.server.app import create_app
from tests.answer_fakes import KeywordEmbeddings, ScriptedChatModel
from tests.fakes import StaticRetriever, WordTokenizer, passage_doc
from tests.serving_fakes import keys_and_owners

FACT = "The Varden lighthouse was built in 1874 by the engineer Mara Holt."
ANSWER = "<answer>The Varden lighthouse was built in 1874 by the engineer Mara Holt [Source 1].</answer>"
QUESTION = "Who built the Varden lighthouse?"
UNANSWERABLE = "What is the boiling point of mercury?"
REFUSED = "How do I build a bomb at home?"
FAILING = "Who built the Varden lighthouse during the power cut?"  # the model's server is down
POWER_CUT = "power cut"
MAX_INPUT_TOKENS = 40
TOO_LONG = "Who built the Varden lighthouse " + "and then what happened next " * 12 + "?"  # over MAX_INPUT_TOKENS


class LighthouseRetriever(StaticRetriever):
    """The lighthouse passage for a question about the lighthouse, nothing for any other."""

    def _get_relevant_documents(self, query: str, *, run_manager):
        return list(self.documents) if "lighthouse" in query.lower() else []


class FakeDocumentStore:
    """add_document / list_documents / delete_document, per user, in memory."""

    def __init__(self):
        self.documents: dict[str, dict[str, dict]] = {}

    def add_document(self, parents, children, batch_size=None) -> None:
        meta = parents[0].metadata
        self.documents.setdefault(meta["user_id"], {})[meta["doc_id"]] = {
            "doc_id": meta["doc_id"], "source": meta["source"], "pages": int(meta.get("total_pages") or 1),
            "parents": len(parents), "children": len(children), "conversation_id": meta.get("conversation_id"),
            "ingested_at": time.time(),
        }

    def add(self, user_id: str, doc_id: str, source: str, pages: int = 1, ingested_at: float | None = None) -> None:
        self.documents.setdefault(user_id, {})[doc_id] = {
            "doc_id": doc_id, "source": source, "pages": pages, "parents": 1, "children": 1, "conversation_id": None,
            "ingested_at": ingested_at or time.time()}

    def list_documents(self, user_id: str) -> list[dict]:
        return sorted(self.documents.get(user_id, {}).values(), key=lambda doc: (doc["source"], doc["doc_id"]))

    def delete_document(self, user_id: str, doc_id: str) -> bool:
        return self.documents.get(user_id, {}).pop(doc_id, None) is not None


class FailingOnDemandModel(ScriptedChatModel):
    """The scripted model, but its server is unreachable when the question mentions a power cut."""

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        if POWER_CUT in str(messages[-1].content):  # the question, not the conversation before it
            raise ConnectionError("endpoint http://127.0.0.1:9 refused")
        yield from super()._stream(messages, stop, run_manager, **kwargs)


def web_page_graph():
    """Keel's graph over fakes, with memory: the lighthouse passage (handbook.pdf, page 3) answers."""
    return build_graph(chat_model=FailingOnDemandModel(responses=[ANSWER] * 100), embeddings=KeywordEmbeddings(),
                       retriever=LighthouseRetriever(documents=[passage_doc(FACT, page=3, doc_id="doc-1")]),
                       tokenizer=WordTokenizer(), checkpointer=InMemorySaver())


def web_page_app(cfg: Configuration | None = None, users=("alice", "mallory")):
    """Keel's app over fakes: (app, {user: key}, document store)."""
    api_keys, keys, owners = keys_and_owners(users=users)
    store = FakeDocumentStore()
    cfg = cfg or Configuration(rate_limit_burst=10_000, auth_failure_limit=0, max_input_tokens=MAX_INPUT_TOKENS)
    app = create_app(graph=web_page_graph(), cfg=cfg, store=store, api_keys=api_keys, owners=owners)
    return app, keys, store
