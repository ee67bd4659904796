"""Pictures in a question (LangChain image content blocks): taken inline only, within the limits,
sent as image parts to a model that reads them, and read into the question (OCR) for one that does
not, with the answer saying what was read. The graph's requests are checked where they arrive: a
loopback OpenAI-compatible endpoint."""

from __future__ import annotations

import base64
import io

import pytest
from langchain_core.messages import HumanMessage
from PIL import Image

from keel.chains.image_inputs import ImageInputError, image_note, question_images, question_with_image_text
from keel.core.configuration import Configuration
from keel.graph import build_graph
from tests import openai_loopback
from tests.answer_fakes import KeywordEmbeddings
from tests.fakes import StaticRetriever, WordTokenizer, passage_doc

FACTS = ["Error E-42 means the dust filter is blocked: rinse the filter and let it dry for 24 hours.",
         "The Varden lighthouse was built in 1874 by the engineer Mara Holt."]


def png(width: int = 8, height: int = 8) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(buffer, format="PNG")
    return buffer.getvalue()


PNG64 = base64.b64encode(png()).decode()
SPELLINGS = [
    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}},  # OpenAI
    {"type": "image_url", "image_url": f"data:image/png;base64,{PNG64}"},
    {"type": "image", "base64": PNG64, "mime_type": "image/png"},  # LangChain v1
    {"type": "image", "source_type": "base64", "data": PNG64, "mime_type": "image/png"},  # LangChain 0.3
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}},  # Anthropic
]


@pytest.mark.parametrize("block", SPELLINGS)
def test_every_inline_spelling_is_taken(block):
    [image] = question_images([{"type": "text", "text": "What is this?"}, block], Configuration())
    assert image.data == png() and image.mime_type == "image/png"
    assert image.part()["image_url"]["url"] == f"data:image/png;base64,{PNG64}"


@pytest.mark.parametrize("content, problem", [
    ([{"type": "image_url", "image_url": {"url": "http://169.254.169.254/latest/meta-data"}}], "link"),
    ([{"type": "image", "url": "https://example.com/cat.png"}], "link"),
    ([{"type": "image", "base64": "not base64!!"}], "not valid base64"),
    ([{"type": "image", "base64": base64.b64encode(b"just some text").decode()}], "cannot be read"),
    ([{"type": "image"}], "no inline data"),
    ([SPELLINGS[0]] * 5, "at most 4"),
    ([{"type": "video_url", "video_url": {"url": "http://10.0.0.1/v.mp4"}}], "text and pictures only"),
    ([{"type": "file", "file": {"file_id": "x"}}], "text and pictures only"),
    (["plain string part"], "text and pictures only"),
])
def test_a_picture_that_cannot_be_taken_is_refused_naming_why(content, problem):
    with pytest.raises(ImageInputError, match=problem):
        question_images(content, Configuration())


def test_a_picture_over_the_size_limit_is_refused_before_it_is_decoded():
    with pytest.raises(ImageInputError, match="larger than 20 bytes"):
        question_images([SPELLINGS[2]], Configuration(max_question_image_bytes=20))
    assert question_images("plain text", Configuration()) == []


def test_the_note_says_what_was_read_and_what_was_not():
    assert image_note(["E-42"]) == 'From your picture I could read "E-42".'
    assert image_note([""]) == "I could not read any text in your picture."
    assert image_note(["E-42", ""]) == ('From your pictures I could read picture 1: "E-42". '
                                        "I could not read any text in picture 2.")
    assert question_with_image_text("What does it mean?", ["E-42", ""]) == 'What does it mean? (the picture reads: "E-42")'
    assert question_with_image_text("Which?", ["A-1", "B-2"]) == 'Which? (the pictures read: "A-1"; "B-2")'


@pytest.fixture
def endpoint():
    state, server = openai_loopback.start("llama.cpp")
    state.answers = ["Error E-42 means the dust filter is blocked [Source 1]."]
    yield state
    server.shutdown()
    server.server_close()


def ask(endpoint, reads_images: bool, reader):
    docs = [passage_doc(text, page=n) for n, text in enumerate(FACTS, 1)]
    graph = build_graph(embeddings=KeywordEmbeddings(), retriever=StaticRetriever(documents=docs),
                        tokenizer=WordTokenizer(), image_reader=reader)
    question = HumanMessage([{"type": "text", "text": "What does this error on my vacuum mean?"}, SPELLINGS[0]])
    settings = {"chat_runtime": "endpoint", "llm_endpoint": endpoint.url, "chat_model_reads_images": reads_images}
    return graph.invoke({"messages": [question]}, {"configurable": settings})


def test_a_text_only_model_gets_the_pictures_text_and_the_answer_says_what_was_read(endpoint):
    result = ask(endpoint, False, lambda data: "Error E-42" if data == png() else "")
    sent = endpoint.chat_requests()[0]["messages"][-1]
    assert isinstance(sent["content"], str) and '(the picture reads: "Error E-42")' in sent["content"]
    assert "image_url" not in str(endpoint.chat_requests())
    assert result["status"] == "success" and "dust filter" in result["answer"]
    assert result["answer"].endswith('From your picture I could read "Error E-42".')
    assert result["messages"][-1].content == result["answer"]


def test_a_picture_without_text_is_said_to_be_unreadable(endpoint):
    result = ask(endpoint, False, lambda data: "")
    assert result["answer"].endswith("I could not read any text in your picture.")


def test_a_model_that_reads_pictures_gets_them_as_image_parts(endpoint):
    result = ask(endpoint, True, lambda data: pytest.fail("nothing is read for a model that reads pictures"))
    sent = endpoint.chat_requests()[0]["messages"][-1]["content"]
    assert sent[0]["type"] == "text" and "What does this error" in sent[0]["text"]
    assert sent[1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}}
    assert "From your picture" not in result["answer"]


def test_a_picture_link_never_reaches_the_endpoint(endpoint):
    graph = build_graph(embeddings=KeywordEmbeddings(), retriever=StaticRetriever(documents=[]),
                        tokenizer=WordTokenizer(), image_reader=lambda data: "")
    question = HumanMessage([{"type": "text", "text": "What is this?"},
                             {"type": "image_url", "image_url": {"url": "http://10.0.0.1/secret.png"}}])
    with pytest.raises(ImageInputError, match="does not fetch"):
        graph.invoke({"messages": [question]}, {"configurable": {"chat_runtime": "endpoint", "llm_endpoint": endpoint.url}})
    assert endpoint.requests == []


def test_a_follow_up_after_a_picture_sends_only_text_and_fits_the_context(endpoint):
    from langgraph.checkpoint.memory import InMemorySaver

    docs = [passage_doc(text, page=n) for n, text in enumerate(FACTS, 1)]
    graph = build_graph(embeddings=KeywordEmbeddings(), retriever=StaticRetriever(documents=docs),
                        tokenizer=WordTokenizer(), image_reader=lambda data: "Error E-42", checkpointer=InMemorySaver())
    big = base64.b64encode(png(400, 400) * 20).decode()  # a large base64 payload in the stored first question
    picture = {"type": "image", "base64": PNG64, "mime_type": "image/png", "padding": big}
    config = {"configurable": {"chat_runtime": "endpoint", "llm_endpoint": endpoint.url, "thread_id": "t-1",
                               "moderation_backend": "keywords"}}  # the classifier reads real embeddings only
    first = graph.invoke({"messages": [HumanMessage([{"type": "text", "text": "What does this error mean?"}, picture])]},
                         config)
    assert first["status"] == "success"
    endpoint.answers = ["Rinse the filter and let it dry for 24 hours [Source 1]."]
    second = graph.invoke({"messages": [HumanMessage("How do I fix the error E-42 on the dust filter?")]}, config)
    assert second["status"] == "success" and "Rinse" in second["answer"], second["reasons"]
    follow_up = endpoint.chat_requests()[-1]["messages"]
    assert all(isinstance(m["content"], str) for m in follow_up)  # no picture sent again
    assert big[:100] not in str(follow_up) and "What does this error mean?" in str(follow_up)
    assert "From your picture" not in second["answer"]  # the note belongs to the turn that had the picture
