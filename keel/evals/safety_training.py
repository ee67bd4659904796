"""Train the offline safety classifier's head from the public sets and Keel's hand-written prompts.

    python -m keel.evals.safety_training --data ../shared/data [--out DIR] [--vectors-cache FILE]

Reads the training split of keel/evals/safety_sets.py (the held-out split is never read here), embeds
every text with the configured embedding model (all-MiniLM-L6-v2 by default), adds its words hashed
into buckets, fits a multinomial logistic regression over ``safe`` and the hazard codes (classes
weighted by their size, so the many non-violent-crime goals do not drown the rare categories;
borderline-safe prompts weighted up), and picks the refusal threshold on
cross-validated predictions of the training split: the lowest threshold whose false-positive rate on
the borderline-safe prompts (the safe requests most like harmful ones; QA questions are far easier)
stays at or below ``--target-false-positives``.
Writes head.npz and head.json (embedding model, threshold, the sets' SHA-256, counts) to the folder
Keel loads by default. A few minutes on two CPU cores, most of it embedding.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np

from keel.core.configuration import Configuration
from keel.core.safety_taxonomy import HAZARD_CATEGORIES, HAZARD_CODES, SAFE
from keel.evals import safety_sets
from keel.models.safety_classifier import ARTEFACT_DIR, SafetyClassifier, word_features

REGULARISATION_C = 4.0  # inverse L2 strength of the logistic regression (sklearn's C)
CV_FOLDS = 5
THRESHOLD_STEP = 0.0025  # the threshold candidates tried in calibration
WORD_BUCKETS = 4096  # hashed words and word pairs read beside the sentence vector
WORD_WEIGHT = 1.0  # their scale against the unit sentence vector
BORDERLINE_WEIGHT = 2.0  # a borderline-safe prompt's sample weight
TARGET_FALSE_POSITIVES = 0.05  # on cross-validated borderline-safe prompts, the hardest safe ones
CALIBRATION_SOURCES = (safety_sets.BORDERLINE,)


def embed_texts(texts: list[str], cfg: Configuration, cache: Path | None = None, progress: bool = True) -> np.ndarray:
    """Unit vectors for ``texts``; with ``cache``, texts embedded before are read back from it."""
    from keel.models.embeddings import get_embeddings

    known: dict[str, np.ndarray] = {}
    if cache and cache.is_file():
        with np.load(cache) as data:
            known = dict(zip((str(t) for t in data["texts"]), data["vectors"]))
    missing = [t for t in dict.fromkeys(texts) if t not in known]
    if missing:
        embeddings = get_embeddings(cfg)
        batches = range(0, len(missing), 64)
        if progress:
            from tqdm import tqdm

            batches = tqdm(batches, desc="embedding", unit="batch", file=sys.stderr)
        for start in batches:
            chunk = missing[start:start + 64]
            for text, vector in zip(chunk, embeddings.embed_documents(chunk)):
                array = np.asarray(vector, dtype=np.float32)
                known[text] = array / (float(np.linalg.norm(array)) or 1.0)
        if cache:
            cache.parent.mkdir(parents=True, exist_ok=True)
            np.savez_compressed(cache, texts=np.array(list(known)), vectors=np.stack(list(known.values())))
    return np.stack([known[t] for t in texts])


def nearest_category_by_description(cfg: Configuration, cache: Path | None):
    """Labels AdvBench goals no keyword rule matched: the hazard category whose plain description
    embeds nearest."""
    def label(goals: list[str]) -> list[str]:
        descriptions = [f"{c.guard_name}: {c.description}" for c in HAZARD_CATEGORIES]
        goal_vectors = embed_texts(goals, cfg, cache, progress=False)
        category_vectors = embed_texts(descriptions, cfg, cache, progress=False)
        return [HAZARD_CODES[i] for i in (goal_vectors @ category_vectors.T).argmax(axis=1)]

    return label


def features(vectors: np.ndarray, texts: list[str]) -> np.ndarray:
    """What the head reads: the sentence vector, then the hashed words (as the shipped head does)."""
    return np.hstack([vectors, WORD_WEIGHT * word_features(texts, WORD_BUCKETS)])


def fit_head(rows: np.ndarray, labels: list[str], weights: np.ndarray, c: float = REGULARISATION_C) -> SafetyClassifier:
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=c, class_weight="balanced", max_iter=3000)
    model.fit(rows, labels, sample_weight=weights)
    return SafetyClassifier(tuple(str(x) for x in model.classes_), model.coef_.astype(np.float32),
                            model.intercept_.astype(np.float32))


def refuse_probability(classifier: SafetyClassifier, vectors: np.ndarray) -> np.ndarray:
    """The probability of any hazard category (every category refusing, as by default)."""
    return 1.0 - classifier.probabilities(vectors)[:, classifier.labels.index(SAFE)]


def calibrate_threshold(vectors: np.ndarray, prompts: list[safety_sets.Prompt], c: float,
                        target_false_positives: float) -> tuple[float, dict]:
    """Cross-validated refusal threshold: folds by text hash, so a fold never sees its own texts."""
    scores = np.zeros(len(prompts))
    weights = sample_weights(prompts)
    folds = np.array([hashlib.sha256(p.text.encode()).digest()[1] % CV_FOLDS for p in prompts])
    labels = [p.label for p in prompts]
    for fold in range(CV_FOLDS):
        train, test = folds != fold, folds == fold
        head = fit_head(vectors[train], [l for l, keep in zip(labels, train) if keep], weights[train], c)
        scores[test] = refuse_probability(head, vectors[test])
    safe_requests = np.array([p.source in CALIBRATION_SOURCES for p in prompts])
    harmful = np.array([p.source in (safety_sets.ADVBENCH, safety_sets.HANDWRITTEN_HARMFUL) for p in prompts])
    handwritten = np.array([p.source == safety_sets.HANDWRITTEN_HARMFUL for p in prompts])
    threshold = 0.99
    for candidate in np.round(np.arange(0.05, 1.0, THRESHOLD_STEP), 3):
        if (scores[safe_requests] >= candidate).mean() <= target_false_positives:
            threshold = float(candidate)
            break
    return threshold, {
        "cv_recall_harmful_requests": round(float((scores[harmful] >= threshold).mean()), 4),
        "cv_recall_handwritten_harmful_questions": round(float((scores[handwritten] >= threshold).mean()), 4),
        "cv_false_positive_rate_borderline": round(float((scores[safe_requests] >= threshold).mean()), 4),
    }


def sample_weights(prompts: list[safety_sets.Prompt]) -> np.ndarray:
    """Borderline-safe prompts count more: they are few, and the errors that matter most."""
    return np.array([BORDERLINE_WEIGHT if p.source == safety_sets.BORDERLINE else 1.0 for p in prompts])


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def train(data_dir: Path, out: Path = ARTEFACT_DIR, cache: Path | None = None, c: float = REGULARISATION_C,
          target_false_positives: float = TARGET_FALSE_POSITIVES) -> dict:
    cfg = Configuration()
    prompts = safety_sets.training_set(
        safety_sets.load_all(data_dir, nearest_category_by_description(cfg, cache)))
    vectors = embed_texts([p.text for p in prompts], cfg, cache)
    rows = features(vectors, [p.text for p in prompts])
    threshold, cv = calibrate_threshold(rows, prompts, c, target_false_positives)
    head = fit_head(rows, [p.label for p in prompts], sample_weights(prompts), c)
    from keel.models.embeddings import embedding_model_path

    sources = {name: file_sha256(data_dir / name) for name in (
        safety_sets.ADVBENCH_FILE, safety_sets.OPENAI_FILE, safety_sets.SQUAD_FILE, safety_sets.HALUEVAL_FILE)}
    sources.update({f"keel/evals/safety/{p.name}": file_sha256(p)
                    for p in (safety_sets.BORDERLINE_FILE, safety_sets.HARMFUL_FILE)})
    counts: dict[str, int] = {}
    for p in prompts:
        counts[p.label] = counts.get(p.label, 0) + 1
    metadata = {
        "embedding_model": Path(cfg.embedding_model_path or embedding_model_path(cfg)).parent.name
        if Path(embedding_model_path(cfg)).name == "model" else Path(embedding_model_path(cfg)).name,
        "embedding_dimensions": int(vectors.shape[1]),
        "word_buckets": WORD_BUCKETS,
        "word_weight": WORD_WEIGHT,
        "borderline_weight": BORDERLINE_WEIGHT,
        "threshold": threshold,
        "regularisation_c": c,
        "held_out_rule": f"sha256(text)[0] < {int(safety_sets.HELD_OUT_SHARE * 256)} (not trained on)",
        "training_examples": len(prompts),
        "training_counts": dict(sorted(counts.items())),
        "training_sets_sha256": sources,
        **cv,
    }
    trained = SafetyClassifier(head.labels, head.weights, head.bias, metadata)
    for path in trained.save(out):
        print(f"wrote {path}", file=sys.stderr)
    return metadata


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="the public data folder")
    parser.add_argument("--out", type=Path, default=ARTEFACT_DIR)
    parser.add_argument("--vectors-cache", type=Path, default=None, help="keep embedded texts here between runs")
    parser.add_argument("--c", type=float, default=REGULARISATION_C)
    parser.add_argument("--target-false-positives", type=float, default=TARGET_FALSE_POSITIVES)
    args = parser.parse_args(argv)
    metadata = train(args.data, args.out, args.vectors_cache, args.c, args.target_false_positives)
    print({k: metadata[k] for k in ("threshold", "training_examples", "cv_recall_harmful_requests",
                                     "cv_recall_handwritten_harmful_questions", "cv_false_positive_rate_borderline")})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
