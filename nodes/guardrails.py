"""guardrails: the first node of every turn. The question's pictures (chains/image_inputs.py): kept
for a model that reads them, else read into the question; then the token budget with the chat
model's real tokenizer, then moderation. It also resets the per-turn fields, since the
conversation's state persists."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from keel.core.configuration import Configuration
from keel.core.state import KeelState
from keel.components import Components
from keel.chains.context import latest_question, latest_question_content
from keel.chains.image_inputs import image_note, question_images, question_with_image_text, read_images

GUARDRAIL_OK = "ok"


def guardrails(state: KeelState, config: RunnableConfig, *, components: Components) -> dict:
    cfg = Configuration.from_runnable_config(config)
    messages = state.get("messages", [])
    question, pictures = latest_question(messages), {"images": [], "image_note": ""}
    images = question_images(latest_question_content(messages), cfg)  # a bad picture: ImageInputError
    if images and cfg.chat_model_reads_images:
        pictures["images"] = [image.part() for image in images]
    elif images:  # a text-only model gets the pictures' text in the question, and the answer says what was read
        texts = read_images(images, lambda data: components.read_image(cfg, data), cfg)
        question, pictures["image_note"] = question_with_image_text(question, texts), image_note(texts)
    turn = {
        **pictures,
        "question": question,
        "answer": "",
        "status": "",
        "route": "",
        "sources": [],
        "passages": [],
        "doc_ids": [],
        "subquestions": [],
        "reasons": [],
        "quality": 0.0,
        "confidence": 0.0,
        "grounding_score": None,
        "parse_layer": "",
        "sources_markdown": "",
        "sections": None,
        "attempts": 0,
        "continuations": 0,
        "review": None,
        "held_answer": None,
        "standalone_question": question,  # condense_question rewrites it for a follow-up
        "usage": None,  # add_usage: None starts the turn's counter at zero
        "guardrail": GUARDRAIL_OK,
    }
    if not question.strip():
        return {**turn, "guardrail": "empty", "reasons": ["empty_question"]}
    tokens = components.count_tokens(cfg, question)
    if tokens > cfg.max_input_tokens:
        return {**turn, "guardrail": "exceeded_token_budget", "reasons": [f"input_tokens={tokens}"]}
    verdict = components.moderation(cfg).check(question)
    if not verdict.safe:
        return {**turn, "guardrail": "not_safe", "reasons": [f"moderation:{verdict.category}"]}
    return turn


def after_guardrails(state: KeelState) -> str:
    """Conditional edge: where the turn goes once the guardrails have looked at it."""
    verdict = state.get("guardrail", GUARDRAIL_OK)
    if verdict == "exceeded_token_budget":
        return "exceeded_token_budget"
    if verdict in ("not_safe", "empty"):
        return "not_safe"
    return "prefill_system_prompt"
