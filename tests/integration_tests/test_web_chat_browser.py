"""The web chat page against a real `keel serve` on the embedded parts, in a real headless Chromium:
the user from `keel users add` signs in with the key, uploads a real PDF from ../shared/data and a
password-protected one at once (made here with pypdf), sees the first listed and the second refused
with Keel's reason, asks a question the PDF answers and watches the answer stream in with a citation
that opens the cited passage, asks one it cannot answer and sees "I don't know", then reloads and
resumes the conversation; at a phone width too. Screenshots of each state go to the test's folder
($KEEL_TEST_ARTIFACTS/web-chat-real, else tmp_path).

The model is SmolLM2-135M on llama.cpp (10-20 s an answer on two cores), so the journey asks the two
questions it needs, once. Skipped, with the reason, without Chromium (tests/browser.py) or without
../shared/data."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.browser import artifacts_folder, as_phone, browser_missing_reason, chromium_page, console_entries, wait_until
from tests.integration_tests.test_web_page_browser import (WATCH_DRAFT, encrypted_pdf, finished_answers,
                                                           listed_documents, open_page, row_done, shown, sign_in,
                                                           unexpected_errors, upload_row)

pytest.importorskip("selenium", reason="selenium is not installed (pip install -e '.[test]')")
from selenium.webdriver.common.by import By  # noqa: E402 - only once the skip above has passed
from selenium.webdriver.common.keys import Keys  # noqa: E402

pytestmark = pytest.mark.shared_data
ROOT = Path(__file__).resolve().parents[2]
MEMO = Path("docs") / "unstructured-example-docs" / "fake-memo.pdf"  # a one-page delivery memo
ANSWERED = "How many laptops were delivered?"
EXPECTED = "200"  # "There were 20,000 bottles of water, 10,000 blankets, and 200 laptops delivered on ..."
UNANSWERED = "What is the capital of Mongolia?"
SERVE_START_S = 240.0  # the server loads the graph and connects to the embedded servers
ANSWER_S = 300.0  # one answer of the small model on a loaded two-core machine, with its checks


def keel_env(keel_home: Path) -> dict[str, str]:
    """The command's environment: the test session's KEEL_HOME, whose embedded servers it reuses."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("REDIS_URL", "MONGODB_URI", "KEEL_LLM_ENDPOINT")}
    return {**env, "KEEL_HOME": str(keel_home)}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def served(keel_home, redis_url, mongodb_uri, llm_endpoint, tmp_path_factory):
    """`keel serve` on a free port over the session's embedded servers, and a user's key from
    `keel users add`: (base URL, user, key)."""
    reason = browser_missing_reason()
    if reason:
        pytest.skip(reason)
    env = keel_env(keel_home)
    user = f"asker-{uuid.uuid4().hex[:8]}"
    added = subprocess.run([sys.executable, "-m", "keel.cli.main", "users", "add", user, "--json"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
    assert added.returncode == 0, added.stderr
    key = json.loads(added.stdout)["api_key"]
    port = free_port()
    log_path = tmp_path_factory.mktemp("keel-serve") / "serve.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen([sys.executable, "-m", "keel.cli.main", "serve", "--port", str(port)], cwd=ROOT,
                                  env=env, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVE_START_S
        while True:
            assert server.poll() is None, f"keel serve exited:\n{log_path.read_text()[-3000:]}"
            try:
                if httpx.get(f"{base_url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"keel serve did not answer:\n{log_path.read_text()[-3000:]}"
            time.sleep(0.5)
        yield base_url, user, key
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def ask(driver, question: str):
    before = len(finished_answers(driver))
    driver.find_element(By.ID, "question").send_keys(question + Keys.ENTER)
    wait_until(driver, lambda d: len(finished_answers(d)) > before and d.find_element(By.ID, "ask").is_enabled(),
               f"the answer to {question!r}", timeout_s=ANSWER_S)
    return finished_answers(driver)[-1]


def test_sign_in_upload_ask_and_resume_on_a_real_keel_serve(served, shared_data, tmp_path):
    base_url, user, key = served
    shots = artifacts_folder(tmp_path, "web-chat-real")
    memo = shared_data / MEMO
    locked = encrypted_pdf(tmp_path / "locked-report.pdf", "s3cret")
    with chromium_page() as driver:
        open_page(driver, base_url)
        assert shown(driver, "signin") and not shown(driver, "workspace")
        sign_in(driver, key, user)
        driver.save_screenshot(str(shots / "1-signed-in.png"))

        driver.find_element(By.ID, "file-input").send_keys(f"{memo}\n{locked}")
        for name in (memo.name, locked.name):
            wait_until(driver, lambda d, name=name: row_done(d, name), f"the outcome of {name}", timeout_s=ANSWER_S)
        assert "upload--done" in row_done(driver, memo.name), upload_row(driver, memo.name).text
        refused = upload_row(driver, locked.name)
        assert "upload--rejected" in refused.get_attribute("class")
        assert "encrypted PDF: a password is required" in refused.text
        wait_until(driver, lambda d: listed_documents(d) == [memo.name], "the memo in the document list")
        assert "1 page" in driver.find_element(By.CSS_SELECTOR, "#documents .document-meta").text
        driver.save_screenshot(str(shots / "2-uploaded.png"))

        driver.execute_script(WATCH_DRAFT)
        answer = ask(driver, ANSWERED)
        drafts = [draft for draft in driver.execute_script("return window.seen.draft") if draft.strip()]
        text = answer.find_element(By.CSS_SELECTOR, ".answer-text").text
        assert "answer--grounded" in answer.get_attribute("class"), (answer.get_attribute("class"), text)
        assert EXPECTED in text, text
        assert len(drafts) >= 2, drafts  # it streamed in: the draft grew before the final answer replaced it
        # [Source N] in the text, or the sources list under it (the small model seldom cites inline)
        answer.find_elements(By.CSS_SELECTOR, "button.citation, button.source-link")[0].click()
        wait_until(driver, lambda d: d.find_element(By.ID, "passage-dialog").is_displayed(), "the cited passage")
        assert driver.find_element(By.ID, "passage-where").text == f"{memo.name}, page 1"
        assert "200 laptops" in driver.find_element(By.ID, "passage-text").text
        driver.save_screenshot(str(shots / "3-cited-passage.png"))
        driver.find_element(By.ID, "passage-close").click()
        driver.save_screenshot(str(shots / "4-answer.png"))

        unknown = ask(driver, UNANSWERED)
        assert "answer--unknown" in unknown.get_attribute("class"), unknown.text
        assert "I don't know based on your documents" in unknown.text
        assert not unknown.find_elements(By.CSS_SELECTOR, "button.citation")
        driver.save_screenshot(str(shots / "5-i-dont-know.png"))

        driver.refresh()
        open_page(driver, base_url)
        wait_until(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#messages .question")) == 2,
                   "the conversation, resumed after the reload")
        answers = finished_answers(driver)
        assert "answer--grounded" in answers[0].get_attribute("class")
        assert "answer--unknown" in answers[1].get_attribute("class")
        listed = driver.find_elements(By.CSS_SELECTOR, "#conversations button.conversation")
        assert len(listed) == 1 and ANSWERED in listed[0].text
        assert listed[0].get_attribute("aria-current") == "true"
        answers[0].find_elements(By.CSS_SELECTOR, "button.citation, button.source-link")[0].click()
        wait_until(driver, lambda d: "200 laptops" in d.find_element(By.ID, "passage-text").text,
                   "a citation of the resumed conversation, opened")
        driver.find_element(By.ID, "passage-close").click()
        driver.save_screenshot(str(shots / "6-resumed.png"))
        assert unexpected_errors(console_entries(driver), "/ingest - Failed to load resource: the server responded "
                                 "with a status of 422") == []

    with chromium_page() as phone:  # the same conversation on a phone: a new tab signs in again
        as_phone(phone)
        open_page(phone, base_url)
        sign_in(phone, key, user)
        phone.find_element(By.CSS_SELECTOR, "#conversations-panel summary").click()
        phone.find_element(By.CSS_SELECTOR, "#conversations button.conversation").click()
        wait_until(phone, lambda d: len(finished_answers(d)) == 2, "the conversation on a phone")
        assert phone.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
        phone.execute_script("document.getElementById('messages').scrollIntoView()")
        phone.save_screenshot(str(shots / "7-phone.png"))
