"""Llama Guard 3 over an OpenAI-compatible server (vLLM, TGI): the production moderator.

Two ways to ask, per ``llama_guard_api``:

* ``completions`` (default): Keel writes Llama Guard 3's own prompt, its chat template with the
  S1-S14 category list (the taxonomy in keel/core/safety_taxonomy.py), and posts it to
  ``/completions``; what the model sees is exactly ``guard_prompt(...)``, whatever the server's
  chat template.
* ``chat``: Keel posts the conversation to ``/chat/completions`` and the server applies the model's
  bundled template (the same prompt, when the server ships Llama Guard's tokenizer config).

The verdict is ``safe`` or ``unsafe`` with the violated codes on the next line (``unsafe\\nS1,S10``).
A server that is down, slow or answers something else raises ``LlamaGuardError`` with the URL and
the reason; the moderator decides whether that refuses (fail closed) or lets the turn through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx

from keel.core.safety_taxonomy import HAZARD_CATEGORIES

USER, AGENT = "User", "Agent"
VERDICT_TOKENS = 20  # "unsafe\nS1,S2,...": a few tokens; more would only be the model rambling
CATEGORY_CODE = re.compile(r"^S([1-9]|1[0-4])$")


class LlamaGuardError(RuntimeError):
    """Llama Guard could not give a verdict: the message says which server and why."""


@dataclass(frozen=True)
class GuardVerdict:
    """Llama Guard's verdict: safe or not, and the hazard codes it names."""
    safe: bool
    categories: tuple[str, ...] = ()


def guard_prompt(user: str, agent: str | None = None) -> str:
    """Llama Guard 3's prompt for judging the last turn: the user's message, or the agent's answer
    to it when ``agent`` is given."""
    role = AGENT if agent is not None else USER
    categories = "\n".join(f"{c.code}: {c.guard_name}." for c in HAZARD_CATEGORIES)
    conversation = f"User: {user}" + (f"\n\nAgent: {agent}" if agent is not None else "")
    return (
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n"
        f"Task: Check if there is unsafe content in '{role}' messages in conversations according our safety "
        "policy with the below categories.\n\n"
        f"<BEGIN UNSAFE CONTENT CATEGORIES>\n{categories}\n<END UNSAFE CONTENT CATEGORIES>\n\n"
        f"<BEGIN CONVERSATION>\n\n{conversation}\n\n<END CONVERSATION>\n\n"
        f"Provide your safety assessment for ONLY THE LAST {role} message in the above conversation:\n"
        " - First line must read 'safe' or 'unsafe'.\n"
        " - If unsafe, a second line must include a comma-separated list of violated categories."
        "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    )


def parse_verdict(text: str) -> GuardVerdict:
    """``safe`` -> safe; ``unsafe\\nS1,S10`` -> unsafe with those codes; anything else is an error
    (a misconfigured server or a model that is not Llama Guard)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if lines and lines[0].lower() == "safe":
        return GuardVerdict(True)
    if lines and lines[0].lower() == "unsafe":
        codes = tuple(code.strip().upper() for code in (lines[1] if len(lines) > 1 else "").split(",") if code.strip())
        if not codes or not all(CATEGORY_CODE.match(code) for code in codes):
            raise LlamaGuardError(f"Llama Guard said unsafe without valid categories: {text!r}")
        return GuardVerdict(False, codes)
    raise LlamaGuardError(f"not a Llama Guard verdict: {text[:200]!r}")


@dataclass
class LlamaGuardClient:
    """Llama Guard 3 behind an OpenAI-compatible server: the production moderator."""
    base_url: str  # the OpenAI-compatible root, e.g. http://guard:8000/v1
    model: str
    api: str = "completions"
    timeout_s: float = 10.0

    def judge(self, user: str, agent: str | None = None) -> GuardVerdict:
        url = self.base_url.rstrip("/")
        if self.api == "chat":
            messages = [{"role": "user", "content": user}]
            if agent is not None:
                messages.append({"role": "assistant", "content": agent})
            url += "/chat/completions"
            body = {"model": self.model, "messages": messages, "max_tokens": VERDICT_TOKENS, "temperature": 0}
        else:
            url += "/completions"
            body = {"model": self.model, "prompt": guard_prompt(user, agent), "max_tokens": VERDICT_TOKENS,
                    "temperature": 0}
        try:
            response = httpx.post(url, json=body, timeout=self.timeout_s)
            response.raise_for_status()
            choice = response.json()["choices"][0]
            text = choice["message"]["content"] if self.api == "chat" else choice["text"]
        except httpx.TimeoutException as error:
            raise LlamaGuardError(f"Llama Guard at {url} did not answer within {self.timeout_s}s") from error
        except httpx.HTTPStatusError as error:
            raise LlamaGuardError(f"Llama Guard at {url} answered HTTP {error.response.status_code}: "
                                  f"{error.response.text[:200]}") from error
        except httpx.HTTPError as error:
            raise LlamaGuardError(f"Llama Guard at {url} is not reachable: {error}") from error
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise LlamaGuardError(f"Llama Guard at {url} answered something that is not a completion: {error}") from error
        return parse_verdict(text or "")

