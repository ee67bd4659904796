"""multi_doc_prompt: retrieve from each relevant document in parallel, then interleave the
results so every document is represented before any gets a second passage."""

from __future__ import annotations

from itertools import chain, zip_longest

from langchain_core.runnables import Runnable, RunnableConfig

from graph.configuration import Configuration
from graph.state import KeelState, Route
from nodes.answering import run_answer_graph
from nodes.components import Components
from nodes.context import passages_from_documents


def multi_doc_prompt(state: KeelState, config: RunnableConfig, *, components: Components, answer_graph: Runnable) -> dict:
    cfg = Configuration.from_runnable_config(config)
    doc_ids = list(state.get("doc_ids", []))
    retrievers = [components.retriever_for(cfg, [doc_id]) for doc_id in doc_ids]
    per_doc = _retrieve_in_parallel(retrievers, state["question"], config)
    relevant = [
        [p for p in passages_from_documents(docs) if p["similarity"] >= cfg.relevance_threshold] for docs in per_doc
    ]
    merged = [p for p in chain.from_iterable(zip_longest(*relevant)) if p is not None]
    passages = merged or list(state.get("passages", []))
    return run_answer_graph(state, config, components, answer_graph, passages, Route.MULTI_DOC)


def _retrieve_in_parallel(retrievers, question: str, config: RunnableConfig):
    from concurrent.futures import ThreadPoolExecutor

    if not retrievers:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(retrievers))) as pool:
        return list(pool.map(lambda r: r.invoke(question, config=config), retrievers))
