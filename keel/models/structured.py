"""Structured output through the chat endpoint: a Pydantic model's instance from the model's tool call.

langchain-huggingface's ``with_structured_output`` takes a tool's JSON schema, not a Pydantic class,
for function calling; this gives the class's schema as the one forced tool (OpenAI's ``tool_choice``,
which TGI, vLLM and llama.cpp's server constrain generation to) and validates the arguments into the
class. For a pool model whose chat template takes tools (``PoolModel.tools``).
"""

from __future__ import annotations

from typing import TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

Schema = TypeVar("Schema", bound=BaseModel)


def structured_output(model: BaseChatModel, schema: type[Schema]) -> Runnable:
    """A runnable that answers with a ``schema`` instance (a ``ValidationError`` when the model's
    arguments do not fit it)."""
    tool = convert_to_openai_tool(schema)
    return model.with_structured_output(tool, method="function_calling") | RunnableLambda(schema.model_validate)
