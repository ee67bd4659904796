"""Tool calling through the endpoint: ``bind_tools`` sends the tools' JSON schemas and the forced
choice as OpenAI's API (what TGI, vLLM and llama.cpp's server take), and the server's tool call
comes back parsed; the request and the reply are checked at a loopback server."""

from __future__ import annotations

from pydantic import BaseModel, Field

from keel.core.configuration import Configuration
from keel.models.chat import get_chat_model
from tests import openai_loopback


class SubQuestions(BaseModel):
    """A question split into self-contained sub-questions."""

    questions: list[str] = Field(description="each part of the question, answerable on its own")


def test_bind_tools_sends_the_schema_and_parses_the_call():
    state, server = openai_loopback.start("vllm")
    state.tool_arguments = {"questions": ["What is the V20's warranty?", "What is the V25's warranty?"]}
    try:
        model = get_chat_model(Configuration(chat_runtime="endpoint", llm_endpoint=state.url))
        reply = model.bind_tools([SubQuestions], tool_choice="SubQuestions").invoke(
            "Compare the warranty of the V20 with that of the V25.")
        [call] = reply.tool_calls
        assert call["name"] == "SubQuestions" and call["args"] == state.tool_arguments
        sent = state.chat_requests()[-1]
        [tool] = sent["tools"]
        assert tool["function"]["name"] == "SubQuestions"
        assert tool["function"]["parameters"]["properties"]["questions"]["type"] == "array"
        assert sent["tool_choice"] == {"type": "function", "function": {"name": "SubQuestions"}}
    finally:
        server.shutdown()
        server.server_close()


def test_structured_output_gives_the_schemas_instance():
    from keel.models.structured import structured_output

    state, server = openai_loopback.start("tgi")
    state.tool_arguments = {"questions": ["Who built it?", "When?"]}
    try:
        model = get_chat_model(Configuration(chat_runtime="endpoint", llm_endpoint=state.url))
        parsed = structured_output(model, SubQuestions).invoke("Who built the lighthouse, and when?")
        assert parsed == SubQuestions(questions=["Who built it?", "When?"])
        state.tool_arguments = {"questions": "not a list"}
        import pydantic

        try:
            structured_output(model, SubQuestions).invoke("Who built the lighthouse, and when?")
        except pydantic.ValidationError as error:
            assert "questions" in str(error)
        else:
            raise AssertionError("arguments that do not fit the schema must not pass")
    finally:
        server.shutdown()
        server.server_close()
