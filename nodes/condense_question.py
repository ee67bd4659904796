"""condense_question: a follow-up becomes the standalone question it stands for (chains/condense.py),
read from the conversation the checkpointer keeps, so everything after it (search, answer, checks)
works on "When is the Alder clinic open on Sundays?", not "And on Sundays?". The user's own words stay
in the history; ``standalone_question`` says what the turn was answered as."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from keel.chains.condense import condense_question as condense
from keel.chains.context import history_before_question
from keel.components import Components
from keel.core.configuration import Configuration
from keel.core.state import KeelState


def condense_question(state: KeelState, config: RunnableConfig, *, components: Components) -> dict:
    cfg = Configuration.from_runnable_config(config)
    question = state.get("question", "")
    history = history_before_question(state.get("messages", []), cfg.history_max_turns)
    # the last turn's own standalone question, kept in the checkpoint; before this field existed, its words
    previous = state.get("standalone_question") or ""
    needs_model = cfg.followup_rewrite == "model"
    condensed = condense(
        question, history, previous, mode=cfg.followup_rewrite,
        model=components.chat(cfg) if needs_model and history else None,
        similarity=components.similarity(cfg) if history and cfg.followup_rewrite != "off" else None,
        max_tokens=cfg.followup_rewrite_max_tokens, config=config,
    )
    update: dict = {"question": condensed.question, "standalone_question": condensed.question}
    if condensed.method not in ("standalone",):
        update["reasons"] = [f"followup_{condensed.method}" + (f":{condensed.problem}" if condensed.problem else "")]
    if condensed.usage:
        update["usage"] = condensed.usage
    return update
