"""guardrails: the first node of every turn. The question's pictures (chains/image_inputs.py): kept
for a model that reads them, else read into the question; then the token budget with the chat
model's real tokenizer, then moderation (a refused follow-up is judged again as the standalone
question it stands for, by condense_question). It also resets the per-turn fields, since the
conversation's state persists."""

from __future__ import annotations

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig

from keel.chains.context import latest_question, latest_question_content
from keel.chains.image_inputs import (
    image_note,
    question_images,
    question_with_image_text,
    read_images,
)
from keel.checks.followup_rewrite import NOT_A_FOLLOWUP, followup_kind
from keel.components import Components
from keel.core.configuration import Configuration
from keel.core.state import KeelState

GUARDRAIL_OK = "ok"
RECHECK_AFTER_REWRITE = "recheck_after_rewrite"  # a refused follow-up, judged again once rewritten
DEFERRED_REASON = "moderation_deferred:"  # moderation_deferred:<the typed follow-up's category>


def guardrails(state: KeelState, config: RunnableConfig, *, components: Components) -> dict:
    """Check the question before anything runs: empty, too long for the budget, or refused by the
    moderator; pictures sent with it are read here."""
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
    if not verdict.safe and _judged_after_rewrite(question, messages, cfg):
        # "And their email?" alone reads as a request for private data; what is answered is the
        # standalone question condense_question writes, and that is judged instead (or this verdict
        # holds, when no rewrite stands for it)
        return {**turn, "guardrail": RECHECK_AFTER_REWRITE, "reasons": [f"{DEFERRED_REASON}{verdict.category}"]}
    if not verdict.safe:
        return {**turn, "guardrail": "not_safe", "reasons": [f"moderation:{verdict.category}"]}
    return turn


def _judged_after_rewrite(question: str, messages: list, cfg: Configuration) -> bool:
    """A follow-up (English cues) in a conversation with earlier turns, that will be rewritten."""
    earlier = any(isinstance(m, HumanMessage) for m in messages[:-1])
    return earlier and cfg.followup_rewrite != "off" and followup_kind(question) != NOT_A_FOLLOWUP


def after_guardrails(state: KeelState) -> str:
    """Conditional edge: where the turn goes once the guardrails have looked at it."""
    verdict = state.get("guardrail", GUARDRAIL_OK)
    if verdict == "exceeded_token_budget":
        return "exceeded_token_budget"
    if verdict in ("not_safe", "empty"):
        return "not_safe"
    return "prefill_system_prompt"  # a deferred verdict too: condense_question judges the rewrite
