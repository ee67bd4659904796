"""What the three answering nodes share: fit passages to the budget, run the answer subgraph,
and turn its result into the turn's answer, status, sources and history message, which is then
streamed as the turn's one chat-model reply (chains/answer_relay.py), unless the deployment's
review_mode holds the turn for a reviewer first (nodes/review_hold.py)."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable, RunnableConfig

from keel.chains.answer_relay import relay_answer
from keel.chains.condense import FOLLOWUP_REASON
from keel.chains.context import context_budget, fit_passages, history_before_question, message_text
from keel.chains.prompts import CONTEXT_CLOSE, CONTEXT_OPEN, SECTIONED_FORMAT_RULES
from keel.chains.unseen_run import run_unseen
from keel.checks.answer_checks import is_fallback
from keel.checks.answerability import evidence_gaps, too_unsure
from keel.checks.confidence import retrieval_confidence
from keel.checks.grounding import question_terms_missing
from keel.checks.language import framed_answer, localized_fallback
from keel.components import Components, draft_writer
from keel.core.configuration import Configuration
from keel.core.state import AnswerStatus, KeelState, Passage, Route
from keel.core.text import cited_sources, remove_markers, strip_instructions
from keel.nodes.review_hold import draft_of, held_for_review
from keel.retrievers.passages import citations_of, sources_markdown, sources_of

CONTEXT_INJECTION_REMOVED = "context_injection_removed"
QUESTION_TERMS_MISSING = "question_terms_not_in_context"


def run_answer_graph(
    state: KeelState,
    config: RunnableConfig,
    components: Components,
    answer_graph: Runnable,
    passages: list[Passage],
    route: Route,
) -> dict:
    """Answer the question from ``passages`` with the answer subgraph, and make its result the
    turn's: answer, status, sources and the reasons a fallback was given."""
    cfg = Configuration.from_runnable_config(config)
    history = history_before_question(state.get("messages", []), cfg.history_max_turns, cfg.history_max_tokens,
                                      lambda text: components.count_tokens(cfg, text))
    system_prompt = state.get("system_prompt", "")
    if cfg.answer_format == "sectioned":
        system_prompt = f"{system_prompt}\n\n{SECTIONED_FORMAT_RULES}".strip()
    passages, injected = as_data(passages, cfg)
    fixed = [system_prompt, state["question"], *(message_text(m) for m in history)]
    fitted = fit_passages(passages, context_budget(cfg, components, fixed), cfg, components) if passages else []
    confidence = retrieval_confidence(
        [p["similarity"] for p in fitted], cfg.confidence_slope, cfg.confidence_intercept
    )
    if fitted:  # the asker sees at once what was found, long before the checked answer
        draft_writer(cfg, config)(found_event(fitted))
    turn = _pre_generation_gate(state, cfg, route, fitted, confidence, components)
    result = None
    if turn is None:
        # the loop's drafts and state stay out of every client stream; its live draft goes to the
        # turn's custom stream only (and nowhere while answers may be held for review)
        result = run_unseen(
            answer_graph,
            {
                "question": state["question"],
                "system_prompt": system_prompt,
                "route": route.value,
                "passages": fitted,
                "history": history,
                "images": state.get("images") or [],
                "language": state.get("answer_language") or state.get("language", cfg.default_language),
            },
            config,
            draft_stream=draft_writer(cfg, config),
        )
        turn = turn_result(result, fitted, route, state, cfg, confidence)
    if injected:
        turn["reasons"] = [*turn["reasons"], f"{CONTEXT_INJECTION_REMOVED}:{injected}"]
    rewrite = [r for r in state.get("reasons", []) if r.startswith(FOLLOWUP_REASON)]  # condense_question's
    if rewrite:
        turn["reasons"] = [*rewrite, *turn["reasons"]]
    # review_mode: a turn a reviewer must see first is held back, and only the waiting notice is said
    held = held_for_review(turn, state, cfg, draft_of(turn, result), fitted)
    return said(held or turn, config, state.get("image_note", ""))


PROGRESS_EVENT = "keel.progress"


def found_event(passages: list[Passage]) -> dict:
    """The custom stream event saying what the search found, sent before the checks and the model
    run: a client shows "Found 3 passages in policy.pdf; checking them…" within the first second
    instead of a bare spinner. Data, not text: each client words it in its own language."""
    sources = list(dict.fromkeys(str(p.get("source") or "") for p in passages if p.get("source")))
    return {"event": PROGRESS_EVENT, "stage": "found", "passages": len(passages), "sources": sources}


def said(turn: dict, config: RunnableConfig, note: str = "") -> dict:
    """The turn, its final message streamed to stream_mode="messages" and astream_events: the
    answer, the fallback or the error text alike, once it can no longer change; ``note`` (what was
    read from the question's pictures) is said after it."""
    if note and turn.get("answer"):
        noted = lambda text: f"{text}\n\n{note}"  # noqa: E731
        turn = {**turn, "answer": noted(turn["answer"]),
                "messages": [m.model_copy(update={"content": noted(m.content)}) for m in turn["messages"]]}
    return {**turn, "messages": [relay_answer(message, config) for message in turn["messages"]]}


def _pre_generation_gate(
    state: KeelState, cfg: Configuration, route: Route, fitted: list[Passage], confidence: float,
    components: Components,
) -> dict | None:
    """The pre-generation gate: the fallback turn, without a model call, when the context cannot answer;
    None when the model may try. Open mode's general questions (no passages) are not gated.

    In order: no passage; retrieval confidence below min_confidence (unless one statement says the
    whole question and holds an answer of its type); a name or number of the
    question in no passage; evidence that does not cover the question (keel/checks/answerability.py)."""
    if route is Route.PRETRAINED_CORPUS:
        return None
    if not fitted:
        return fallback_result(state, cfg, AnswerStatus.INSUFFICIENT_CONTEXT, route, ["no_context"])
    if too_unsure(state["question"], [p["text"] for p in fitted], confidence, cfg):
        return fallback_result(
            state, cfg, AnswerStatus.LOW_CONFIDENCE, route, [f"low_retrieval_confidence:{confidence}"], confidence
        )
    # the document's name counts: "What does the Keel handbook say ..." names a file, not its text
    missing = question_terms_missing(state["question"], [f"{p['source']} {p['text']}" for p in fitted])
    if cfg.require_question_terms and missing:
        return fallback_result(state, cfg, AnswerStatus.INSUFFICIENT_CONTEXT, route,
                               [f"{QUESTION_TERMS_MISSING}:{','.join(missing)}"], confidence)
    if cfg.require_evidence:
        gaps = evidence_gaps(state["question"], [(p["number"], p["text"]) for p in fitted],
                             [p["source"] for p in fitted], cfg, components.similarity(cfg))
        if gaps:
            return fallback_result(state, cfg, AnswerStatus.INSUFFICIENT_CONTEXT, route, gaps, confidence)
    return None


def as_data(passages: list[Passage], cfg: Configuration) -> tuple[list[Passage], int]:
    """Passages made safe to show as data: without the prompt's own delimiters (a passage cannot
    close the data block) and without sentences that instruct the model (cfg.injection_patterns),
    since the moderator only reads the question. Returns them and how many sentences were removed."""
    cleaned, removed = [], 0
    for passage in passages:
        text, count = strip_instructions(remove_markers(passage["text"], (CONTEXT_OPEN, CONTEXT_CLOSE)),
                                         cfg.injection_patterns)
        removed += count
        if text.strip():
            cleaned.append(Passage(**{**passage, "text": text}))
    return cleaned, removed


def turn_result(
    result: dict, passages: list[Passage], route: Route, state: KeelState, cfg: Configuration, confidence: float
) -> dict:
    """The answer subgraph's result as the turn's state update: the fallback in the asker's language,
    open-mode answers marked, the passages the answer cites as its sources."""
    status = result.get("status", AnswerStatus.ERROR.value)
    answer = result.get("answer", "")
    success = status == AnswerStatus.SUCCESS.value
    if not success and is_fallback(answer, cfg.fallback_answer):
        answer = localized_fallback(state.get("language", cfg.default_language), cfg)
    if success and route is Route.PRETRAINED_CORPUS and not answer.lower().startswith(cfg.open_mode_mark.lower()):
        answer = f"{cfg.open_mode_mark} {answer}"  # open mode: marked in code, whatever the model wrote
    if success:  # written in another language than the question's: the asker's language says so
        answer = framed_answer(answer, state.get("language", cfg.default_language), cfg)
    cited = cited_sources(answer)
    sources = sources_of(passages, cited) if success else []
    return {
        "answer": answer,
        "status": status,
        "route": route.value,
        "sources": sources,
        "passages": passages,
        "quality": float(result.get("quality") or 0.0),
        "confidence": confidence,
        "grounding_score": result.get("grounding_score"),
        "parse_layer": result.get("parse_layer", ""),
        "attempts": int(result.get("attempt", 0)),
        "continuations": int(result.get("continuations", 0)),
        "usage": result.get("usage") or {},  # never None here: None would reset the turn's count (add_usage)
        "reasons": list(result.get("reasons", [])),
        "sections": result.get("sections") if success else None,
        "sources_markdown": sources_markdown(passages, cited) if success else "",
        "messages": [history_message(answer, status, sources, citations_of(passages, cited) if success else [])],
    }


def fallback_result(
    state: KeelState,
    cfg: Configuration,
    status: AnswerStatus,
    route: Route,
    reasons: list[str],
    confidence: float = 0.0,
) -> dict:
    """The safe "I don't know" turn, in the question's language, without a model call."""
    answer = localized_fallback(state.get("language", cfg.default_language), cfg)
    return {
        "answer": answer,
        "status": status.value,
        "route": route.value,
        "sources": [],
        "confidence": confidence,
        "quality": 0.0,
        "attempts": 0,
        "parse_layer": "",
        "reasons": reasons,
        "sections": None,
        "sources_markdown": "",
        "messages": [history_message(answer, status.value, [])],
    }


def history_message(answer: str, status: str, sources: list, citations: list | None = None) -> AIMessage:
    """The turn as the conversation remembers it: the answer, with status and sources alongside, and
    for an answer from the documents the passages behind it, numbered as its [Source N]
    (keel.retrievers.passages.citations_of), so a conversation read back later can still open them."""
    keel = {"status": status, "sources": sources}
    if citations:
        keel["citations"] = citations
    return AIMessage(answer, additional_kwargs={"keel": keel})



