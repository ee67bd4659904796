"""The real prompt with its passages fits the window of the real model: SmolLM2's tokenizer and chat template
count what the context budget (keel/chains/context.py) promised; unit_tests/test_context_budget.py holds the
same budget with a word tokenizer."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from keel.chains.answer_messages import GROUNDED, build_messages
from keel.core.configuration import Configuration
from keel.core.state import Passage
from keel.components import Components
from keel.chains.context import SAFETY_MARGIN_TOKENS, context_budget, count_message_tokens, fit_passages


@pytest.mark.real
def test_the_real_prompt_with_its_passages_fits_the_window_of_the_real_model(keel_config):
    from keel.models.tokenizer import get_chat_tokenizer

    cfg = Configuration(keel_home=keel_config.keel_home, llm_context_window=4096, max_context_parents=8)
    components = Components(tokenizer=get_chat_tokenizer(cfg))
    tokenizer = components.chat_tokenizer(cfg)
    assert tokenizer.chat_template, "SmolLM2's tokenizer carries its chat template"
    question = "Who built the Varden lighthouse, and how far can its lamp be seen?"
    history = [HumanMessage("When does the ferry leave?"), AIMessage("The ferry leaves at 7 am [Source 1].")]
    system_prompt = "You are Keel, an assistant that answers questions from the user's documents.\nAlways answer in English."
    long_text = " ".join(["The Varden lighthouse was built in 1874 by the engineer Mara Holt."] * 150)
    passages = [Passage(number=i, text=long_text, source="report.pdf", page=i, doc_id="d", score=0.7, similarity=0.7)
                for i in range(1, 6)]
    budget = context_budget(cfg, components, [system_prompt, question, *(m.content for m in history)])
    fitted = fit_passages(passages, budget, cfg, components)
    assert fitted and len(fitted) < len(passages), "the window holds some but not all of these passages"
    messages = build_messages(GROUNDED, question, fitted, history, system_prompt, cfg)
    prompt_tokens = count_message_tokens(messages, cfg, components)
    assert prompt_tokens + cfg.reserve_tokens <= cfg.llm_context_window
    # and the budget is not wasted: less than one safety margin plus a cut-off passage's header is left
    assert cfg.llm_context_window - cfg.reserve_tokens - prompt_tokens <= SAFETY_MARGIN_TOKENS + 64
