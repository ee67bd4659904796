"""prefill_system_prompt: the deployment's system prompt plus what Keel knows about the turn:
the question's language (answers follow it when enforce_language_match is on and the chat model
writes it; else the answer is in the default language, framed in the asker's)."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from keel.chains.prompts import ATTACHED_DOCUMENTS_NOTE, BASE_SYSTEM_PROMPT, LANGUAGE_RULE
from keel.checks.language import answer_language, detect_language, language_name
from keel.core.configuration import Configuration
from keel.core.state import KeelState


def prefill_system_prompt(state: KeelState, config: RunnableConfig) -> dict:
    """The system prompt of this turn: the deployment's, with the answer language and attached documents."""
    cfg = Configuration.from_runnable_config(config)
    language = cfg.default_language
    if cfg.enforce_language_match:
        language = detect_language(state.get("question", ""), cfg.default_language, cfg.language_min_confidence)
    written_in = answer_language(language, cfg)
    parts = [cfg.system_prompt or BASE_SYSTEM_PROMPT, LANGUAGE_RULE.format(language=language_name(written_in))]
    if cfg.doc_ids:
        parts.append(ATTACHED_DOCUMENTS_NOTE.format(count=len(cfg.doc_ids)))
    return {"system_prompt": "\n".join(parts), "language": language, "answer_language": written_in}
