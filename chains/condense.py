"""A follow-up rewritten as the standalone question it stands for: LangChain's condense-question step.

"And on Sundays?" cannot be searched or checked on its own words. When a question leans on the
conversation (keel/checks/followup_rewrite.py says when), the chat model rewrites it from the last
turns; the rewrite is kept only if it keeps the user's words and adds only what the conversation said
(``rewrite_problem``). Otherwise the rules of chains/followup_rules.py rewrite it from the last
question, under the same check; if neither passes, the question is asked as typed. A question that
does not lean on the conversation costs nothing: no model call, no embedding.

The conversation is the graph's state, which the checkpointer (MongoDB for Keel's own) keeps: a
follow-up works after any delay, in every client that names the conversation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig

from keel.chains.context import message_text
from keel.chains.followup_rules import Similarity, rewrite_by_rules
from keel.chains.generation import private_model_config
from keel.chains.prompts import condense_prompt
from keel.checks.followup_rewrite import LEAD_ONLY, NOT_A_FOLLOWUP, followup_kind, rewrite_problem
from keel.checks.reasoning_filter import strip_reasoning
from keel.core.state import Usage, usage_from_metadata
from keel.models.cancellation import GenerationCancelled, current_token
from keel.models.chat import generation_kwargs

log = logging.getLogger(__name__)

# The last turns the rewrite reads: a follow-up leans on the turn before it, seldom further back.
TURNS_SHOWN = 2
# An earlier answer is shown to the rewriting model cut to this many words (its subject comes first).
ANSWER_WORDS_SHOWN = 60
MODEL, RULES, AS_ASKED, STANDALONE = "model", "rules", "as_asked", "standalone"
FOLLOWUP_REASON = "followup_"  # followup_model, followup_rules, followup_as_asked:<why>
# The rules read English; in another language only the chat model's rewrite is tried.
RULES_LANGUAGE = "en"


@dataclass(frozen=True)
class Condensed:
    """The question to search and answer, and how it was made: ``model`` or ``rules`` (rewritten),
    ``standalone`` (no rewrite needed) or ``as_asked`` (no rewrite passed; ``problem`` says why)."""

    question: str
    method: str
    problem: str = ""
    usage: Usage | None = None


def condense_question(
    question: str,
    history: Sequence[AnyMessage],
    previous: str,
    *,
    mode: str,
    model: Callable[[], Any] | None = None,
    similarity: Similarity | None = None,
    max_tokens: int = 48,
    language: str = RULES_LANGUAGE,
    config: RunnableConfig | None = None,
) -> Condensed:
    """The standalone question for ``question`` after ``history`` (earlier messages, oldest first);
    ``previous`` is the last question as it was answered (its own rewrite, if it had one). ``mode``:
    model (the chat model, then the rules), rules, or off. ``model`` makes the chat model when it
    is needed (a follow-up, in model mode), so a standalone question never starts one."""
    kind = followup_kind(question)
    if mode == "off" or kind == NOT_A_FOLLOWUP or not history:
        return Condensed(question, STANDALONE)
    turns = _last_turns(history)
    previous = previous or _last_question(turns)
    said = [previous, *(message_text(m) for m in turns)]  # a chain of follow-ups leans on the first subject
    problems: list[str] = []
    usage = None
    if mode == "model" and model is not None and kind != LEAD_ONLY:
        rewrite, usage = _model_rewrite(question, turns, model, max_tokens, config)
        problem = rewrite_problem(question, rewrite, said) if rewrite is not None else "model_failed"
        if problem is None:
            return Condensed(rewrite, MODEL, usage=usage)
        problems.append(f"model:{problem}")
    if not language.startswith(RULES_LANGUAGE):
        problems.append(f"rules:not_{RULES_LANGUAGE}")
        return Condensed(question, AS_ASKED, "; ".join(problems), usage)
    rewrite = rewrite_by_rules(question, previous, similarity or _no_similarity, last_answer=_last_answer(turns))
    problem = rewrite_problem(question, rewrite, said)
    if problem is None and rewrite.strip() != question.strip():
        return Condensed(rewrite, RULES, "; ".join(problems), usage)
    problems.append(f"rules:{problem or 'unchanged'}")
    return Condensed(question, AS_ASKED, "; ".join(problems), usage)


def _last_turns(history: Sequence[AnyMessage]) -> list[AnyMessage]:
    kept = [m for m in history if m.type in ("human", "ai") and message_text(m).strip()]
    return kept[-2 * TURNS_SHOWN:]


def _last_question(turns: Sequence[AnyMessage]) -> str:
    return next((message_text(m) for m in reversed(turns) if m.type == "human"), "")


def _last_answer(turns: Sequence[AnyMessage]) -> str:
    return next((message_text(m) for m in reversed(turns) if m.type == "ai"), "")


def _no_similarity(_text: str, others: Sequence[str]) -> list[float]:
    return [0.0 for _ in others]


def conversation_text(turns: Sequence[AnyMessage]) -> str:
    """The conversation as the rewrite prompt shows it: one line a turn, long answers cut short."""
    lines = []
    for message in turns:
        words = message_text(message).split()
        if message.type == "ai" and len(words) > ANSWER_WORDS_SHOWN:
            words = [*words[:ANSWER_WORDS_SHOWN], "..."]
        lines.append(f"{'user' if message.type == 'human' else 'assistant'}: {' '.join(words)}")
    return "\n".join(lines)


def _model_rewrite(question: str, turns, make_model, max_tokens: int, config) -> tuple[str | None, Usage | None]:
    messages = condense_prompt.format_messages(conversation=conversation_text(turns), question=question)
    token = current_token()
    try:
        model = make_model()  # an unreachable model server fails here: the rules rewrite instead
        with token.model_call() if token is not None else nullcontext():
            reply = model.bind(**generation_kwargs(model, max_tokens, 0.0)).invoke(
                messages, config=private_model_config(config))
    except GenerationCancelled:
        raise
    except Exception as error:  # noqa: BLE001 - a failed rewrite leaves the rules' rewrite
        log.warning("the chat model could not rewrite the follow-up (%s); the rules rewrite it", error)
        return None, None
    return _first_line(strip_reasoning(message_text(reply))), usage_from_metadata(getattr(reply, "usage_metadata", None))


def _first_line(text: str) -> str:
    """The rewrite as one question: its first non-empty line, without a label or quotes."""
    for line in text.strip().splitlines():
        line = line.strip().strip('"').strip()
        for label in ("Rewritten:", "Rewritten question:", "Question:", "user:", "Last question:"):
            if line.lower().startswith(label.lower()):
                line = line[len(label):].strip().strip('"')
        if line:
            return line
    return ""
