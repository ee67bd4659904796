"""route_query: retrieval decides. How many distinct documents hold passages that pass the
relevance threshold (or were attached by the user) picks single_doc, multi_doc or pretrained_corpus."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from graph.configuration import Configuration
from graph.state import KeelState, Route
from nodes.components import Components
from nodes.context import passages_from_documents


def route_query(state: KeelState, config: RunnableConfig, *, components: Components) -> dict:
    cfg = Configuration.from_runnable_config(config)
    attached = list(cfg.doc_ids)
    retriever = components.retriever_for(cfg, attached or None)
    documents = retriever.invoke(state["question"], config=config)
    passages = passages_from_documents(documents)
    relevant = [p for p in passages if _is_relevant(p, cfg)]
    doc_ids = list(dict.fromkeys(p["doc_id"] for p in relevant))
    if attached and relevant:
        doc_ids = [d for d in attached if d in doc_ids] or doc_ids
    if not relevant:
        route = Route.PRETRAINED_CORPUS
    elif len(doc_ids) == 1:
        route = Route.SINGLE_DOC
    else:
        route = Route.MULTI_DOC
    return {"route": route.value, "passages": relevant, "doc_ids": doc_ids}


def _is_relevant(passage, cfg: Configuration) -> bool:
    # A retriever that reports no similarity (a user's own) is trusted as-is.
    return passage["similarity"] >= cfg.relevance_threshold or passage["similarity"] == 0.0 and passage["score"] == 0.0


def pick_answering_node(state: KeelState) -> str:
    return {
        Route.SINGLE_DOC.value: "single_doc_prompt",
        Route.MULTI_DOC.value: "multi_doc_prompt",
    }.get(state.get("route", ""), "pretrained_corpus_prompt")
