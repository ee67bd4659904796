"""Deterministic stand-ins for unit tests of the graph's logic (never the only test of a feature)."""

from __future__ import annotations

import re

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever


class WordTokenizer:
    """Counts words and punctuation as tokens; offsets like a fast tokenizer."""

    pattern = re.compile(r"\w+|[^\w\s]")

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [hash(m.group()) % 50_000 for m in self.pattern.finditer(text)]

    def __call__(self, text: str, add_special_tokens: bool = False, return_offsets_mapping: bool = False):
        matches = list(self.pattern.finditer(text))
        out = {"input_ids": [hash(m.group()) % 50_000 for m in matches]}
        if return_offsets_mapping:
            out["offset_mapping"] = [(m.start(), m.end()) for m in matches]
        return out


class StaticRetriever(BaseRetriever):
    """Returns the given documents whatever the query (optionally only those of given doc ids)."""

    documents: list[Document]
    doc_ids: list[str] | None = None

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        if self.doc_ids:
            return [d for d in self.documents if d.metadata.get("doc_id") in self.doc_ids]
        return list(self.documents)


class BagOfWordsEmbeddings(Embeddings):
    """Hashes words into a small vector: similar wording → similar vectors. Deterministic."""

    dim = 64

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dim
        for word in re.findall(r"\w+", text.lower()):
            vector[sum(map(ord, word)) % self.dim] += 1.0
        norm = sum(v * v for v in vector) ** 0.5 or 1.0
        return [v / norm for v in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def bag_of_words_similarities():
    """``similarities(text, others)``, the callable the answer checks take, over BagOfWordsEmbeddings."""
    from keel.checks.grounding import cosine

    embeddings = BagOfWordsEmbeddings()

    def similarities(text: str, others: list[str]) -> list[float]:
        vector = embeddings.embed_query(text)
        return [cosine(vector, other) for other in embeddings.embed_documents(others)]

    return similarities


def passage_doc(text: str, source: str = "handbook.pdf", page: int = 1, doc_id: str = "doc-1", similarity: float = 0.8):
    return Document(
        page_content=text,
        metadata={"source": source, "page": page, "doc_id": doc_id, "score": similarity, "max_similarity": similarity},
    )
