"""A small OpenAI-compatible HTTP server for the integration tests.

It speaks the parts of OpenAI's API that the real clients use (``openai``,
``langchain_openai.ChatOpenAI``, LlamaIndex's ``OpenAI`` / ``OpenAILike``), on
127.0.0.1 and an ephemeral port, so a test drives those clients unchanged:

- ``POST /v1/chat/completions``: a ``chat.completion`` object, or with
  ``"stream": true`` server-sent events (``data: {chat.completion.chunk}`` lines: the
  role, the text in pieces, tool calls with their arguments in pieces, a last chunk
  with ``finish_reason``, a usage chunk when ``stream_options.include_usage`` is set,
  then ``data: [DONE]``), sent with chunked transfer encoding as real servers do;
- ``POST /v1/completions``: the legacy completion API, streamed or not;
- ``GET /v1/models``: the models it serves, or a scripted fault (:class:`Listing`: a
  slow answer, an error status, a body that is no model list);
- the first token's log-probabilities where a reply scripts them and the request asks
  (``"logprobs": true, "top_logprobs": k``), as OpenAI, vLLM and llama.cpp send them;
- a reply that takes its time (``delay_s``), for a client's timeout;
- errors as OpenAI writes them (``{"error": {"message", "type", "param", "code"}}``):
  400 for a malformed request, 401 without a key, 404 for a model it does not serve,
  and any status a test scripts (429 and 5xx come with ``retry-after-ms`` so the
  clients' retries are quick).

What the model says comes from a script: a queue of :class:`Reply` (or plain strings),
or a function of the request for conversations of unknown length. Every request is
recorded (:attr:`OpenAIServer.requests`) so a test can assert what a client sent, e.g.
the refinement prompt.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ChatRequest", "Listing", "OpenAIServer", "Reply", "ToolCall"]

DEFAULT_MODEL = "test-model"

# OpenAI's error "type" per status.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "server_error",
}


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model makes: the tool's name and its arguments."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:12]}")


@dataclass(frozen=True)
class Reply:
    """One scripted answer: text, tool calls, or an HTTP error.

    Attributes:
        content: The assistant's text (``None`` for a reply that only calls tools).
        tool_calls: Tool calls the model makes.
        status: HTTP status; anything but 200 is an error reply.
        error: The error's message (``status`` != 200).
        finish_reason: Default ``"tool_calls"`` with tool calls, else ``"stop"``.
        logprobs: The first token's alternatives as ``(token, logprob)``, the token
            generated first; sent (the first ``top_logprobs`` of them) only to a
            non-streamed chat request that asks for them.
        delay_s: Seconds to wait before answering (a server slower than the timeout).
    """

    content: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    status: int = 200
    error: str = "scripted error"
    finish_reason: str | None = None
    logprobs: Sequence[tuple[str, float]] | None = None
    delay_s: float = 0.0

    @property
    def finish(self) -> str:
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


@dataclass(frozen=True)
class Listing:
    """One scripted answer to ``GET /v1/models``, for the discovery's faults.

    Attributes:
        body: The JSON body (any JSON value); ``raw`` wins when set.
        raw: The body's bytes as sent (HTML, a broken JSON).
        status: HTTP status (an error body is OpenAI's when ``body`` and ``raw`` are unset).
        content_type: The ``Content-Type`` header.
        delay_s: Seconds to wait before answering (a server slower than the timeout).
    """

    body: Any = None
    raw: bytes | None = None
    status: int = 200
    content_type: str = "application/json"
    delay_s: float = 0.0


@dataclass(frozen=True)
class ChatRequest:
    """A request the server got: path, JSON body and headers."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages (empty for ``/v1/completions``)."""
        found = self.body.get("messages")
        return found if isinstance(found, list) else []

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def top_logprobs(self) -> int | None:
        """How many first-token alternatives the request asked for (``None``: none)."""
        if self.body.get("logprobs") is not True:
            return None
        asked = self.body.get("top_logprobs")
        return asked if isinstance(asked, int) else 0

    @property
    def text(self) -> str:
        """Every message's text (or the completion prompt), one per line."""
        if "prompt" in self.body:
            prompt = self.body["prompt"]
            return prompt if isinstance(prompt, str) else "\n".join(map(str, prompt))
        return "\n".join(_content_text(m.get("content")) for m in self.messages)

    @property
    def last_user(self) -> str:
        """The text of the last user message."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return _content_text(message.get("content"))
        return ""

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools the request offers the model."""
        tools = self.body.get("tools") or []
        return [t["function"]["name"] for t in tools]


Responder = Callable[[ChatRequest], "Reply | str"]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _tokens(text: str) -> int:
    """A rough token count (words), enough for a faithful ``usage`` block."""
    return len(text.split())


class _RequestError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class OpenAIServer:
    """An OpenAI-compatible server on 127.0.0.1 answering from a script.

    Example:
        >>> with OpenAIServer() as server:  # doctest: +SKIP
        ...     server.script("The Eiffel Tower was built in 1889.")
        ...     ChatOpenAI(base_url=server.url, api_key="test", model=server.model).invoke("hi")

    Args:
        models: The model names it serves; a request for another gets a 404.
        api_key: The key it requires (``Authorization: Bearer ...``); ``None`` takes any
            non-empty key.
        chunk_words: Words per streamed text piece.
    """

    def __init__(
        self,
        models: Sequence[str] = (DEFAULT_MODEL,),
        *,
        api_key: str | None = None,
        chunk_words: int = 2,
    ) -> None:
        self.models = list(models)
        self.api_key = api_key
        self.chunk_words = chunk_words
        self.requests: list[ChatRequest] = []
        self._queue: deque[Reply] = deque()
        self._listings: deque[Listing] = deque()
        self._responder: Responder | None = None
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------

    @property
    def model(self) -> str:
        """The first model served."""
        return self.models[0]

    @property
    def url(self) -> str:
        """The base URL, ``/v1`` included (what ``base_url=`` / ``$OPENAI_BASE_URL`` take)."""
        return f"{self.root}/v1"

    @property
    def root(self) -> str:
        """The server's address without ``/v1``."""
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> OpenAIServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the script -----------------------------------------------------------------

    def script(self, *replies: Reply | str) -> None:
        """Queue replies, answered in order (a string is a text reply)."""
        with self._lock:
            self._queue.extend(_as_reply(r) for r in replies)

    def script_models(self, *listings: Listing) -> None:
        """Queue answers to ``GET /v1/models``, in order; then the served models again."""
        with self._lock:
            self._listings.extend(listings)

    def _next_listing(self) -> Listing | None:
        with self._lock:
            return self._listings.popleft() if self._listings else None

    def respond(self, responder: Responder | None) -> None:
        """Answer every request the queue does not with ``responder(request)``."""
        self._responder = responder

    def reset(self) -> None:
        """Forget the script, the responder and the recorded requests."""
        with self._lock:
            self._queue.clear()
            self._listings.clear()
            self.requests.clear()
        self._responder = None

    @property
    def pending(self) -> int:
        """Scripted replies not yet sent."""
        return len(self._queue)

    def chat_requests(self) -> list[ChatRequest]:
        """The recorded ``/v1/chat/completions`` requests."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def _next(self, request: ChatRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.popleft()
        if self._responder is not None:
            return _as_reply(self._responder(request))
        # Not retried by the clients (400): the test sees its script ran out.
        return Reply(status=400, error="the test server has no scripted reply left")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client closing its pooled keep-alive connection is not an error.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _as_reply(reply: Reply | str) -> Reply:
    return Reply(content=reply) if isinstance(reply, str) else reply


class _Handler(BaseHTTPRequestHandler):
    owner: OpenAIServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        del format, args  # quiet: the tests read the recorded requests instead

    # -- routing --------------------------------------------------------------------

    def do_GET(self) -> None:
        try:
            self._authorize()
            if self.path.rstrip("/") != "/v1/models":
                raise _RequestError(404, f"Unknown path {self.path}", "not_found")
        except _RequestError as exc:
            self._error(exc.status, str(exc), exc.code)
            return
        with self.owner._lock:
            self.owner.requests.append(ChatRequest(path="/v1/models", body={}, headers={}))
        listing = self.owner._next_listing()
        if listing is not None:
            self._listing(listing)
            return
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "test"}
            for m in self.owner.models
        ]
        self._json(200, {"object": "list", "data": data})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        try:
            body = self._body()
            self._authorize()
            if path == "/v1/chat/completions":
                _check_chat(body)
            elif path == "/v1/completions":
                _check_completion(body)
            else:
                raise _RequestError(404, f"Unknown path {self.path}", "not_found")
            self._check_model(body)
        except _RequestError as exc:
            self._error(exc.status, str(exc), exc.code)
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = ChatRequest(path=path, body=body, headers=headers)
        reply = self.owner._next(request)
        time.sleep(reply.delay_s)
        if reply.status != 200:
            self._error(reply.status, reply.error, None)
            return
        chat = path == "/v1/chat/completions"
        if request.stream:
            self._stream(_stream_events(request, reply, chat, self.owner.chunk_words))
        else:
            self._json(200, _completion(request, reply, chat))

    # -- checks ---------------------------------------------------------------------

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"null")
        except json.JSONDecodeError as exc:
            raise _RequestError(400, f"We could not parse the JSON body: {exc}") from None
        if not isinstance(body, dict):
            raise _RequestError(400, "The request body must be a JSON object")
        return body

    def _authorize(self) -> None:
        auth = self.headers.get("Authorization", "")
        key = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else ""
        if not key or (self.owner.api_key is not None and key != self.owner.api_key):
            raise _RequestError(401, "Incorrect API key provided", "invalid_api_key")

    def _check_model(self, body: dict[str, Any]) -> None:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise _RequestError(400, "you must provide a model parameter")
        if model not in self.owner.models:
            raise _RequestError(
                404,
                f"The model `{model}` does not exist or you do not have access to it.",
                "model_not_found",
            )

    # -- writing --------------------------------------------------------------------

    def _json(
        self, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _listing(self, listing: Listing) -> None:
        time.sleep(listing.delay_s)
        if listing.raw is None and listing.body is None and listing.status != 200:
            self._error(listing.status, "scripted error", None)
            return
        data = listing.raw if listing.raw is not None else json.dumps(listing.body).encode()
        self.send_response(listing.status)
        self.send_header("Content-Type", listing.content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        # The client may have given up waiting: what a slow listing is for.
        with contextlib.suppress(ConnectionError):
            self.wfile.write(data)

    def _error(self, status: int, message: str, code: str | None) -> None:
        error = {
            "message": message,
            "type": _ERROR_TYPES.get(status, "api_error"),
            "param": None,
            "code": code,
        }
        # Transient errors say when to try again, so the clients' retries are quick.
        extra = {"retry-after-ms": "5"} if status == 429 or status >= 500 else {}
        self._json(status, {"error": error}, extra)

    def _stream(self, events: Iterator[str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in events:
            data = f"data: {event}\n\n".encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _check_chat(body: dict[str, Any]) -> None:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _RequestError(400, "'messages' must be a non-empty array")
    calls: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in {"system", "developer", "user", "assistant", "tool"}:
            raise _RequestError(400, f"Invalid value for 'messages[{i}].role': {role!r}")
        for call in message.get("tool_calls") or ():
            calls.add(call.get("id"))
        if role == "tool" and message.get("tool_call_id") not in calls:
            # OpenAI's rule: a tool message answers a preceding assistant tool call.
            raise _RequestError(
                400, f"messages[{i}]: a 'tool' message must answer a preceding 'tool_calls'"
            )
    _check_common(body)
    for tool in body.get("tools") or ():
        if tool.get("type") != "function" or not tool.get("function", {}).get("name"):
            raise _RequestError(400, "Invalid 'tools': each needs type 'function' and a name")


def _check_completion(body: dict[str, Any]) -> None:
    if not isinstance(body.get("prompt"), str | list):
        raise _RequestError(400, "'prompt' is required")
    _check_common(body)


def _check_common(body: dict[str, Any]) -> None:
    if body.get("n", 1) != 1:
        raise _RequestError(400, "this server answers n=1 only")
    options = body.get("stream_options")
    if options is not None and not body.get("stream"):
        raise _RequestError(400, "'stream_options' is only allowed when 'stream' is true")


def _usage(request: ChatRequest, reply: Reply) -> dict[str, int]:
    prompt = _tokens(request.text)
    generated = _tokens(reply.content or "") + sum(
        _tokens(json.dumps(c.arguments)) for c in reply.tool_calls
    )
    return {
        "prompt_tokens": prompt,
        "completion_tokens": generated,
        "total_tokens": prompt + generated,
    }


def _tool_call_json(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
    }


def _completion(request: ChatRequest, reply: Reply, chat: bool) -> dict[str, Any]:
    model = request.body["model"]
    if not chat:
        choice = {
            "index": 0,
            "text": reply.content or "",
            "logprobs": None,
            "finish_reason": reply.finish,
        }
        return {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": model,
            "choices": [choice],
            "usage": _usage(request, reply),
        }
    message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [_tool_call_json(c) for c in reply.tool_calls]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": _logprobs(request, reply),
                "finish_reason": reply.finish,
            }
        ],
        "usage": _usage(request, reply),
    }


def _logprobs(request: ChatRequest, reply: Reply) -> dict[str, Any] | None:
    """The first token's log-probabilities, as OpenAI sends them, where asked and scripted."""
    asked = request.top_logprobs
    if asked is None or not reply.logprobs:
        return None

    def entry(token: str, logprob: float) -> dict[str, Any]:
        return {"token": token, "logprob": logprob, "bytes": list(token.encode())}

    first = entry(*reply.logprobs[0])
    first["top_logprobs"] = [entry(*pair) for pair in reply.logprobs[:asked]]
    return {"content": [first], "refusal": None}


def _pieces(text: str, words: int) -> list[str]:
    """``text`` in pieces of ``words`` words, spaces kept, so the pieces join back to it."""
    parts = text.split(" ")
    return [
        " ".join(parts[i : i + words]) + (" " if i + words < len(parts) else "")
        for i in range(0, len(parts), words)
    ]


def _stream_events(request: ChatRequest, reply: Reply, chat: bool, words: int) -> Iterator[str]:
    """The SSE ``data:`` payloads of one streamed reply, ``[DONE]`` last."""
    ident = f"chatcmpl-{uuid.uuid4().hex}" if chat else f"cmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    model = request.body["model"]
    include_usage = bool((request.body.get("stream_options") or {}).get("include_usage"))

    def chunk(choices: list[dict[str, Any]], usage: dict[str, int] | None = None) -> str:
        payload: dict[str, Any] = {
            "id": ident,
            "object": "chat.completion.chunk" if chat else "text_completion",
            "created": created,
            "model": model,
            "choices": choices,
        }
        if include_usage:
            payload["usage"] = usage  # null on every chunk but the last, as OpenAI does
        return json.dumps(payload)

    def delta(d: dict[str, Any], finish: str | None = None) -> list[dict[str, Any]]:
        if not chat:
            return [
                {
                    "index": 0,
                    "text": d.get("content", ""),
                    "logprobs": None,
                    "finish_reason": finish,
                }
            ]
        return [{"index": 0, "delta": d, "logprobs": None, "finish_reason": finish}]

    if chat:
        yield chunk(delta({"role": "assistant", "content": "", "refusal": None}))
    for piece in _pieces(reply.content or "", words) if reply.content else ():
        yield chunk(delta({"content": piece}))
    for index, call in enumerate(reply.tool_calls):
        head = {
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        yield chunk(delta({"tool_calls": [head]}))
        arguments = json.dumps(call.arguments)
        for start in range(0, len(arguments), 8):
            part = {"index": index, "function": {"arguments": arguments[start : start + 8]}}
            yield chunk(delta({"tool_calls": [part]}))
    yield chunk(delta({}, reply.finish))
    if include_usage:
        yield chunk([], _usage(request, reply))
    yield "[DONE]"
