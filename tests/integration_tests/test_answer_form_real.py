"""The answer form on a real letter: the public memo PDF read by Keel's PDF loader, quoted by the
extractive attempt with the real MiniLM embeddings, then put in form. Before, the quote opened with
the letter's date and salutation and kept the page's line break inside the date."""

from __future__ import annotations

import re

import pytest

from keel.chains.answer_form import tidy_answer
from keel.chains.extractive import extractive_answer

pytestmark = [pytest.mark.real, pytest.mark.shared_data]


@pytest.fixture(scope="module")
def memo_text(request):
    from pathlib import Path

    from keel.loaders.registry import loader_for

    path = Path(__file__).resolve().parents[2].parent / "shared/data/docs/unstructured-example-docs/fake-memo.pdf"
    if not path.is_file():
        pytest.skip(f"{path} is not there (../shared/data is not beside this checkout)")
    return " ".join(page.page_content for page in loader_for(path).lazy_load())


@pytest.mark.parametrize("question", ["How many laptops were delivered?", "How many trucks were used?"])
def test_a_quoted_letter_starts_at_its_statement_and_reads_as_running_text(memo_text, question):
    from keel.components import Components
    from keel.core.configuration import Configuration

    cfg = Configuration()
    quoted = extractive_answer(question, [(1, memo_text)], cfg, Components().similarity(cfg))
    assert quoted != cfg.fallback_answer
    answer = tidy_answer(quoted, [{"number": 1, "text": memo_text, "source": "fake-memo.pdf"}])
    assert answer.startswith(("There were", "A total of")), answer
    assert "\n" not in answer and "Whom" not in answer and not answer.startswith("May 5")
    sentences = re.split(r"(?<=[.!?])\s+", answer)
    assert all("[Source 1]" in sentence for sentence in sentences), answer
