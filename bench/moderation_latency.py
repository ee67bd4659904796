"""Benchmark: what the offline safety classifier adds to a turn, against one embedding call.

In a turn the guardrails embed the question once (the vector then sits in the similarity cache the
answer checks share) and the classifier's head is one small matrix product. This times, in the same
run and on the same questions (benign QA questions from ../shared/data): one embedding call of the
question, the classifier head alone on a ready vector, and the whole moderator check (keyword layer,
embedding, head) on questions new to the cache. Questions in German, French and Spanish (Keel's probe
prompts, then German home-assistant commands) are judged by the multilingual head, which embeds them
again with multilingual-e5-small: their check is timed apart. Prints milliseconds and the ratios to the
English embedding call. Run: ``.venv/bin/python -m bench.moderation_latency [--questions 200]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def _ms(times: list[float]) -> dict:
    ordered = sorted(times)
    return {"mean": round(statistics.fmean(times) * 1000, 3), "p50": round(ordered[len(ordered) // 2] * 1000, 3),
            "p95": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=200)
    args = parser.parse_args()
    import numpy as np

    from bench.corpus import shared_data
    from keel.components import Components
    from keel.core.configuration import Configuration
    from keel.evals import safety_sets
    from keel.models.embeddings import get_embeddings
    from keel.models.safety_classifier import load_safety_classifier

    from keel.evals.moderation import OTHER_LANGUAGE_PROBES
    from keel.evals.safety_other_authors import SOURCE_PREFIX, load_other_authors

    questions = [p.text for p in safety_sets.load_qa_questions(shared_data())][: args.questions]
    other_languages = ([p.text for p in safety_sets.load_probes() if p.source in OTHER_LANGUAGE_PROBES]
                       + [p.text for p in load_other_authors() if p.source == SOURCE_PREFIX + "assistant_commands_de"])
    other_languages = other_languages[: args.questions]
    cfg = Configuration()
    embeddings = get_embeddings(cfg)
    classifier = load_safety_classifier()
    moderator = Components(embeddings=embeddings).moderation(cfg)
    embeddings.embed_documents(["warm up"])
    moderator.check("Warm up: long enough that the language detector loads too.")
    embed, head, check = [], [], []
    for question in questions:
        started = time.perf_counter()
        vector = np.asarray(embeddings.embed_documents([question + " "])[0], dtype=np.float32)  # not the cached text
        embed.append(time.perf_counter() - started)
        started = time.perf_counter()
        classifier.probabilities(vector[None, :], [question])
        head.append(time.perf_counter() - started)
        started = time.perf_counter()
        moderator.check(question)
        check.append(time.perf_counter() - started)
    other_check = []
    for question in other_languages:
        started = time.perf_counter()
        moderator.check(question)
        other_check.append(time.perf_counter() - started)
    result = {"questions": len(questions), "embedding_call_ms": _ms(embed), "classifier_head_ms": _ms(head),
              "moderator_check_ms": _ms(check),
              "other_language_questions": len(other_languages), "other_language_check_ms": _ms(other_check),
              "other_language_check_over_embedding": round(statistics.fmean(other_check) / statistics.fmean(embed), 3),
              "check_over_embedding": round(statistics.fmean(check) / statistics.fmean(embed), 3),
              "head_over_embedding": round(statistics.fmean(head) / statistics.fmean(embed), 4)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
