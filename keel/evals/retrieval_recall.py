"""Recall@k of the passage that holds the answer, with and without the exact-term search.

    python -m keel.evals.retrieval_recall keel/evals/helpdesk/questions.json
    python -m keel.evals.retrieval_recall ../shared/data/qa/squad2-dev-normans-complexity.json --limit 300
    python -m keel.evals.retrieval_recall keel/evals/helpdesk/questions.json --language de [--encoder multilingual]

A question counts as found at k when one of the first k parents the retriever returns holds one of
its gold answers (SQuAD's normalisation). Documents go in as the answering evals put them: a QA set
through `keel ingest`'s own function, a SQuAD file an article per document. Both retrievers run on
the same ingested documents in the same run: vector search alone (boost 0) and the configured
``exact_term_boost`` (names and codes of the question also searched as text). ``--language`` asks a QA
set's questions as translated beside it (the documents stay as they are); ``--encoder multilingual``
indexes and searches with multilingual-e5-small instead of the configured embedding model.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path

from keel.core.configuration import Configuration
from keel.evals import qa
from keel.evals.scoring import contains_gold
from keel.evals.squad2 import ingest_articles, load_squad, sample_questions
from keel.loaders.pipeline import ingest
from keel.models.embeddings import get_embeddings
from keel.retrievers.factory import default_retriever
from keel.stores.connections import get_vector_store


def _questions_and_ingest(path: Path, cfg: Configuration, store, limit: int | None, seed: int, language: str = "en"):
    """(question, golds) pairs of the answerable questions, after ingesting their documents."""
    if path.suffix == ".json" and "documents" in json.loads(path.read_text(encoding="utf-8")):
        qa_set = qa.in_language(qa.load_qa_set(path), language)
        report = ingest(list(qa_set.documents), store, cfg, user_id=cfg.user_id, progress=False)
        if report.errors:
            raise ValueError(f"{path}: could not ingest {report.errors}")
        chosen = qa.sample_questions([q for q in qa_set.questions if q.answerable], limit, seed)
        return [(q.question, q.answers) for q in chosen]
    if language != "en":
        raise ValueError("--language needs a QA set with translations beside it, not a SQuAD file")
    articles, questions = load_squad(path)
    chosen = sample_questions([q for q in questions if not q.impossible], limit, seed)
    ingest_articles([a for a in articles if a.title in {q.article for q in chosen}], store, cfg, cfg.user_id)
    return [(q.question, q.answers) for q in chosen]


def measure(path: Path, ks: tuple[int, ...] = (1, 2, 4), limit: int | None = None, seed: int = 0,
            language: str = "en", encoder: str = "configured") -> dict:
    """Recall@k of a gold answer in the retrieved parents, for each k."""
    cfg = Configuration(user_id=f"recall-{uuid.uuid4().hex[:8]}")
    if encoder == "multilingual":
        from keel.models.multilingual_embeddings import MultilingualE5Embeddings

        embeddings = MultilingualE5Embeddings()
    else:
        embeddings = get_embeddings(cfg)
    store = get_vector_store(cfg, embeddings)
    try:
        questions = _questions_and_ingest(path, cfg, store, limit, seed, language)
        settings = {"vector_only": 0.0, f"exact_term_boost={cfg.exact_term_boost}": cfg.exact_term_boost}
        result: dict = {"file": str(path), "language": language, "encoder": encoder, "questions": len(questions)}
        for name, boost in settings.items():
            retriever = default_retriever(cfg, embeddings).model_copy(update={"exact_term_boost": boost})
            found = {k: 0 for k in ks}
            for question, golds in questions:
                parents = retriever.invoke(question)
                for k in ks:
                    found[k] += any(contains_gold(p.page_content, golds) for p in parents[:k])
            result[name] = {f"recall@{k}": round(found[k] / len(questions), 4) if questions else 0.0 for k in ks}
        return result
    finally:
        for doc in store.list_documents(cfg.user_id):
            store.delete_document(cfg.user_id, doc["doc_id"])


def main(argv: list[str] | None = None) -> int:
    """Print retrieval recall@k for a QA set or a SQuAD file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path, help="a QA set (keel eval qa format) or a SQuAD 2.0 file")
    parser.add_argument("--limit", type=int, default=None, help="sample this many answerable questions")
    parser.add_argument("--sample-seed", type=int, default=0)
    parser.add_argument("--language", default="en", help="ask the questions translated to this language (de, fr, es)")
    parser.add_argument("--encoder", choices=("configured", "multilingual"), default="configured",
                        help="multilingual: index and search with multilingual-e5-small")
    args = parser.parse_args(argv)
    if not args.file.is_file():
        print(f"error: no such file: {args.file}", file=sys.stderr)
        return 2
    try:
        print(json.dumps(measure(args.file, limit=args.limit, seed=args.sample_seed, language=args.language,
                                 encoder=args.encoder), indent=2))
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
