"""The sub-questions a compound question is searched as: by the chat model, where it can be trusted to.

The rules (retrievers/fanout.py) split only on question marks and on "and" before a new question, and
keep the words as written, so "What are the weight and the price of the AX3000?" stays whole and "How
much does the V25 weigh and what does it cost?" searches "what does it cost?" without the product. A
model whose chat template takes tools can name each part in full; its forced tool call (the server
constrains the reply to the schema) makes the answer a list, not prose to parse. The model is asked
only when the question may be compound (a conjunction, a comma, a second question mark), and every
failure (an error, a reply that does not fit, a part that is empty or runs long) falls back to the
rules, so a split never costs an answer.
"""

from __future__ import annotations

import logging
import re
from contextlib import nullcontext

from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, Field, ValidationError

from keel.chains.generation import private_model_config
from keel.chains.prompts import subquestion_prompt
from keel.components import Components
from keel.core.configuration import Configuration
from keel.core.state import Usage, usage_from_metadata
from keel.models.cancellation import GenerationCancelled, current_token
from keel.models.chat import generation_kwargs, resolve_runtime
from keel.models.structured import forced_tool_call, tool_arguments
from keel.retrievers.fanout import split_subquestions
from keel.runtime.model_pool import POOL

log = logging.getLogger(__name__)

# Words and marks without which a question asks one thing: the model is not asked about it.
_MAY_BE_COMPOUND = re.compile(
    r"\band\b|\bor\b|\balso\b|\bboth\b|\beach\b|\bcompare\b|\bversus\b|\bvs\b|\bas well as\b|[,;&]|\?.*\S.*\?",
    re.IGNORECASE,
)
# A part may run this many times the question's length (it repeats a name) before it counts as runaway.
_PART_LENGTH_FACTOR = 2


class SubQuestions(BaseModel):
    """The separate questions inside the user's question, each naming what it is about."""

    questions: list[str] = Field(description="One complete question per item; one item when it asks one thing.")


def uses_model(cfg: Configuration, components: Components) -> bool:
    """Whether this turn's split is the model's: ``subquestion_splitter`` model, or auto with a pool
    model served over an endpoint whose chat template takes tools."""
    if cfg.subquestion_splitter != "auto":
        return cfg.subquestion_splitter == "model"
    if components.chat_model is not None or cfg.chat_model_gguf:
        return False  # an application's own model or a deployment's own file: nothing says it takes tools
    model = POOL.get(cfg.chat_model)
    return bool(model and model.tools) and resolve_runtime(cfg) == "endpoint"


def plan_subquestions(
    question: str, cfg: Configuration, components: Components, config: RunnableConfig | None = None
) -> tuple[list[str], Usage | None]:
    """The sub-questions to search (``[question]`` when it asks one thing) and the model call's
    token usage (None when no model was asked)."""
    rules = split_subquestions(question, cfg.max_subquestions, cfg.subquestion_min_words) or [question]
    if cfg.max_subquestions <= 1 or not uses_model(cfg, components) or not _MAY_BE_COMPOUND.search(question):
        return rules, None
    messages = subquestion_prompt.format_messages(question=question, max_parts=cfg.max_subquestions)
    token = current_token()
    try:
        model = components.chat(cfg)  # an unreachable model server fails here: the answer node deals with it
        # counted as the request's running model call; refused once the request is over
        with token.model_call() if token is not None else nullcontext():
            reply = forced_tool_call(model, SubQuestions, messages, private_model_config(config),
                                     **generation_kwargs(model, cfg.subquestion_max_tokens, 0.0))
    except GenerationCancelled:
        raise
    except Exception as error:  # noqa: BLE001 - any failure of the model's split leaves the rules' split
        log.warning("the chat model could not split the question (%s); the rules split it", error)
        return rules, None
    usage = usage_from_metadata(getattr(reply, "usage_metadata", None))
    try:
        parts = _clean(tool_arguments(reply, SubQuestions).questions, question)
    except ValidationError as error:
        log.info("the chat model's split did not fit its schema (%s); the rules split the question", error)
        return rules, usage
    if parts is None:
        log.info("the chat model's split had an empty or runaway part; the rules split the question")
        return rules, usage
    if len(parts) > cfg.max_subquestions:  # the last ones are searched together, as the rules do
        parts = parts[: cfg.max_subquestions - 1] + [" ".join(parts[cfg.max_subquestions - 1 :])]
    return parts, usage


def _clean(parts: list[str], question: str) -> list[str] | None:
    """The model's parts, whitespace-normalised and de-duplicated; ``[question]`` for one part (its
    own words are the better query); None when a part is empty or runs away."""
    cleaned: dict[str, str] = {}
    for part in parts:
        text = " ".join(str(part).split())
        if not text or len(text) > _PART_LENGTH_FACTOR * max(len(question), 1):
            return None
        cleaned.setdefault(text.lower(), text)
    if len(cleaned) <= 1:
        return [question] if cleaned else None
    return list(cleaned.values())
