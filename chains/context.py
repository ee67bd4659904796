"""What the answering nodes share about the prompt: the question, the history, and the token budget
the passages must fit (the passages themselves are retrievers/passages.py's).

The budget is what is really left of the chat model's context window (cfg.llm_context_window):
minus the answer reserve, the prompt template with its rules and examples (measured with the
model's own tokenizer and chat template), the system prompt, the question and the history.
Passages are then taken best first until it is spent. How many children retrieval fetches in the
first place is a logistic k(x) of the same window (retrievers/k_sizing.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from keel.chains.answer_messages import GROUNDED, build_messages, format_passage
from keel.components import Components
from keel.core.configuration import Configuration
from keel.core.state import Passage
from keel.core.text import content_text
from keel.models.tokenizer import truncate_to_tokens

# Chat-template tokens per message where the tokenizer has no template to measure with, and a
# margin for tokens merging across the joins of separately counted texts.
PER_MESSAGE_TOKENS = 8
SAFETY_MARGIN_TOKENS = 32
SEPARATOR_TOKENS = 2  # the blank line between two passages
CUT_MARGIN_TOKENS = 4
MIN_CUT_TOKENS = 32  # a passage cut shorter than this is more noise than context


def message_text(message: AnyMessage) -> str:
    """A message's text, whatever its content is (a string, or text and picture blocks)."""
    return content_text(message.content)


def latest_question(messages: Sequence[AnyMessage]) -> str:
    """The text of the user's last message: the question this turn answers (empty when none)."""
    return message_text(_latest_human(messages)).strip() if _latest_human(messages) is not None else ""


def latest_question_content(messages: Sequence[AnyMessage]):
    """The last question's content as sent: text, or a list of content blocks (text and pictures)."""
    message = _latest_human(messages)
    return message.content if message is not None else ""


def _latest_human(messages: Sequence[AnyMessage]):
    for message in reversed(messages):
        if isinstance(message, HumanMessage) or getattr(message, "type", "") == "human":
            return message
    return None


def _as_text(message: AnyMessage) -> AnyMessage:
    return message if isinstance(message.content, str) else message.model_copy(update={"content": message_text(message)})


def history_before_question(
    messages: Sequence[AnyMessage],
    max_turns: int,
    max_tokens: int = 0,
    count_tokens: Callable[[str], int] | None = None,
) -> list[AnyMessage]:
    """Earlier human/AI turns (not the current question), the newest ``max_turns`` pairs, then the
    oldest dropped while they exceed ``max_tokens`` (when > 0): a long conversation must never
    squeeze the passages out of the context window. A single turn that alone is over is dropped too.
    An earlier question's pictures are not sent again: it is kept as its text (what was read from
    them is in the answer that followed)."""
    earlier = [_as_text(m) for m in list(messages)[:-1] if isinstance(m, (HumanMessage, AIMessage))]
    history = earlier[-2 * max_turns :] if max_turns > 0 else []
    if max_tokens > 0 and count_tokens is not None:
        costs = [count_tokens(message_text(m)) + PER_MESSAGE_TOKENS for m in history]
        while history and sum(costs) > max_tokens:
            drop = 2 if len(history) > 1 and history[0].type == "human" else 1  # a whole turn at a time
            history, costs = history[drop:], costs[drop:]
    return history


def fit_passages(
    passages: Sequence[Passage], budget_tokens: int, cfg: Configuration, components: Components
) -> list[Passage]:
    """Passages in their order (best first) until the token budget is spent, renumbered 1..n.

    A passage that does not fit whole is cut on a token boundary to what is left (if at least
    MIN_CUT_TOKENS of its text fit); then fitting stops. At most cfg.max_context_parents (when
    > 0). The formatted passages plus separators never exceed ``budget_tokens``."""
    fitted: list[Passage] = []
    remaining = budget_tokens
    limit = cfg.max_context_parents if cfg.max_context_parents > 0 else len(passages)
    for passage in list(passages)[:limit]:
        numbered = Passage(**{**passage, "number": len(fitted) + 1})
        cost = components.count_tokens(cfg, format_passage(numbered)) + SEPARATOR_TOKENS
        if cost > remaining:
            header = components.count_tokens(cfg, format_passage(Passage(**{**numbered, "text": ""})))
            room = remaining - header - SEPARATOR_TOKENS - CUT_MARGIN_TOKENS
            if room < MIN_CUT_TOKENS:
                break
            text = truncate_to_tokens(components.chat_tokenizer(cfg), passage["text"], room)
            numbered = Passage(**{**numbered, "text": text})
            cost = components.count_tokens(cfg, format_passage(numbered)) + SEPARATOR_TOKENS
            if not text or cost > remaining:
                break
            fitted.append(numbered)
            break
        fitted.append(numbered)
        remaining -= cost
    return fitted


def context_budget(cfg: Configuration, components: Components, fixed_texts: Iterable[str]) -> int:
    """Tokens really left for passages: the context window minus the answer reserve, the prompt's
    own scaffolding (rules, few-shot examples, labels, chat template: measured, not guessed), and
    the system prompt, question and history (``fixed_texts``, each with its message overhead)."""
    used = prompt_scaffold_tokens(cfg, components)
    used += sum(components.count_tokens(cfg, text) + PER_MESSAGE_TOKENS for text in fixed_texts)
    return components.fitted(cfg).llm_context_window - used - cfg.reserve_tokens - SAFETY_MARGIN_TOKENS


def prompt_scaffold_tokens(cfg: Configuration, components: Components) -> int:
    """Tokens of the grounded prompt (the largest strategy) with empty question, history,
    system prompt and context: what the template itself costs."""
    return count_message_tokens(build_messages(GROUNDED, "", [], [], "", cfg), cfg, components)


def count_message_tokens(messages: Sequence[AnyMessage], cfg: Configuration, components: Components) -> int:
    """Tokens of ``messages`` as the model sees them: through the tokenizer's chat template when
    it has one (with the generation prompt), else text tokens plus PER_MESSAGE_TOKENS each."""
    tokenizer = components.chat_tokenizer(cfg)
    if getattr(tokenizer, "chat_template", None) and callable(getattr(tokenizer, "apply_chat_template", None)):
        roles = {"human": "user", "ai": "assistant", "system": "system"}
        rendered = tokenizer.apply_chat_template(
            [{"role": roles.get(m.type, "user"), "content": message_text(m)} for m in messages],
            tokenize=False,
            add_generation_prompt=True,
        )
        return components.count_tokens(cfg, rendered)
    return sum(components.count_tokens(cfg, message_text(m)) + PER_MESSAGE_TOKENS for m in messages)
