"""The LangServe playground (/chat/playground/) in a real headless Chromium: it renders its
settings and input forms without a console error, and it answers a question typed into it, showing the answer and its sources, not the graph's inside.

The app is Keel's server as ``keel serve`` builds it, API keys on, over a graph of fakes (a
scripted model, a static retriever), served by uvicorn on a loopback port; the browser sends the
key with every request the page makes. The page builds its settings form from /chat/config_schema,
so a schema its form builder cannot render (a null branch) leaves it blank; once a setting is
chosen it asks for the input schema at /chat/c/<settings>/input_schema, and without an answer
there the input form is gone. Both are caught here in the browser, and in
unit_tests/test_playground_schemas.py on the server. Skipped, with the reason, where no Chromium
is installed (tests/browser.py)."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from keel.core.configuration import Configuration
from keel.graph import build_graph
from keel.server.app import create_app
from tests.answer_fakes import KeywordEmbeddings, ScriptedChatModel
from tests.browser import chromium_page, console_entries, live_server, severe_console_errors, wait_until
from tests.fakes import StaticRetriever, WordTokenizer, passage_doc
from tests.serving_fakes import bearer, keys_and_owners

pytest.importorskip("selenium", reason="selenium is not installed (pip install -e '.[test]')")
from selenium.webdriver.common.by import By  # noqa: E402 - only once the skip above has passed
from selenium.webdriver.support.ui import Select  # noqa: E402

QUESTION = "Who built the Varden lighthouse?"
FACT = "The Varden lighthouse was built in 1874 by the engineer Mara Holt."
ANSWER = "<answer>The Varden lighthouse was built in 1874 by the engineer Mara Holt [Source 1].</answer>"


@pytest.fixture(scope="module")
def playground():
    """The playground's URL and a user's key, on a live server."""
    api_keys, keys, owners = keys_and_owners(users=("alice",))
    graph = build_graph(chat_model=ScriptedChatModel(responses=[ANSWER] * 20), embeddings=KeywordEmbeddings(),
                        retriever=StaticRetriever(documents=[passage_doc(FACT, page=1, doc_id="doc-1")]),
                        tokenizer=WordTokenizer(), checkpointer=InMemorySaver())
    app = create_app(graph=graph, cfg=Configuration(), store=object(), api_keys=api_keys, owners=owners)
    with live_server(app) as base_url:
        yield f"{base_url}/chat/playground/", keys["alice"]


@pytest.fixture
def page(playground):
    url, key = playground
    with chromium_page(headers=bearer(key)) as driver:
        driver.get(url)
        yield driver


def start_button(driver):
    found = driver.find_elements(By.XPATH, "//button[normalize-space()='Start']")
    return found[0] if found else None


MESSAGES = "//label[normalize-space()='Messages']/ancestor::div[@class='control'][1]"  # the input form's message list


def messages_control(driver):
    return driver.find_element(By.XPATH, MESSAGES)


def test_the_playground_renders_its_forms_without_console_errors(page):
    wait_until(page, start_button, "the playground's Start button")
    for setting in ("thread_id", "max_new_tokens", "grounding_mode", "answer_format"):
        assert page.find_elements(By.ID, f"#/properties/{setting}-input"), f"no form field for {setting}"
    assert page.find_elements(By.XPATH, MESSAGES), "no message list in the input form"
    assert severe_console_errors(console_entries(page)) == []


def output_text(driver) -> str:
    """What the playground shows under Output (re-read each time: the page redraws it while the
    answer streams in)."""
    found = driver.find_elements(By.XPATH, "//h2[normalize-space()='Output']/..")
    return found[0].text if found else ""


def add_question(driver, question: str) -> bool:
    """Adds a message (a human one by default) and types the question into it."""
    control = messages_control(driver)
    if not control.find_elements(By.TAG_NAME, "textarea"):
        control.find_element(By.TAG_NAME, "button").click()
        return False  # typed on the next try, once the new message is drawn
    control.find_element(By.TAG_NAME, "textarea").send_keys(question)
    return True


def test_the_playground_answers_a_question_with_settings_from_its_form(page):
    wait_until(page, start_button, "the playground's Start button")
    Select(page.find_element(By.ID, "#/properties/grounding_mode-input")).select_by_value("strict")
    page.find_element(By.ID, "#/properties/max_new_tokens-input").send_keys("64")
    wait_until(page, lambda driver: add_question(driver, QUESTION), "a message to type the question in")
    wait_until(page, lambda driver: start_button(driver).click() or True, "the Start button, clickable")
    # the output is the answer as the chat page shows it, then its sources: not the nodes' JSON
    wait_until(page, lambda driver: "Mara Holt" in output_text(driver) and "handbook.pdf" in output_text(driver),
               "the answer and its sources in the playground's output")
    shown = output_text(page)
    assert shown.index("Mara Holt") < shown.index("handbook.pdf")
    for inside in ('"status"', "system_prompt", "You are Keel", "generate_answer", "{"):
        assert inside not in shown, inside
    assert "system_prompt" not in page.page_source and "You are Keel" not in page.page_source
    assert severe_console_errors(console_entries(page)) == []
