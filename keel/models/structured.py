"""Structured output through the chat endpoint: a Pydantic model's instance from the model's tool call.

langchain-huggingface's ``with_structured_output`` takes a tool's JSON schema, not a Pydantic class,
for function calling; this gives the class's schema as the one forced tool (OpenAI's ``tool_choice``,
which TGI, vLLM and llama.cpp's server constrain generation to) and validates the arguments into the
class. For a pool model whose chat template takes tools (``PoolModel.tools``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.output_parsers.openai_tools import JsonOutputKeyToolsParser
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

Schema = TypeVar("Schema", bound=BaseModel)


def structured_output(model: BaseChatModel, schema: type[Schema], **call_options: Any) -> Runnable:
    """A runnable that answers with a ``schema`` instance (a ``ValidationError`` when the model's
    arguments do not fit it, or it called no tool). ``call_options`` go with the request (e.g.
    ``max_tokens``, ``temperature``)."""
    tool = convert_to_openai_tool(schema)
    name = tool["function"]["name"]
    bound = model.bind_tools([tool], tool_choice=name, **call_options)
    return bound | JsonOutputKeyToolsParser(key_name=name, first_tool_only=True) | RunnableLambda(schema.model_validate)


@lru_cache(maxsize=32)
def _as_tool(schema: type[BaseModel]) -> dict:
    """The schema as OpenAI's tool JSON, converted once per class."""
    return convert_to_openai_tool(schema)


def forced_tool_call(
    model: BaseChatModel, schema: type[BaseModel], messages, config=None, **call_options: Any
):
    """The model's reply when made to call ``schema`` as its one tool; its ``usage_metadata`` counts
    the call's tokens. ``tool_arguments`` reads the call."""
    tool = _as_tool(schema)
    return model.bind_tools([tool], tool_choice=tool["function"]["name"], **call_options).invoke(messages, config=config)


def tool_arguments(reply, schema: type[Schema]) -> Schema:
    """``schema``'s instance from ``reply``'s call to it; a ``ValidationError`` when the arguments do
    not fit, or the model called no tool."""
    name = _as_tool(schema)["function"]["name"]
    calls = [call for call in getattr(reply, "tool_calls", None) or [] if call.get("name") == name]
    return schema.model_validate(calls[0]["args"] if calls else None)
