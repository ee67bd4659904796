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


def condense_question(state: KeelState, config: RunnableConfig, *, components: Components) -> dict:
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
    return update
