"""Train the offline safety classifier's head from the public sets and Keel's hand-written prompts.

    python -m keel.evals.safety_training --data ../shared/data [--out DIR] [--vectors-cache FILE]
    python -m keel.evals.safety_training --data ../shared/data --multilingual [--vectors-cache FILE]

Reads the training split of keel/evals/safety_sets.py (the held-out split and the probe prompts are
never trained on), embeds every text with the configured embedding model (all-MiniLM-L6-v2 by
default), adds its words, word pairs and letter n-grams hashed into buckets, fits a multinomial
logistic regression over ``safe`` and the hazard codes (classes weighted by their size, so the many
non-violent-crime goals do not drown the rare categories; borderline-safe prompts weighted up), and
picks two refusal thresholds on cross-validated predictions of the training split: for English, and
for questions the language detector places in another language. Each is the lowest threshold whose
false-positive rate on the hand-written borderline-safe prompts of its side (the safe requests most
like harmful ones; QA questions are far easier) stays at or below ``--target-false-positives``.
Writes head.npz and head.json (embedding model, thresholds, the sets' SHA-256, counts) to the folder
Keel loads by default. A few minutes on two CPU cores, most of it embedding.

``--multilingual`` trains the head that judges questions detected in another language: the same prompts,
words and rule over multilingual-e5-small's vectors, its probabilities averaged with a vote of the nearest
training prompts, and one threshold, calibrated on the other-language borderline-safe prompts. About
five minutes more to embed (the vectors cache keeps them).
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
from keel.models.safety_classifier import (
    ARTEFACT_DIR,
    MULTILINGUAL_ARTEFACT_DIR,
    SafetyClassifier,
    neighbour_vote,
    word_features,
)

REGULARISATION_C = 16.0  # inverse L2 strength of the logistic regression (sklearn's C)
CV_FOLDS = 5
TRAINED_LANGUAGE = "en"  # the embedding model's language; other detected languages get their own threshold
THRESHOLD_STEP = 0.0025  # the threshold candidates tried in calibration
WORD_BUCKETS = 8192  # hashed words, word pairs and letter n-grams read beside the sentence vector
WORD_WEIGHT = 2.0  # their scale against the unit sentence vector
SUBWORD_SIZES: tuple[int, ...] = (3, 4, 5)  # letter n-gram lengths hashed beside the words
BORDERLINE_WEIGHT = 2.0  # a borderline-safe prompt's sample weight
OTHER_LANGUAGE_WEIGHT = 3.0  # a German, French or Spanish prompt's sample weight (times the above when safe)
OTHER_LANGUAGE_CURVE = (0.3, 0.4, 0.5, 0.6, 0.7)  # other-language thresholds whose CV rates head.json records
TARGET_FALSE_POSITIVES = 0.05  # on cross-validated borderline-safe prompts, the hardest safe ones
NEIGHBOUR_COUNT = 15  # the multilingual head: how many nearest training prompts vote
NEIGHBOUR_WEIGHT = 0.5  # their vote's share of the probabilities (the head's is the rest)
HAND_WRITTEN_SOURCES = (safety_sets.BORDERLINE, safety_sets.TRAINING_BORDERLINE, safety_sets.TRAINING_OTHER_LANGUAGES)


def is_borderline(prompt: safety_sets.Prompt) -> bool:
    """A hand-written safe request (the same verbs as harmful ones in harmless senses, in any language):
    weighted up in training and what the threshold's false-positive target is measured on."""
    return prompt.label == SAFE and prompt.source in HAND_WRITTEN_SOURCES


def embed_texts(texts: list[str], cfg: Configuration, cache: Path | None = None, progress: bool = True,
                encode=None) -> np.ndarray:
    """Unit vectors for ``texts`` (from ``encode(batch)``, else the configured embedding model); with
    ``cache``, texts embedded before are read back from it."""
    from keel.models.embeddings import get_embeddings

    known: dict[str, np.ndarray] = {}
    if cache and cache.is_file():
        with np.load(cache) as data:
            known = dict(zip((str(t) for t in data["texts"]), data["vectors"], strict=False))
    missing = [t for t in dict.fromkeys(texts) if t not in known]
    if missing:
        encode = encode or get_embeddings(cfg).embed_documents
        batches = range(0, len(missing), 64)
        if progress:
            from tqdm import tqdm

            batches = tqdm(batches, desc="embedding", unit="batch", file=sys.stderr)
        for start in batches:
            chunk = missing[start:start + 64]
            for text, vector in zip(chunk, encode(chunk), strict=False):
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
    return np.hstack([vectors, WORD_WEIGHT * word_features(texts, WORD_BUCKETS, SUBWORD_SIZES)])


def fit_head(rows: np.ndarray, labels: list[str], weights: np.ndarray, c: float = REGULARISATION_C) -> SafetyClassifier:
    """A balanced logistic regression over the rows, as a safety classifier head."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=c, class_weight="balanced", max_iter=3000)
    model.fit(rows, labels, sample_weight=weights)
    return SafetyClassifier(tuple(str(x) for x in model.classes_), model.coef_.astype(np.float32),
                            model.intercept_.astype(np.float32))


def refuse_probability(classifier: SafetyClassifier, vectors: np.ndarray) -> np.ndarray:
    """The probability of any hazard category (every category refusing, as by default)."""
    return 1.0 - classifier.probabilities(vectors)[:, classifier.labels.index(SAFE)]


def lowest_threshold(safe_scores: np.ndarray, target_false_positives: float) -> float:
    """The lowest candidate threshold refusing at most ``target_false_positives`` of ``safe_scores``."""
    for candidate in np.round(np.arange(0.05, 1.0, THRESHOLD_STEP), 3):
        if not len(safe_scores) or (safe_scores >= candidate).mean() <= target_false_positives:
            return float(candidate)
    return 0.99


def other_language(texts: list[str]) -> np.ndarray:
    """Which texts the moderator judges with its other-language threshold: those the language detector
    confidently places in another language than English (the embedding model's), as at run time."""
    from keel.checks.language import detect_language

    confidence = Configuration().language_min_confidence
    return np.array([detect_language(text, TRAINED_LANGUAGE, confidence) != TRAINED_LANGUAGE for text in texts])


def calibrate_threshold(vectors: np.ndarray, prompts: list[safety_sets.Prompt], c: float,
                        target_false_positives: float, neighbours: int = 0) -> tuple[float, float, dict]:
    """Cross-validated refusal thresholds, one for English and one for questions detected in another
    language (the sentence vector is English-only, so their scores spread differently), each the lowest keeping
    the hand-written borderline-safe prompts of its side at ``target_false_positives``. Folds by text
    hash, so a fold never sees its own texts. With ``neighbours``, the first that many columns of each row
    are its sentence vector and the scores average the head with the nearest training prompts' vote."""
    scores = np.zeros(len(prompts))
    weights = sample_weights(prompts)
    folds = np.array([hashlib.sha256(p.text.encode()).digest()[1] % CV_FOLDS for p in prompts])
    labels = [p.label for p in prompts]
    for fold in range(CV_FOLDS):
        train, test = folds != fold, folds == fold
        head = fit_head(vectors[train], [label for label, keep in zip(labels, train, strict=False) if keep], weights[train], c)
        scores[test] = refuse_probability(head, vectors[test])
        if neighbours:
            bank_labels = np.array([head.labels.index(label) for label in np.array(labels)[train]])
            votes = neighbour_vote(vectors[test, :neighbours], vectors[train, :neighbours], bank_labels,
                                   NEIGHBOUR_COUNT, len(head.labels))
            scores[test] = ((1 - NEIGHBOUR_WEIGHT) * scores[test]
                            + NEIGHBOUR_WEIGHT * (1.0 - votes[:, head.labels.index(SAFE)]))
    safe_requests = np.array([is_borderline(p) for p in prompts])
    routed = other_language([p.text for p in prompts])
    threshold = lowest_threshold(scores[safe_requests & ~routed], target_false_positives)
    other_threshold = lowest_threshold(scores[safe_requests & routed], target_false_positives)
    refused = scores >= np.where(routed, other_threshold, threshold)
    harmful = np.array([p.source in (safety_sets.ADVBENCH, safety_sets.HANDWRITTEN_HARMFUL, safety_sets.HARMBENCH,
                                     safety_sets.DONOTANSWER, safety_sets.CATQA) for p in prompts])
    handwritten = np.array([p.source in (safety_sets.HANDWRITTEN_HARMFUL, safety_sets.TRAINING_HARMFUL)
                            for p in prompts])
    other_languages = np.array([p.source == safety_sets.TRAINING_OTHER_LANGUAGES for p in prompts])
    other_harmful = other_languages & np.array([p.harmful for p in prompts])
    other_safe = other_languages & ~other_harmful
    english_borderline = safe_requests & ~other_languages

    def rate(mask: np.ndarray) -> float:
        return round(float(refused[mask].mean()), 4) if mask.any() else 0.0

    return threshold, other_threshold, {
        "cv_recall_harmful_requests": rate(harmful),
        "cv_recall_handwritten_harmful_questions": rate(handwritten),
        "cv_false_positive_rate_borderline": rate(english_borderline),
        "cv_recall_other_languages": rate(other_harmful),
        "cv_false_positive_rate_other_languages": rate(other_safe),
        "cv_other_languages_detected": round(float(routed[other_languages].mean()), 4),
        "cv_english_detected_as_other": round(float(routed[~other_languages & (harmful | handwritten | safe_requests)].mean()), 4),
        # What a deployment trades by lowering moderation_other_language_threshold: [recall, false positives].
        "cv_other_languages_by_threshold": {
            str(t): [round(float((scores[other_harmful] >= t).mean()), 4), round(float((scores[other_safe] >= t).mean()), 4)]
            for t in OTHER_LANGUAGE_CURVE},
    }


def sample_weights(prompts: list[safety_sets.Prompt]) -> np.ndarray:
    """Borderline-safe prompts count more: they are few, and the errors that matter most."""
    return np.array([(BORDERLINE_WEIGHT if is_borderline(p) else 1.0)
                     * (OTHER_LANGUAGE_WEIGHT if p.source == safety_sets.TRAINING_OTHER_LANGUAGES else 1.0)
                     for p in prompts])


def file_sha256(path: Path) -> str:
    """The file's SHA-256: the artefact names the exact training data."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def train(data_dir: Path, out: Path | None = None, cache: Path | None = None, c: float = REGULARISATION_C,
          target_false_positives: float = TARGET_FALSE_POSITIVES, multilingual: bool = False) -> dict:
    """Train the safety classifier on the public sets, choose its threshold, and write it to ``out``
    (by default the folder Keel loads: the English head's, or with ``multilingual`` the other languages')."""
    from keel.models.embeddings import embedding_model_path
    from keel.models.multilingual_embeddings import MODEL_NAME, MultilingualE5Embeddings

    cfg = Configuration()
    # Categories are named with the English model, so both heads learn the same labels (the cache is
    # one encoder's: the multilingual head's vectors never mix with the English ones).
    prompts = safety_sets.training_set(
        safety_sets.load_all(data_dir, nearest_category_by_description(cfg, None if multilingual else cache)))
    encode = MultilingualE5Embeddings().query_vectors if multilingual else None
    vectors = embed_texts([p.text for p in prompts], cfg, cache, encode=encode)
    rows = features(vectors, [p.text for p in prompts])
    neighbours = vectors.shape[1] if multilingual else 0
    threshold, other_language_threshold, cv = calibrate_threshold(rows, prompts, c, target_false_positives, neighbours)
    head = fit_head(rows, [p.label for p in prompts], sample_weights(prompts), c)

    sources = {name: file_sha256(data_dir / name) for name in (
        safety_sets.ADVBENCH_FILE, safety_sets.OPENAI_FILE, safety_sets.SQUAD_FILE, safety_sets.HALUEVAL_FILE)}
    sources.update({f"keel/evals/safety/{p.name}": file_sha256(p)
                    for p in (safety_sets.BORDERLINE_FILE, safety_sets.HARMFUL_FILE, safety_sets.TRAINING_HARMFUL_FILE,
                              safety_sets.TRAINING_BORDERLINE_FILE, safety_sets.TRAINING_OTHER_LANGUAGES_FILE)})
    sources.update({f"keel/evals/safety/public/{p.name}": file_sha256(p)
                    for p in (safety_sets.HARMBENCH_FILE, safety_sets.DONOTANSWER_FILE,
                              safety_sets.BENIGN_REQUESTS_FILE, safety_sets.CATQA_FILE)})
    counts: dict[str, int] = {}
    for p in prompts:
        counts[p.label] = counts.get(p.label, 0) + 1
    english_model = (Path(cfg.embedding_model_path or embedding_model_path(cfg)).parent.name
                     if Path(embedding_model_path(cfg)).name == "model" else Path(embedding_model_path(cfg)).name)
    metadata = {
        "embedding_model": MODEL_NAME if multilingual else english_model,
        "embedding_dimensions": int(vectors.shape[1]),
        "word_buckets": WORD_BUCKETS,
        "word_weight": WORD_WEIGHT,
        "subword_sizes": list(SUBWORD_SIZES),
        "borderline_weight": BORDERLINE_WEIGHT,
        "threshold": threshold,
        "other_language_threshold": other_language_threshold,
        "trained_language": TRAINED_LANGUAGE,
        "regularisation_c": c,
        "held_out_rule": f"sha256(text)[0] < {int(safety_sets.HELD_OUT_SHARE * 256)} (not trained on)",
        "training_examples": len(prompts),
        "training_counts": dict(sorted(counts.items())),
        "training_sets_sha256": sources,
        **cv,
    }
    bank = bank_labels = None
    if multilingual:
        # One threshold for every text it judges (all are in other languages); the vote of the nearest
        # training prompts is averaged with the head's probabilities, as in the calibration.
        metadata.update({"threshold": other_language_threshold, "english_threshold_cv": threshold,
                         "other_language_threshold": other_language_threshold, "trained_language": None,
                         "neighbour_count": NEIGHBOUR_COUNT, "neighbour_weight": NEIGHBOUR_WEIGHT})
        bank, bank_labels = vectors, np.array([head.labels.index(p.label) for p in prompts])
    trained = SafetyClassifier(head.labels, head.weights, head.bias, metadata, bank, bank_labels)
    out = out or (MULTILINGUAL_ARTEFACT_DIR if multilingual else ARTEFACT_DIR)
    for path in trained.save(out):
        print(f"wrote {path}", file=sys.stderr)
    return metadata


def main(argv: list[str] | None = None) -> int:
    """Retrain the shipped safety classifier and print what it reaches on the held-out share."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="the public data folder")
    parser.add_argument("--out", type=Path, default=None, help="default: the folder Keel loads")
    parser.add_argument("--multilingual", action="store_true",
                        help="train the head for other languages (multilingual-e5-small and a neighbour vote)")
    parser.add_argument("--vectors-cache", type=Path, default=None, help="keep embedded texts here between runs")
    parser.add_argument("--c", type=float, default=REGULARISATION_C)
    parser.add_argument("--target-false-positives", type=float, default=TARGET_FALSE_POSITIVES)
    args = parser.parse_args(argv)
    metadata = train(args.data, args.out, args.vectors_cache, args.c, args.target_false_positives, args.multilingual)
    print({k: v for k, v in metadata.items() if "threshold" in k or k == "training_examples" or k.startswith("cv_")})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
