"""prefill_system_prompt: the deployment's system prompt plus what Keel knows about the turn."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from chains.prompts import BASE_SYSTEM_PROMPT
from graph.configuration import Configuration
from graph.state import KeelState


def prefill_system_prompt(state: KeelState, config: RunnableConfig) -> dict:
    cfg = Configuration.from_runnable_config(config)
    parts = [cfg.system_prompt or BASE_SYSTEM_PROMPT]
    if state.get("doc_ids"):
        parts.append(f"The user attached {len(state['doc_ids'])} document(s) to this conversation.")
    return {"system_prompt": "\n".join(parts)}
