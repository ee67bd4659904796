"""condense_question: a follow-up becomes the standalone question it stands for (chains/condense.py),
read from the conversation the checkpointer keeps, so everything after it (search, answer, checks)
works on "When is the Linden library open on Sundays?", not "And on Sundays?". The user's own words stay
in the history; ``standalone_question`` says what the turn was answered as."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from keel.chains.condense import FOLLOWUP_REASON, STANDALONE, TURNS_SHOWN
from keel.chains.condense import condense_question as condense
from keel.chains.context import history_before_question
from keel.components import Components
from keel.core.configuration import Configuration
from keel.core.state import KeelState
from keel.nodes.guardrails import DEFERRED_REASON, GUARDRAIL_OK, RECHECK_AFTER_REWRITE
from keel.nodes.not_safe import MODERATION_REASON


def condense_question(state: KeelState, config: RunnableConfig, *, components: Components) -> dict:
    """A follow-up rewritten as the standalone question it stands for, from the conversation."""
    cfg = Configuration.from_runnable_config(config)
    question = state.get("question", "")
    # its own window, not the answer prompt's (history_max_turns 0 must not turn rewriting off)
    history = history_before_question(state.get("messages", []), TURNS_SHOWN)
    # the last answered turn's own standalone question, kept in the checkpoint (else its words)
    previous = state.get("last_standalone") or ""
    condensed = condense(
        question, history, previous, mode=cfg.followup_rewrite,
        model=lambda: components.chat(cfg),
        similarity=components.similarity(cfg) if history and cfg.followup_rewrite != "off" else None,
        max_tokens=cfg.followup_rewrite_max_tokens, language=state.get("language", cfg.default_language),
        config=config,
    )
    update: dict = {"question": condensed.question, "standalone_question": condensed.question,
                    "last_standalone": condensed.question}
    if condensed.method != STANDALONE:
        update["reasons"] = [f"{FOLLOWUP_REASON}{condensed.method}" + (f":{condensed.problem}" if condensed.problem else "")]
    if condensed.usage:
        update["usage"] = condensed.usage
    if state.get("guardrail") == RECHECK_AFTER_REWRITE:
        update.update(_judged_again(state, condensed.question, question, components, cfg))
    return update


def _judged_again(state: KeelState, standalone: str, typed: str, components: Components, cfg: Configuration) -> dict:
    """The verdict on a follow-up the guardrails refused as typed: the standalone question's, when a
    rewrite stands for it; else the typed one's."""
    typed_category = next((r[len(DEFERRED_REASON):] for r in state.get("reasons", []) if r.startswith(DEFERRED_REASON)), "")
    verdict = components.moderation(cfg).check(standalone) if standalone != typed else None
    if verdict is not None and verdict.safe:
        return {"guardrail": GUARDRAIL_OK}
    category = verdict.category if verdict is not None else typed_category
    return {"guardrail": "not_safe", "reasons": [f"{MODERATION_REASON}{category}"], "question": typed}


def after_condensing(state: KeelState) -> str:
    """Conditional edge: a follow-up whose standalone question the moderator refused is refused."""
    return "not_safe" if state.get("guardrail") == "not_safe" else "route_query"
