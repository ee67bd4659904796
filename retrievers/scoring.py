"""A similarity for the documents of a retriever that gives none.

Keel decides with a cosine similarity per passage: which documents are relevant enough to route
to, the retrieval confidence that gates generation (keel/checks/confidence.py), the score shown
in the sources. Keel's own retriever carries it in metadata (``max_similarity``: the best child's
similarity to the query; ``score``: its parent's ranking score). A user's BaseRetriever usually
returns plain Documents, and without a similarity every one of them would count as unrelated.

So such a document is scored as Keel's store scores a chunk: the cosine similarity between the
query's vector (``embed_query``) and the document text's vector (``embed_documents``), with the
configured embeddings, on the store's scale (1 - cosine distance). The texts of every search in
one pass are embedded together, in one batch; the caller supplies the query vectors (from its
memo, so a question already embedded this turn is not embedded again) and the text vectors (a
cache shared with the answer checks). A similarity the retriever gives is kept as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from langchain_core.documents import Document

# the metadata keys Keel reads a passage's similarity from (retrievers/passages.py), best first
SIMILARITY_KEYS = ("max_similarity", "similarity", "score")

Vectors = Callable[[list[str]], Sequence[Sequence[float]]]


def has_similarity(document: Document) -> bool:
    """Whether the retriever already scored the document against the query."""
    return any(document.metadata.get(key) is not None for key in SIMILARITY_KEYS)


def with_similarities(
    results: Sequence[Sequence[Document]], queries: Sequence[str], query_vectors: Vectors, text_vectors: Vectors
) -> list[list[Document]]:
    """``results[i]`` (what the search for ``queries[i]`` found) with a ``score`` on every document
    that had no similarity: its cosine similarity to ``queries[i]``. Scored documents are copies
    (a retriever may hand out the same Document objects for the next question)."""
    missing = [(i, j) for i, found in enumerate(results) for j, document in enumerate(found) if not has_similarity(document)]
    scored = [list(found) for found in results]
    if not missing:
        return scored
    asked = list(dict.fromkeys(queries[i] for i, _ in missing))
    texts = list(dict.fromkeys(results[i][j].page_content for i, j in missing))
    by_query = dict(zip(asked, _unit(query_vectors(asked)), strict=False))
    by_text = dict(zip(texts, _unit(text_vectors(texts)), strict=False))
    for i, j in missing:
        document = results[i][j]
        similarity = float(np.dot(by_query[queries[i]], by_text[document.page_content]))
        scored[i][j] = Document(id=document.id, page_content=document.page_content,
                                metadata={**document.metadata, "score": similarity})
    return scored


def _unit(vectors: Sequence[Sequence[float]]) -> list[np.ndarray]:
    arrays = [np.asarray(vector, dtype=np.float32) for vector in vectors]
    return [array / (float(np.linalg.norm(array)) or 1.0) for array in arrays]
