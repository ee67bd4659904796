"""`keel eval squad2`: grounded answering and abstention on a SQuAD 2.0 file, through the graph.

Each article is ingested as one document (a page per paragraph) for a fresh user; every sampled
question is asked through the whole graph in strict grounding mode, one new conversation each.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langchain_core.documents import Document

from keel.checks.answer_checks import has_artifacts
from keel.checks.grounding import verify_grounding
from keel.core.configuration import Configuration
from keel.evals.scoring import Outcome, by_category, contains_gold, metrics
from keel.loaders.base import doc_id_for_bytes, inheritable_metadata
from keel.splitters.parent_child import ParentChildSplitter


@dataclass
class Question:
    """One SQuAD 2.0 question with its gold answers, or impossible."""
    qid: str
    article: str
    question: str
    answers: list[str]
    impossible: bool


@dataclass
class Article:
    """One SQuAD 2.0 article: the paragraphs ingested as a document."""
    title: str
    paragraphs: list[str]


def load_squad(path: Path) -> tuple[list[Article], list[Question]]:
    """A SQuAD 2.0 file's articles and questions (a file that is not one is a clear error)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))["data"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not a SQuAD 2.0 file ({error})") from error
    articles, questions = [], []
    for article in data:
        title = str(article.get("title", f"article-{len(articles) + 1}")).replace("_", " ")
        paragraphs = [p["context"] for p in article["paragraphs"]]
        articles.append(Article(title, paragraphs))
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                answers = [a["text"] for a in qa.get("answers", [])]
                questions.append(Question(str(qa["id"]), title, qa["question"], answers, bool(qa.get("is_impossible"))))
    if not questions:
        raise ValueError(f"{path}: no questions")
    return articles, questions


def sample_questions(questions: list[Question], limit: int | None, seed: int) -> list[Question]:
    """``limit`` questions drawn with ``seed`` (all of them without a limit): the same sample each run."""
    if not limit or limit >= len(questions):
        return list(questions)
    return random.Random(seed).sample(questions, limit)


def ingest_articles(articles: list[Article], store, cfg: Configuration, user_id: str) -> dict[str, str]:
    """One document per article, a page per paragraph; returns title → doc_id."""
    splitter = ParentChildSplitter.from_config(cfg)
    doc_ids = {}
    for article in articles:
        doc_id = doc_id_for_bytes("\n\n".join(article.paragraphs).encode("utf-8"))
        pages = [
            Document(
                page_content=text,
                metadata=inheritable_metadata(
                    user_id=user_id, conversation_id=None, source=article.title, doc_id=doc_id,
                    page=number, total_pages=len(article.paragraphs),
                ),
            )
            for number, text in enumerate(article.paragraphs, 1)
        ]
        parents, children = splitter.split_documents(pages)
        store.add_document(parents, children)
        doc_ids[article.title] = doc_id
    return doc_ids


def run(
    path: Path,
    cfg: Configuration,
    graph,
    store,
    limit: int | None = None,
    seed: int = 0,
    progress: bool = False,
    is_leak: Callable[[str], bool] | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``on_outcome`` sees each question's outcome as soon as it is scored (a long run's partial results);
    ``settings`` are Configuration fields sent with every question (an experiment's changes)."""
    is_leak = is_leak or has_artifacts
    articles, questions = load_squad(path)
    chosen = sample_questions(questions, limit, seed)
    used_titles = {q.article for q in chosen}
    used_articles = [a for a in articles if a.title in used_titles]
    user_id = f"eval-{uuid.uuid4().hex[:10]}"
    ingest_articles(used_articles, store, cfg, user_id)
    paragraphs = {a.title: a.paragraphs for a in used_articles}

    iterator = chosen
    if progress:
        from tqdm import tqdm

        iterator = tqdm(chosen, desc="squad2", unit="q")
    outcomes: list[Outcome] = []
    for question in iterator:
        config = {"configurable": {"grounding_mode": "strict", **(settings or {}), "user_id": user_id,
                                   "thread_id": uuid.uuid4().hex}}
        started = time.perf_counter()
        result = graph.invoke({"messages": [("human", question.question)]}, config)
        outcome = Outcome(
            qid=question.qid, question=question.question, impossible=question.impossible, answers=question.answers,
            answer=result.get("answer", ""), status=result.get("status", "error"),
            attempts=int(result.get("attempts") or 0), latency_s=round(time.perf_counter() - started, 3),
            reasons=list(result.get("reasons") or []),
        )
        outcome.leaked = is_leak(outcome.answer)
        if outcome.status == "success":
            # Independent strict check: every sentence grounded in the article, no paraphrase waiver.
            strict = verify_grounding(outcome.answer, paragraphs[question.article], question=question.question,
                                      min_overlap=cfg.grounding_word_overlap)
            outcome.grounded = strict.passes(1.0)
            outcome.correct = not question.impossible and contains_gold(outcome.answer, question.answers)
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return {**metrics(outcomes), "by_category": by_category(outcomes), "outcomes": [asdict(o) for o in outcomes]}

