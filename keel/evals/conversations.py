"""`keel eval conversations FILE` and `keel eval rewrites FILE`: follow-ups measured as a user meets them.

conversations: the set's documents are ingested as `keel eval qa` does, then each conversation is
asked turn by turn in one conversation id, exactly as `keel ask --conversation ID` asks (the same
graph, MongoDB history): a later turn has only the conversation to lean on. Each turn is scored like
a QA question against its gold; ``later_turns`` holds the rates of the turns after the first, which is
what the follow-up machinery decides.

rewrites: no search, no answer; each later turn's rewrite (chains/condense.py) is compared with the
``standalone`` question the set gives for it, to choose the rewrite mode on its own cost (seconds).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from keel.checks.followup_rewrite import meaning_words
from keel.core.configuration import Configuration
from keel.evals.qa import Conversation, QASet, QASetError, ingest_set, scored_outcome
from keel.evals.scoring import Outcome, by_category, metrics, normalize


def run(
    qa_set: QASet,
    cfg: Configuration,
    graph,
    ingest: Callable[[list], Any],
    run_config: Callable[[Configuration, str], dict],
    progress: bool = False,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> dict[str, Any]:
    """Ingest the set's documents and ask every conversation, turn by turn, in its own conversation id."""
    if not qa_set.conversations:
        raise QASetError(f"{qa_set.path}: the set has no 'conversations'")
    passages = ingest_set(qa_set, ingest, cfg)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=sum(len(c.turns) for c in qa_set.conversations), desc=f"{qa_set.name} (turns)", unit="turn")
    outcomes: list[Outcome] = []
    for conversation in qa_set.conversations:
        thread = f"eval-{conversation.cid}-{uuid.uuid4().hex[:8]}"
        for turn in conversation.turns:
            outcome = _ask(turn, graph, run_config(cfg, thread), passages, cfg)
            outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    later = [o for o in outcomes if not o.qid.endswith("/1")]
    return {**metrics(outcomes), "later_turns": metrics(later), "by_category": by_category(later),
            "set": qa_set.name, "file": str(qa_set.path), "conversations": len(qa_set.conversations),
            "outcomes": [asdict(o) for o in outcomes]}


def _ask(turn, graph, config: dict, passages: list[str], cfg: Configuration) -> Outcome:
    started = time.perf_counter()
    result = graph.invoke({"messages": [("human", turn.question.question)]}, config)
    return scored_outcome(turn.question, result, time.perf_counter() - started, passages, cfg,
                          meaning=turn.standalone or None)


def rewrite_scores(
    conversations: Sequence[Conversation],
    rewrite: Callable[[str, list, str], str],
) -> dict[str, Any]:
    """Each later turn rewritten by ``rewrite(question, history, previous)`` against the set's standalone
    question: ``exact`` (same words after SQuAD normalisation) and ``same_meaning_words`` (the same
    content words: what search and the checks read). As in a conversation, ``previous`` is the last
    turn's own rewrite, so a wrong one carries on; the history's answers are the gold (or "I don't
    know") in a sentence, shorter than a real answer."""
    rows = []
    for conversation in conversations:
        history: list = []
        previous = ""
        for index, turn in enumerate(conversation.turns):
            asked = turn.question.question
            if index:
                started = time.perf_counter()
                got = rewrite(asked, list(history), previous)
                rows.append({"id": turn.question.qid, "question": asked, "expected": turn.standalone, "rewrite": got,
                             "exact": normalize(got) == normalize(turn.standalone),
                             "same_meaning_words": meaning_words(got) == meaning_words(turn.standalone),
                             "seconds": round(time.perf_counter() - started, 3)})
            previous = got if index else asked
            answer = (f"{turn.question.answers[0]} [Source 1]." if turn.question.answers
                      else "I don't know based on the provided documents.")
            history += [HumanMessage(asked), AIMessage(answer)]
    count = len(rows) or 1
    return {"turns": len(rows), "exact": round(sum(r["exact"] for r in rows) / count, 3),
            "same_meaning_words": round(sum(r["same_meaning_words"] for r in rows) / count, 3),
            "mean_seconds": round(sum(r["seconds"] for r in rows) / count, 3), "rows": rows}
