"""A loopback chat server speaking the OpenAI-compatible API as TGI, vLLM and llama.cpp's server
document it: /v1/chat/completions (JSON, or server-sent events when ``stream``), streamed
/v1/completions, their model info
routes, their error bodies, a stream's token counts (TGI and vLLM send them when
``stream_options.include_usage`` asks; llama.cpp's server does not). It records every request body, so a test sees what really reached it."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Each server's model info route and the body it answers with.
INFO_ROUTES = {
    "tgi": {"/info": {"model_id": "Qwen/Qwen2.5-1.5B-Instruct", "max_input_tokens": 3000, "max_total_tokens": 3500,
                      "max_batch_total_tokens": 16000, "version": "3.0.0"}},
    "vllm": {"/v1/models": {"object": "list", "data": [{"id": "Qwen/Qwen2.5-1.5B-Instruct", "object": "model",
                                                       "max_model_len": 2048}]}},
    "llama.cpp": {"/v1/models": {"object": "list", "data": [{"id": "m.gguf", "object": "model", "owned_by": "me"}]}},
}


@dataclass
class Loopback:
    url: str
    requests: list[dict] = field(default_factory=list)  # the JSON bodies of the POSTs, in order
    answers: list[str] = field(default_factory=lambda: ["The Varden lighthouse was built by Mara Holt [Source 1]."])
    error: tuple[int, dict] | None = None  # answer every POST with this status and body instead
    tool_arguments: dict = field(default_factory=dict)  # what a request with tools gets as its tool call

    def chat_requests(self) -> list[dict]:
        return [body for body in self.requests if "messages" in body]


def start(flavour: str = "llama.cpp") -> tuple[Loopback, ThreadingHTTPServer]:
    routes = INFO_ROUTES[flavour]
    state: Loopback

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _reply(self, status: int, body, content_type: str = "application/json") -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802 - http.server's naming
            if self.path == "/health":
                self._reply(200, {"status": "ok"})
            elif self.path in routes:
                self._reply(200, routes[self.path])
            else:
                self._reply(404, {"error": "Not Found"})

        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            if state.error is not None:
                self._reply(*state.error)
                return
            if self.path == "/v1/completions":
                self._complete(body)
                return
            if self.path != "/v1/chat/completions":
                self._reply(404, {"error": "Not Found"})
                return
            text = state.answers[min(len(state.chat_requests()) - 1, len(state.answers) - 1)]
            usage = {"prompt_tokens": 40, "completion_tokens": len(text.split()), "total_tokens": 40 + len(text.split())}
            if body.get("tools"):  # a tool call to the chosen tool (or the first), as OpenAI's API returns it
                choice = body.get("tool_choice")
                name = choice["function"]["name"] if isinstance(choice, dict) else body["tools"][0]["function"]["name"]
                call = {"id": "call_1", "type": "function",
                        "function": {"name": name, "arguments": json.dumps(state.tool_arguments)}}
                self._reply(200, {"id": "1", "object": "chat.completion", "created": 0, "model": "m",
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                                                       "tool_calls": [call]},
                                               "finish_reason": "tool_calls"}], "usage": usage})
                return
            if not body.get("stream"):
                self._reply(200, {"id": "1", "object": "chat.completion", "created": 0, "model": "m",
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                               "finish_reason": "stop"}], "usage": usage})
                return
            words = text.split(" ")
            events = [{"id": "1", "object": "chat.completion.chunk", "created": 0, "model": "m",
                       "choices": [{"index": 0, "delta": {"content": word + (" " if i < len(words) - 1 else "")},
                                    "finish_reason": None}]} for i, word in enumerate(words)]
            events.append({"id": "1", "object": "chat.completion.chunk", "created": 0, "model": "m",
                           "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            if flavour != "llama.cpp" and (body.get("stream_options") or {}).get("include_usage"):
                # TGI and vLLM count a stream's tokens only when asked, in a last chunk without choices;
                # llama-cpp-python's server never does
                events.append({"id": "1", "object": "chat.completion.chunk", "created": 0, "model": "m",
                               "choices": [], "usage": usage})
            sse = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
            self._reply(200, sse.encode(), "text/event-stream")

        def _complete(self, body: dict) -> None:
            """/v1/completions, streamed: the next answer's words as text chunks (a continuation)."""
            text = state.answers[min(len(state.requests) - 1, len(state.answers) - 1)]
            words = text.split(" ")
            events = [{"id": "1", "object": "text_completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "text": word + (" " if i < len(words) - 1 else ""),
                                    "finish_reason": "stop" if i == len(words) - 1 else None}]}
                      for i, word in enumerate(words)]
            if flavour != "llama.cpp" and (body.get("stream_options") or {}).get("include_usage"):
                events.append({"id": "1", "object": "text_completion", "created": 0, "model": "m", "choices": [],
                               "usage": {"prompt_tokens": 40, "completion_tokens": len(words),
                                         "total_tokens": 40 + len(words)}})
            sse = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
            self._reply(200, sse.encode(), "text/event-stream")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state = Loopback(f"http://127.0.0.1:{server.server_address[1]}")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return state, server
