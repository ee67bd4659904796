"""What the three answering nodes share: fit passages to the budget, run the answer subgraph,
and turn its result into the turn's answer, status, sources and history message."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable, RunnableConfig

from chains.text import cited_sources
from graph.configuration import Configuration
from graph.state import AnswerStatus, KeelState, Passage, Route
from nodes.components import Components
from nodes.context import context_budget, fit_passages, history_before_question, mean_similarity, sources_of


def run_answer_graph(
    state: KeelState,
    config: RunnableConfig,
    components: Components,
    answer_graph: Runnable,
    passages: list[Passage],
    route: Route,
) -> dict:
    cfg = Configuration.from_runnable_config(config)
    history = history_before_question(state.get("messages", []), cfg.history_max_turns)
    system_prompt = state.get("system_prompt", "")
    fixed = [system_prompt, state["question"], *(str(m.content) for m in history)]
    fitted = fit_passages(passages, context_budget(cfg, components, fixed), cfg, components) if passages else []
    result = answer_graph.invoke(
        {
            "question": state["question"],
            "system_prompt": system_prompt,
            "route": route.value,
            "passages": fitted,
            "history": history,
        },
        config,
    )
    return turn_result(result, fitted, route)


def turn_result(result: dict, passages: list[Passage], route: Route) -> dict:
    status = result.get("status", AnswerStatus.ERROR.value)
    answer = result.get("answer", "")
    sources = sources_of(passages, cited_sources(answer)) if status == AnswerStatus.SUCCESS.value else []
    return {
        "answer": answer,
        "status": status,
        "route": route.value,
        "sources": sources,
        "passages": passages,
        "quality": float(result.get("quality") or 0.0),
        "confidence": mean_similarity(passages),
        "attempts": int(result.get("attempt", 0)),
        "continuations": int(result.get("continuations", 0)),
        "usage": result.get("usage"),
        "reasons": list(result.get("reasons", [])),
        "messages": [AIMessage(answer, additional_kwargs={"keel": {"status": status, "sources": sources}})],
    }



