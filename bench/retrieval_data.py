"""Data for bench/retrieval.py: a synthetic chunk library written straight into Keel's key layout
(in pipelines), and the real corpus (SQuAD 2.0 paragraphs, HaluEval knowledge) for recall."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from langchain_core.documents import Document
from tqdm import tqdm

SHARED_QA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "qa"
CHILDREN_PER_PARENT = 8
PAGES_PER_DOC = 10
PARENT_CHARS = 6_000  # about 1,500 tokens: a realistic parent to fetch and decode
PIPELINE_BATCH = 2_000


@dataclass
class SyntheticLibrary:
    users: list[str]  # users[0] owns half the children, the others share the rest evenly
    typical_user: str
    big_user: str
    children: int
    parents: int
    query_vectors: np.ndarray


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def write_synthetic(store, n_children: int, dim: int, n_small_users: int = 10, seed: int = 0, progress: bool = True) -> SyntheticLibrary:
    """``n_children`` clustered unit vectors (the children of a parent lie close together), with
    parents of PARENT_CHARS characters, written in pipelines of PIPELINE_BATCH commands."""
    rng = np.random.default_rng(seed)
    users = [f"bench-big-{seed}"] + [f"bench-user-{seed}-{i}" for i in range(n_small_users)]
    n_parents = n_children // CHILDREN_PER_PARENT
    centers = _unit(rng.standard_normal((n_parents, dim)))
    filler = ("Synthetic parent text for the retrieval benchmark. " * (PARENT_CHARS // 50 + 1))[:PARENT_CHARS]
    bar = tqdm(total=n_children, desc=f"writing {n_children:,} children", unit="child", file=sys.stderr, disable=not progress)
    pipe = store.client.pipeline(transaction=False)
    pending = 0
    for p in range(n_parents):
        # half the parents belong to the big user, the rest round-robin to the small users
        user = users[0] if p % 2 == 0 else users[1 + (p // 2) % n_small_users]
        doc_index = p // PAGES_PER_DOC
        doc_id = f"doc{doc_index:07d}"
        page = p % PAGES_PER_DOC + 1
        parent_id = f"{store._user_key(user)}:{doc_id}:{p}"
        meta = {"user_id": user, "conversation_id": None, "source": f"file-{doc_index}.pdf", "doc_id": doc_id,
                "page": page, "total_pages": PAGES_PER_DOC, "chunk_index": p, "multimodal_type": "text"}
        pipe.set(store.parent_prefix + parent_id, json.dumps({"id": parent_id, "page_content": filler, "metadata": meta}))
        # children of a parent: cosine about 0.8 to its centre (one topic, different sentences)
        vectors = _unit(centers[p] + 0.75 * rng.standard_normal((CHILDREN_PER_PARENT, dim)).astype(np.float32) / np.sqrt(dim))
        for c in range(CHILDREN_PER_PARENT):
            child = Document(id=f"{parent_id}:{c}", page_content=f"child {c} of parent {p}",
                             metadata={**meta, "parent_id": parent_id, "chunk_index": p * CHILDREN_PER_PARENT + c})
            pipe.hset(store.child_prefix + child.id, mapping=store._child_mapping(child, vectors[c]))
        pending += CHILDREN_PER_PARENT + 1
        if pending >= PIPELINE_BATCH:
            pipe.execute()
            pending = 0
        bar.update(CHILDREN_PER_PARENT)
    pipe.execute()
    bar.close()
    # a question about one parent's topic: cosine about 0.7 to its centre
    queries = _unit(centers[rng.integers(0, n_parents, 400)] + rng.standard_normal((400, dim)).astype(np.float32) / np.sqrt(dim))
    return SyntheticLibrary(users, users[1], users[0], n_parents * CHILDREN_PER_PARENT, n_parents, queries)


def wait_indexed(client, index_name: str, timeout_s: float = 600) -> None:
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        info = client.ft(index_name).info()
        if str(info.get("indexing", "0")) in ("0", "0.0") and float(info.get("percent_indexed", 1)) >= 1:
            return
        time.sleep(0.2)
    raise TimeoutError(f"{index_name} still indexing after {timeout_s}s")


def delete_prefix(client, prefix: str) -> None:
    batch = []
    for key in client.scan_iter(match=f"{prefix}*", count=5_000):
        batch.append(key)
        if len(batch) >= 5_000:
            client.unlink(*batch)
            batch = []
    if batch:
        client.unlink(*batch)


@dataclass
class RealCorpus:
    texts: list[tuple[str, str]]  # (source, text)
    questions: list[str]
    answers: list[list[str]]  # gold answers of SQuAD answerable questions (same order, first part)


def real_corpus(max_questions: int = 300) -> RealCorpus | None:
    """SQuAD 2.0 paragraphs (one text each) and HaluEval knowledge snippets, with questions:
    SQuAD's answerable ones (with their gold answers) first, then HaluEval's."""
    squad_path, halu_path = SHARED_QA / "squad2-dev-normans-complexity.json", SHARED_QA / "halueval-qa-500.json"
    if not squad_path.is_file():
        return None
    texts, questions, answers = [], [], []
    for article in json.loads(squad_path.read_text())["data"]:
        for n, paragraph in enumerate(article["paragraphs"], 1):
            texts.append((f"{article['title']} {n}", paragraph["context"]))
            for qa in paragraph["qas"]:
                if not qa.get("is_impossible") and qa["answers"]:
                    questions.append(qa["question"])
                    answers.append(sorted({a["text"] for a in qa["answers"]}))
    if halu_path.is_file():
        for n, line in enumerate(halu_path.read_text().splitlines()):
            if line.strip():
                row = json.loads(line)
                texts.append((f"halueval {n}", row["knowledge"]))
                questions.append(row["question"])
    step = max(1, len(questions) // max_questions)
    picked = list(range(0, len(questions), step))[:max_questions]
    return RealCorpus(texts, [questions[i] for i in picked], [answers[i] if i < len(answers) else [] for i in picked])


class FixedEmbeddings:
    """Embeddings that give every text one synthetic vector (the question's topic): route_query
    runs its real code on the synthetic library without the model, timing the Redis side alone."""

    def __init__(self, vector: np.ndarray):
        self.vector = [float(v) for v in vector]

    def embed_query(self, text: str) -> list[float]:
        return list(self.vector)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]
