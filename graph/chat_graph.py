"""Keel's chat graph, wired top-down, one node per step from the guardrails to the answer:

    START → guardrails ─┬─ exceeded_token_budget → END
                        ├─ not_safe → END
                        └─ prefill_system_prompt → condense_question → route_query ─┬─ single_doc_answer ────────┐
                                                                                    ├─ multi_doc_answer ─────────┤─┬─→ END
                                                                                    └─ pretrained_corpus_answer ─┘ │
                                                                                     (review applies) └─ review_answer → END

condense_question rewrites a follow-up ("And on Sundays?") as the standalone question it stands for,
from the conversation the checkpointer keeps (chains/condense.py); a follow-up the guardrails
refused as typed is judged again as that question, and goes to not_safe when it is refused too.
Each answering node runs the answer subgraph (graph/answer_graph.py): generate → validate →
score → retry until quality >= 0.6 (at most 3 attempts) → finalize. When the deployment's
review_mode holds the turn (nodes/review_hold.py), review_answer pauses the run with LangGraph's
``interrupt`` until a reviewer approves, edits or rejects it (nodes/review_answer.py).
"""

from __future__ import annotations

from functools import partial

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel

from keel.checks.moderation import Moderator
from keel.components import Components, RetrieverFactory
from keel.core.configuration import Configuration, RunContext
from keel.core.settings import ConversationStoreSettings
from keel.core.state import InputState, KeelState, OutputState
from keel.graph.answer_graph import build_answer_graph
from keel.graph.client_streams import user_facing
from keel.nodes.condense_question import after_condensing, condense_question
from keel.nodes.exceeded_token_budget import exceeded_token_budget
from keel.nodes.guardrails import after_guardrails, guardrails
from keel.nodes.multi_doc_answer import multi_doc_answer
from keel.nodes.not_safe import not_safe
from keel.nodes.prefill_system_prompt import prefill_system_prompt
from keel.nodes.pretrained_corpus_answer import pretrained_corpus_answer
from keel.nodes.review_answer import review_answer
from keel.nodes.review_hold import needs_review
from keel.nodes.route_query import pick_answering_node, route_query
from keel.nodes.single_doc_answer import single_doc_answer
from keel.stores.history import get_checkpointer
from keel.stores.review_queue import ReviewQueue

ANSWERING_NODES = ["single_doc_answer", "multi_doc_answer", "pretrained_corpus_answer"]


def build_graph(
    chat_model: BaseChatModel | None = None,
    embeddings: Embeddings | None = None,
    retriever: BaseRetriever | None = None,
    *,
    retriever_factory: RetrieverFactory | None = None,
    moderator: Moderator | None = None,
    tokenizer=None,
    image_reader=None,
    checkpointer=None,
    memory: bool = False,
    review_queue: ReviewQueue | None = None,
):
    """Compile Keel's graph. Every part is optional: what is not given is Keel's default,
    created lazily from the configuration on first use. ``image_reader`` (picture bytes -> its text)
    reads the pictures a question carries for a model that reads text only; Keel's default is Tesseract.

    A graph remembers a conversation (its ``thread_id``) only with a checkpointer: pass any
    LangGraph one as ``checkpointer``, or ``memory=True`` for Keel's own conversation store, the
    MongoDB that ``keel ask``, ``keel chat`` and ``keel serve`` keep history in (``MONGODB_URI``, or
    the embedded server under ``KEEL_HOME``, started by this call), so a conversation begun in one
    goes on in the others. Without either, every call starts afresh.

    ``review_queue`` is where turns held for human review are filed (``memory=True``: Keel's own, in
    the same MongoDB, which ``keel review`` and the server's /review routes read). Without one a held
    turn still pauses, and whoever holds the checkpointer resumes it with ``Command(resume=...)``.
    """
    if memory:
        if checkpointer is not None:
            raise ValueError("pass either checkpointer=... or memory=True, not both")
        checkpointer = get_checkpointer(ConversationStoreSettings())
        if review_queue is None:
            stored = Configuration()
            review_queue = ReviewQueue.from_settings(stored, stored)
    components = Components(
        chat_model=chat_model,
        embeddings=embeddings,
        retriever=retriever,
        retriever_factory=retriever_factory,
        moderator=moderator,
        tokenizer=tokenizer,
        image_reader=image_reader,
    )
    answer_graph = build_answer_graph(components)
    answering = {"components": components, "answer_graph": answer_graph}

    builder = StateGraph(
        KeelState, context_schema=RunContext, input_schema=InputState, output_schema=OutputState
    )

    builder.add_node("guardrails", partial(guardrails, components=components))
    builder.add_node("exceeded_token_budget", partial(exceeded_token_budget, components=components))
    builder.add_node("not_safe", not_safe)
    builder.add_node("prefill_system_prompt", prefill_system_prompt)
    builder.add_node("condense_question", partial(condense_question, components=components))
    builder.add_node("route_query", partial(route_query, components=components))
    builder.add_node("single_doc_answer", partial(single_doc_answer, **answering))
    builder.add_node("multi_doc_answer", partial(multi_doc_answer, **answering))
    builder.add_node("pretrained_corpus_answer", partial(pretrained_corpus_answer, **answering))
    builder.add_node("review_answer", partial(review_answer, queue=review_queue))

    builder.add_edge(START, "guardrails")
    builder.add_conditional_edges(
        "guardrails", after_guardrails, ["exceeded_token_budget", "not_safe", "prefill_system_prompt"]
    )
    builder.add_edge("exceeded_token_budget", END)
    builder.add_edge("not_safe", END)
    builder.add_edge("prefill_system_prompt", "condense_question")
    builder.add_conditional_edges("condense_question", after_condensing, ["route_query", "not_safe"])
    builder.add_conditional_edges("route_query", pick_answering_node, ANSWERING_NODES)
    for node in ANSWERING_NODES:
        builder.add_conditional_edges(node, needs_review, ["review_answer", END])
    builder.add_edge("review_answer", END)
    # its streams show a client what a user may see, not the turn's inside (graph/client_streams.py)
    return user_facing(builder.compile(checkpointer=checkpointer, name="keel"))


# The compiled graph LangGraph Studio loads (langgraph.json) and `from keel.graph import graph` returns.
# It has no checkpointer, and keeps none of a thread's turns when invoked directly: LangGraph Studio
# and `langgraph dev` give every graph their own persistence (and ignore one compiled in). A library
# user who wants memory builds a graph with one (build_graph(memory=True) or checkpointer=...); the
# CLI and the LangServe app add the MongoDB checkpointer the same way. A turn it holds for human
# review is filed in the deployment's review queue (opened on first use), where Keel's Studio auth
# lets a reviewer resume it and `keel review list` shows it.
graph = build_graph(review_queue=ReviewQueue.of_deployment())


def whole_turn_saves(graph) -> dict:
    """Run options under which a turn is saved when it ends (LangGraph's ``durability="exit"``), not
    step by step: a run stopped mid-answer (a replica killed, a `keel ask` interrupted) leaves the
    conversation as it was before the question, and a turn costs one write to the history instead of
    one per step. Empty for a graph without a checkpointer."""
    saves = isinstance(graph, Pregel) and graph.checkpointer not in (None, False)
    return {"durability": "exit"} if saves else {}
