"""Small evaluation files the tests write: a question set for `keel eval qa`, a SQuAD 2.0 file and HaluEval rows,
used by the eval tests with fakes (unit_tests) and through the real graph (integration_tests)."""

from __future__ import annotations

import json
from pathlib import Path

LIGHTHOUSE = ("# Varden lighthouse\n\nThe Varden lighthouse was built in 1874 by the engineer Mara Holt. "
              "Its lamp can be seen from 22 nautical miles away.\n")
SCHOOL = "Island school\n\nThe island school has 48 pupils and two teachers. The ferry leaves every morning at 7 am.\n"


def write_qa_set(folder: Path, questions: list[dict] | None = None, documents: list[str] | None = None) -> Path:
    """A `keel eval qa` question file with two documents; the default questions are two answerable, two not."""
    (folder / "docs").mkdir(parents=True, exist_ok=True)
    (folder / "docs" / "lighthouse.md").write_text(LIGHTHOUSE)
    (folder / "docs" / "school.txt").write_text(SCHOOL)
    questions = questions if questions is not None else [
        {"id": "q1", "question": "Who built the Varden lighthouse?", "answers": ["Mara Holt"], "answerable": True,
         "category": "person", "source": "docs/lighthouse.md"},
        {"id": "q2", "question": "Who painted the Varden lighthouse in 1990?", "answers": [], "answerable": False,
         "category": "person", "absent_terms": ["painted"]},
        {"id": "q3", "question": "How many pupils does the island school have?", "answers": ["48"],
         "answerable": True, "category": "numeric", "source": "docs/school.txt"},
        {"id": "q4", "question": "How many pupils does the Varden college have?", "answers": [],
         "answerable": False, "category": "lookalike", "absent_terms": ["Varden college"]},
    ]
    path = folder / "questions.json"
    path.write_text(json.dumps({"documents": documents or ["docs/lighthouse.md", "docs/school.txt"],
                                "questions": questions}))
    return path


# A SQuAD 2.0 file of one article: two answerable questions and one that is not.
TINY_SQUAD = {
    "version": "v2.0",
    "data": [
        {
            "title": "Varden_Island",
            "paragraphs": [
                {
                    "context": "The Varden lighthouse was built in 1874 by the engineer Mara Holt. "
                    "Its lamp can be seen from 22 nautical miles away.",
                    "qas": [
                        {"id": "q1", "question": "Who built the Varden lighthouse?", "is_impossible": False,
                         "answers": [{"text": "Mara Holt", "answer_start": 47}]},
                        {"id": "q2", "question": "Who painted the Varden lighthouse in 1990?", "is_impossible": True,
                         "answers": []},
                    ],
                },
                {
                    "context": "The island school has 48 pupils and two teachers. The ferry leaves every morning at 7 am.",
                    "qas": [
                        {"id": "q3", "question": "How many pupils does the island school have?",
                         "is_impossible": False, "answers": [{"text": "48", "answer_start": 22}]},
                    ],
                },
            ],
        }
    ],
}


def write_halueval_rows(path: Path) -> Path:
    """Three HaluEval rows; the first two are length-matched (the hallucinated answer is as short as the right one)."""
    rows = [
        {"knowledge": "Delhi is the head office city of The Oberoi Group.", "question": "Head office city?",
         "right_answer": "Delhi", "hallucinated_answer": "Mumbai"},
        {"knowledge": "Allie Goertz was born in 1991 in Los Angeles.", "question": "When was Allie Goertz born?",
         "right_answer": "1991", "hallucinated_answer": "1989"},
        {"knowledge": "The museum opened in 1920.", "question": "When did it open?",
         "right_answer": "1920", "hallucinated_answer": "It opened in 1920 after a long delay of many years."},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path
