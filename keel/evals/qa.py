"""`keel eval qa FILE` and `keel eval helpdesk`: answers measured the way a user gets them.

The set's documents are ingested as files, through the same loaders, splitter and settings as
`keel ingest`, for a fresh user; every question is asked the way `keel ask` asks it (the same graph
and run configuration: MongoDB history, strict grounding, a new conversation per question). The
caller passes those three steps in, so this module scores and never builds a session of its own.

The file format (keel/evals/helpdesk/README.md; the bundled sets in keel/evals/sets/README.md):
    {"documents": ["docs/a.md", ...],                        # relative to the file's folder
     "split": "tune" | "choose" | "report",                  # optional: what the set may be used for
     "questions": [{"id", "question", "answers": [gold, ...], "answerable": bool,
                    "category", "source": "docs/a.md",       # the gold document (answerable ones)
                    "absent_terms": [...]}],                 # optional: names no document contains
     "conversations": [{"id", "category", "turns": [         # optional: keel eval conversations
                    {"question", "answers", "answerable", "source", "standalone"}, ...]}]}
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from keel.checks.answer_checks import has_artifacts
from keel.checks.grounding import verify_grounding
from keel.core.configuration import Configuration
from keel.evals.check_attribution import attempts_logged, attribution, judged_attempts
from keel.evals.scoring import Outcome, by_category, contains_gold, metrics
from keel.evals.squad2 import sample_questions
from keel.loaders.registry import loader_for

BUNDLED_HELPDESK = Path(__file__).resolve().parent / "helpdesk" / "questions.json"
BUNDLED_SETS = Path(__file__).resolve().parent / "sets"
# What a set may be used for: rules and thresholds are developed on tune, a change is kept only if
# choose improves or holds, and report is never used for either (its numbers are what is published).
SPLITS = ("tune", "choose", "report")


class QASetError(ValueError):
    """A question file that cannot be evaluated; the message names the file and the problem."""


@dataclass(frozen=True)
class QAQuestion:
    """One question of a QA set: gold answers or unanswerable, its category and the document it is about."""
    qid: str
    question: str
    answers: list[str]
    answerable: bool
    category: str
    source: str | None = None
    absent_terms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Turn:
    """One turn of a conversation; ``standalone`` is the question a later turn stands for."""

    question: QAQuestion
    standalone: str = ""


@dataclass(frozen=True)
class Conversation:
    """One conversation of a QA set: turns that lean on the ones before."""
    cid: str
    category: str
    turns: tuple[Turn, ...]


@dataclass
class QASet:
    """A QA set: its documents, questions and conversations, and its split (tune, choose, report)."""
    path: Path
    name: str
    documents: list[Path]
    questions: list[QAQuestion]
    split: str | None = None
    conversations: list[Conversation] = field(default_factory=list)

    def document_named(self, relative: str) -> Path:
        return (self.path.parent / relative).resolve()


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) and item.strip() for item in value)


def _question(raw: Any, number: int, documents: set[str]) -> QAQuestion:
    where = f"question {number}" + (f" (id {raw.get('id')!r})" if isinstance(raw, dict) and "id" in raw else "")
    if not isinstance(raw, dict):
        raise QASetError(f"{where}: must be an object")
    for key, kind in (("id", str), ("question", str), ("category", str), ("answerable", bool)):
        if not isinstance(raw.get(key), kind) or (kind is str and not raw[key].strip()):
            raise QASetError(f"{where}: {key!r} must be a non-empty {kind.__name__}"
                             if kind is str else f"{where}: 'answerable' must be true or false")
    answers = raw.get("answers", [])
    if not _strings(answers):
        raise QASetError(f"{where}: 'answers' must be a list of non-empty strings")
    if raw["answerable"] and not answers:
        raise QASetError(f"{where}: an answerable question needs at least one gold answer in 'answers'")
    if not raw["answerable"] and answers:
        raise QASetError(f"{where}: an unanswerable question must have no 'answers'")
    source = raw.get("source")
    if raw["answerable"] and source not in documents:
        raise QASetError(f"{where}: 'source' must name one of the set's documents, got {source!r}")
    absent = raw.get("absent_terms", [])
    if not _strings(absent):
        raise QASetError(f"{where}: 'absent_terms' must be a list of non-empty strings")
    return QAQuestion(raw["id"], raw["question"], list(answers), raw["answerable"], raw["category"], source,
                      tuple(absent))


def _conversation(raw: Any, number: int, documents: set[str]) -> Conversation:
    where = f"conversation {number}" + (f" (id {raw.get('id')!r})" if isinstance(raw, dict) and "id" in raw else "")
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not raw["id"].strip():
        raise QASetError(f"{where}: must be an object with a non-empty 'id'")
    turns = raw.get("turns")
    if not isinstance(turns, list) or len(turns) < 2:
        raise QASetError(f"{where}: 'turns' must list at least two turns")
    parsed = []
    for index, turn in enumerate(turns, 1):
        if not isinstance(turn, dict):
            raise QASetError(f"{where}, turn {index}: must be an object")
        standalone = turn.get("standalone", "")
        if index > 1 and (not isinstance(standalone, str) or not standalone.strip()):
            raise QASetError(f"{where}, turn {index}: a later turn needs the 'standalone' question it stands for")
        item = {"category": raw.get("category") or "followup", **turn, "id": f"{raw['id']}/{index}"}
        try:
            parsed.append(Turn(_question(item, index, documents), standalone if index > 1 else ""))
        except QASetError as error:
            raise QASetError(f"{where}, turn {index}: {str(error).split(': ', 1)[1]}") from None
    return Conversation(raw["id"], str(raw.get("category") or "followup"), tuple(parsed))


def load_qa_set(path: Path) -> QASet:
    """Read and check a question file; every problem is a ``QASetError`` naming the file and where."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise QASetError(f"{path}: not a readable JSON question file ({error})") from error
    try:
        if not isinstance(data, dict):
            raise QASetError("the top level must be an object with 'documents' and 'questions'")
        documents = data.get("documents")
        if not _strings(documents) or not documents:
            raise QASetError("'documents' must be a non-empty list of file paths relative to the question file")
        missing = [d for d in documents if not (path.parent / d).is_file()]
        if missing:
            raise QASetError(f"document(s) not found next to the question file: {', '.join(missing)}")
        raw_questions = data.get("questions")
        if not isinstance(raw_questions, list) or not raw_questions:
            raise QASetError("'questions' must be a non-empty list")
        questions = [_question(raw, n, set(documents)) for n, raw in enumerate(raw_questions, 1)]
        duplicates = sorted({q.qid for q in questions if sum(1 for o in questions if o.qid == q.qid) > 1})
        if duplicates:
            raise QASetError(f"duplicate question id(s): {', '.join(duplicates)}")
        split = data.get("split")
        if split is not None and split not in SPLITS:
            raise QASetError(f"'split' must be one of {', '.join(SPLITS)}, got {split!r}")
        raw_conversations = data.get("conversations", [])
        if not isinstance(raw_conversations, list):
            raise QASetError("'conversations' must be a list")
        conversations = [_conversation(raw, n, set(documents)) for n, raw in enumerate(raw_conversations, 1)]
        ids = [c.cid for c in conversations]
        if len(ids) != len(set(ids)):
            raise QASetError(f"duplicate conversation id(s): {', '.join(sorted({i for i in ids if ids.count(i) > 1}))}")
    except QASetError as error:
        raise QASetError(f"{path}: {error}") from None
    name = str(data.get("name") or path.stem)
    return QASet(path, name, [(path.parent / d).resolve() for d in documents], questions, split, conversations)


TRANSLATIONS_FILE = "translations.json"  # beside a question file: its questions in other languages


def in_language(qa_set: QASet, language: str) -> QASet:
    """The set as asked in ``language``: the questions translated in ``translations.json`` beside the
    question file (``{"questions": {id: {language: text}}}``), the others left out; the documents and
    gold answers stay as they are, so this measures questions across languages."""
    if language == "en":
        return qa_set
    path = qa_set.path.parent / TRANSLATIONS_FILE
    try:
        translations = json.loads(path.read_text(encoding="utf-8"))["questions"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise QASetError(f"{qa_set.path}: no readable {TRANSLATIONS_FILE} beside it ({error})") from error
    questions = [dataclasses.replace(q, question=translations[q.qid][language]) for q in qa_set.questions
                 if language in translations.get(q.qid, {})]
    if not questions:
        raise QASetError(f"{path}: no question translated to {language!r}")
    return dataclasses.replace(qa_set, questions=questions, conversations=[], name=f"{qa_set.name} ({language})")


def bundled_sets(split: str | None = None) -> list[Path]:
    """The question files under keel/evals/sets (of one split, if given), by name."""
    files = sorted(BUNDLED_SETS.glob("*/questions.json"))
    if split is None:
        return files
    return [f for f in files if json.loads(f.read_text(encoding="utf-8")).get("split") == split]


def document_texts(paths: Sequence[Path], cfg: Configuration) -> list[str]:
    """The documents' text as the loaders read it: what an answer must be grounded in."""
    return [page.page_content for path in paths for page in loader_for(path, cfg=cfg).lazy_load()
            if page.page_content.strip()]


def ingest_set(qa_set: QASet, ingest: Callable[[list[Path]], Any], cfg: Configuration) -> list[str]:
    """Ingest every document of the set (look-alikes included) and return their text as the loaders
    read it, what answers are held to; a document that cannot be ingested is a QASetError naming it."""
    report = ingest(list(qa_set.documents))
    if report.errors:
        failed = "; ".join(f"{e['source']}: {e['error']}" for e in report.errors)
        raise QASetError(f"{qa_set.path}: document(s) could not be ingested: {failed}")
    return document_texts(qa_set.documents, cfg)


def scored_outcome(question: QAQuestion, result: dict, seconds: float, passages: Sequence[str],
                   cfg: Configuration, is_leak: Callable[[str], bool] | None = None,
                   meaning: str | None = None) -> Outcome:
    """One asked question scored as a user meets its answer: right, wrong or "I don't know", leaked
    markers, and, for a success, grounded sentence by sentence in the documents (``meaning``: the
    question the answer is read against, a follow-up's standalone one)."""
    is_leak = is_leak or has_artifacts
    outcome = Outcome(
        qid=question.qid, question=question.question, impossible=not question.answerable,
        answers=question.answers, answer=result.get("answer") or "", status=result.get("status") or "error",
        attempts=int(result.get("attempts") or 0), latency_s=round(seconds, 3),
        reasons=list(result.get("reasons") or []), category=question.category, source=question.source or "",
    )
    outcome.leaked = is_leak(outcome.answer)
    if outcome.status == "success":
        # Independent strict check: every sentence grounded in the documents, no paraphrase waiver.
        strict = verify_grounding(outcome.answer, passages, question=meaning or question.question,
                                  min_overlap=cfg.grounding_word_overlap)
        outcome.grounded = strict.passes(1.0)
        outcome.correct = question.answerable and contains_gold(outcome.answer, question.answers)
    return outcome


def run(
    qa_set: QASet,
    cfg: Configuration,
    graph,
    ingest: Callable[[list[Path]], Any],
    run_config: Callable[[Configuration, str], dict],
    limit: int | None = None,
    seed: int = 0,
    progress: bool = False,
    is_leak: Callable[[str], bool] | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> dict[str, Any]:
    """Ingest every document of the set (look-alikes included, whatever the sample), ask the sampled
    questions one new conversation each, and score them. ``cfg.user_id`` should be a fresh user."""
    is_leak = is_leak or has_artifacts
    chosen = sample_questions(qa_set.questions, limit, seed)
    passages = ingest_set(qa_set, ingest, cfg)
    iterator = chosen
    if progress:
        from tqdm import tqdm

        iterator = tqdm(chosen, desc=qa_set.name, unit="q")
    outcomes: list[Outcome] = []
    for question in iterator:
        started = time.perf_counter()
        with attempts_logged() as attempts:
            result = graph.invoke({"messages": [("human", question.question)]}, run_config(cfg, uuid.uuid4().hex))
        outcome = scored_outcome(question, result, time.perf_counter() - started, passages, cfg, is_leak)
        outcome.attempt_checks = judged_attempts(attempts, question.answers, question.answerable)
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return {**metrics(outcomes), "by_category": by_category(outcomes), "checks": attribution(outcomes),
            "set": qa_set.name,
            "file": str(qa_set.path), "outcomes": [asdict(o) for o in outcomes]}
