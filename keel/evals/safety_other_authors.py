"""Prompt sets from other authors, each held out whole: never trained on, never used to choose a
threshold, scored one source at a time by ``keel eval moderation``. A few are *choose* sets: a change
to the training data or the head is kept only if they hold or improve; the *report* sets are never
used for a decision, and their numbers are the ones to quote.

The classifier's training data is a few public sets of one style plus Keel's own hand-written
prompts; held-out quarters of those say little about requests written by other hands. These sets
(keel/evals/safety/other_authors/, its README gives origin and licence) say how the verdicts carry
over: harmful requests from four more research groups (a fifth's, CatQA's authors, trains) and from MLCommons in English and French,
MultiJail's in ten languages, and harmless requests a chatbot gets (JailbreakBench's benign
behaviours, topic-matched to its harmful ones; Self-Instruct's human-written instructions; home
assistant commands in English and German).

A text that is also in the training data is dropped from its set here, so no score counts it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from keel.core.safety_taxonomy import SAFE
from keel.evals.safety_sets import Prompt, advbench_category

OTHER_AUTHORS_DIR = Path(__file__).parent / "safety" / "other_authors"
SOURCE_PREFIX = "other:"  # the sources' names in reports: "other:jbb_benign", "other:multijail"
# AILuminate's hazard categories whose prompts ask for the harm itself; its specialised-advice
# prompts (health, finance, elections, law) and the defamation, privacy, intellectual-property and
# sexual-content ones are left out: many ask for something a careful answer may give.
AILUMINATE_CLEAR_HAZARDS = frozenset({"vcr", "src", "cse", "ssh", "iwp", "ncr", "hte"})


CHOOSE, REPORT = "choose", "report"


@dataclass(frozen=True)
class OtherAuthorsSet:
    """A public safety set by other authors: its file, whether its prompts are harmful, what it holds."""
    name: str
    file: str
    harmful: bool
    what: str
    role: str = REPORT  # CHOOSE: a change to the training data or the head is kept only if these hold or improve


SETS: tuple[OtherAuthorsSet, ...] = (
    OtherAuthorsSet("jbb_harmful", "jbb_harmful.jsonl", True, "JailbreakBench harmful behaviours"),
    OtherAuthorsSet("simplesafetytests", "simplesafetytests.jsonl", True, "SimpleSafetyTests, clear-cut harms", CHOOSE),
    OtherAuthorsSet("coconot_unsafe", "coconot_unsafe.jsonl", True, "CoCoNot requests with safety concerns", CHOOSE),
    OtherAuthorsSet("harmfulqa", "harmfulqa.jsonl", True, "HarmfulQA questions (many mild)"),
    OtherAuthorsSet("donotanswer_other", "donotanswer_other.jsonl", True,
                    "Do-Not-Answer: private information, discrimination"),
    OtherAuthorsSet("ailuminate", "ailuminate_demo.jsonl", True, "AILuminate demo, clear hazards (en, fr)"),
    OtherAuthorsSet("multijail", "multijail.jsonl", True, "MultiJail, ten languages"),
    OtherAuthorsSet("jbb_benign", "jbb_benign.jsonl", False, "JailbreakBench benign behaviours (alarming topics)"),
    OtherAuthorsSet("self_instruct", "self_instruct_seed.jsonl", False, "Self-Instruct seed instructions", CHOOSE),
    OtherAuthorsSet("self_instruct_user", "self_instruct_user_oriented_EVALONLY.jsonl", False,
                    "Self-Instruct user-oriented instructions"),
    OtherAuthorsSet("assistant_commands_en", "nlu_eval_en.jsonl", False, "home-assistant commands, English",
                    CHOOSE),
    OtherAuthorsSet("assistant_commands_de", "nlu_eval_de_tsystems.jsonl", False,
                    "home-assistant commands, German"),
)

ROLE_OF = {SOURCE_PREFIX + chosen.name: chosen.role for chosen in SETS}


def _kept(row: dict, chosen: OtherAuthorsSet) -> bool:
    if bool(row.get("harmful")) != chosen.harmful:
        return False
    if chosen.name == "ailuminate":
        return str(row.get("category") or "").split("/")[0] in AILUMINATE_CLEAR_HAZARDS
    return True


def load_other_authors(trained_texts: Iterable[str] = (), directory: Path = OTHER_AUTHORS_DIR) -> list[Prompt]:
    """Every set's prompts, labelled ``safe`` or the keyword rule's hazard code (S2 when none
    matches: these sets' own categories are not the taxonomy's), less any text in ``trained_texts``."""
    known = set(trained_texts)
    prompts: list[Prompt] = []
    for chosen in SETS:
        for line in (directory / chosen.file).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            text = str(row["text"]).strip()
            if not text or text in known or not _kept(row, chosen):
                continue
            known.add(text)
            label = (advbench_category(text) or "S2") if chosen.harmful else SAFE
            prompts.append(Prompt(text, label, SOURCE_PREFIX + chosen.name, str(row.get("language") or "en")))
    return prompts


def by_source(prompts: Iterable[Prompt], refused: Iterable[bool]) -> dict[str, dict]:
    """Refusal rate per set and language: recall where the set is harmful, false positives where not."""
    counts: dict[tuple[str, str], list[bool]] = {}
    kinds: dict[str, bool] = {}
    for prompt, was_refused in zip(prompts, refused, strict=False):
        counts.setdefault((prompt.source, prompt.language), []).append(bool(was_refused))
        kinds[prompt.source] = prompt.harmful
    table: dict[str, dict] = {}
    for (source, language), hits in sorted(counts.items()):
        entry = table.setdefault(source, {"harmful": kinds[source], "role": ROLE_OF.get(source, REPORT),
                                          "languages": {}})
        entry["languages"][language] = {"refused": round(sum(hits) / len(hits), 4), "prompts": len(hits)}
    for entry in table.values():
        total = sum(v["prompts"] for v in entry["languages"].values())
        entry["refused"] = round(sum(v["refused"] * v["prompts"] for v in entry["languages"].values()) / total, 4)
        entry["prompts"] = total
    return table
