"""The web chat page while the deployment reviews answers, in a real headless Chromium over Keel's
app on fakes: the asker's answer reads "Waiting for a reviewer" (its own look, no Retry) and shows
nothing of the draft; once a reviewer approves it, the reopened conversation shows the reviewed
answer, grounded, with its citation. Skipped, with the reason, where no Chromium is installed."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from keel.core.configuration import Configuration
from keel.graph import build_graph
from keel.server.app import create_app
from keel.server.review_routes import resume_review
from keel.server.settings_policy import deployment_settings
from keel.stores.review_queue import ReviewQueue
from tests.answer_fakes import KeywordEmbeddings
from tests.browser import artifacts_folder, chromium_page, console_entries, live_server, wait_until
from tests.fakes import WordTokenizer, passage_doc
from tests.integration_tests.test_web_page_browser import ask, css, open_page, sign_in, unexpected_errors
from tests.serving_fakes import InMemoryCollection, keys_and_owners
from tests.web_fakes import ANSWER, FACT, QUESTION, FailingOnDemandModel, FakeDocumentStore, LighthouseRetriever

pytest.importorskip("selenium", reason="selenium is not installed (pip install -e '.[test]')")
from selenium.webdriver.common.by import By  # noqa: E402 - only once the skip above has passed


def test_the_asker_sees_the_answer_wait_for_review_then_the_reviewed_answer(tmp_path):
    queue = ReviewQueue(InMemoryCollection())
    graph = build_graph(chat_model=FailingOnDemandModel(responses=[ANSWER] * 10), embeddings=KeywordEmbeddings(),
                        retriever=LighthouseRetriever(documents=[passage_doc(FACT, page=3, doc_id="doc-1")]),
                        tokenizer=WordTokenizer(), checkpointer=InMemorySaver(), review_queue=queue)
    api_keys, keys, owners = keys_and_owners(users=("alice",))
    cfg = Configuration(review_mode="always", rate_limit_burst=10_000, auth_failure_limit=0, max_input_tokens=40)
    app = create_app(graph=graph, cfg=cfg, store=FakeDocumentStore(), api_keys=api_keys, owners=owners,
                     review_queue=queue)
    shots = artifacts_folder(tmp_path, "review-page")
    with live_server(app) as base_url, chromium_page() as driver:
        open_page(driver, base_url)
        sign_in(driver, keys["alice"], "alice")
        waiting = ask(driver, QUESTION)
        assert "answer--review" in waiting.get_attribute("class")
        assert "Waiting for a reviewer" in waiting.text and cfg.review_pending_message in waiting.text
        assert "Mara Holt" not in driver.find_element(By.ID, "messages").text
        assert not waiting.find_elements(By.CSS_SELECTOR, "button.retry, button.citation")
        driver.save_screenshot(str(shots / "awaiting-review.png"))

        (item,) = queue.pending(10)
        resume_review(graph, queue, item["_id"], {"action": "approve"}, "rita", cfg, deployment_settings(cfg))
        driver.refresh()
        open_page(driver, base_url)
        wait_until(driver, lambda d: len(css(d, "#messages .answer--grounded")) == 1, "the reviewed answer")
        answer = css(driver, "#messages .answer--grounded")[0]
        assert "Mara Holt" in answer.text and answer.find_elements(By.CSS_SELECTOR, "button.citation")
        assert not css(driver, "#messages .answer--review")
        driver.save_screenshot(str(shots / "reviewed.png"))
        assert unexpected_errors(console_entries(driver)) == []
