"""A client for any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama, ...).

Settings come from the arguments, else from the environment:

- ``OPENAI_API_KEY``: the API key. Servers without authentication (vLLM, Ollama) need
  none: when a base URL is set and no key is given, a placeholder key is sent.
- ``OPENAI_BASE_URL``: the server, e.g. ``http://localhost:11434/v1`` for Ollama or
  ``http://localhost:8000/v1`` for vLLM. Default: OpenAI's API. A URL with no path
  (``http://localhost:8000``) gets ``/v1``, where every OpenAI-compatible server
  answers; any other path is kept as given.
- ``TRUTHLENS_LLM_MODEL``: the model name. Default: ``gpt-4o-mini`` on OpenAI's API; on
  another server, the one model its ``/models`` lists (asked once, at the first call,
  with the calls' own timeout and retries). A server listing several models or none,
  an id that is not a usable name (null, blank, control characters, over 512
  characters) or an answer that is not a model list is a :class:`ConfigError` naming
  the variable: sending OpenAI's model name to a server that does not serve it would
  only fail later, with a 404.

Error messages show the base URL without its credentials and quote a server's text
bounded, with control characters escaped (``core/_quoting.py``).

The SDK's own retries are switched off; this client retries transient failures only
(rate limits, timeouts, connection errors, 5xx) with exponential backoff and full
jitter, and fails at once, with :class:`LLMError`, on everything else (bad key, bad
request, unknown model).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import time
import weakref
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from .._errors import ConfigError, InvalidInputError, LLMError, LLMTimeoutError
from .._json import loads_strict
from .._quoting import printable, quoted, redacted_url
from ._base import (
    BaseLLM,
    CompletionRequest,
    LLMResponse,
    TokenUsage,
    ensure_text,
)
from ._retry import RetryPolicy, attempts_made, log_retry_with_message

if TYPE_CHECKING:
    import httpx
    from openai import AsyncOpenAI, OpenAI

__all__ = [
    "DEFAULT_OPENAI_MODEL",
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "OpenAICompatibleLLM",
    "is_transient_error",
]


ENV_API_KEY = "OPENAI_API_KEY"
ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_MODEL = "TRUTHLENS_LLM_MODEL"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
# Sent when a self-hosted server (vLLM, Ollama) needs no key: the SDK refuses to start
# without one.
_PLACEHOLDER_KEY = "not-needed"
# Status codes worth another try besides 429 and 5xx: request timeout.
_TRANSIENT_STATUS = frozenset({408, 429})
# Shown as the model's name until a custom server's /models has named it.
_ASK_SERVER = "(the server's only model)"
# What a user does when the server cannot name its one model.
_NAME_IT = f"pass model= or set ${ENV_MODEL}"
# The longest model id taken from a server's list: Hugging Face ids and local paths fit.
_MAX_MODEL_ID = 512

_log = logging.getLogger(__name__)


class OpenAICompatibleLLM(BaseLLM):
    """Chat completions from an OpenAI-compatible server, with retries on transient errors.

    Example:
        >>> llm = OpenAICompatibleLLM(base_url="http://localhost:11434/v1", model="llama3.2")
        >>> llm.complete("Say hi").text  # doctest: +SKIP

    Attributes:
        name: ``"openai-compatible"``.
        model: The model asked for (on a server that was not told, the one its
            ``/models`` lists, once the first call has asked).
        base_url: The server's base URL, or ``None`` for OpenAI's default.
    """

    name = "openai-compatible"
    gives_logprobs = True

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_attempts: int = 4,
        wait_initial: float = 0.5,
        wait_max: float = 20.0,
        default_max_tokens: int | None = None,
        default_temperature: float | None = None,
        max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens",
        http_client: Any | None = None,
        async_http_client: Any | None = None,
    ) -> None:
        """Configure the client; no request is sent until the first call.

        Args:
            model: Model name; default ``$TRUTHLENS_LLM_MODEL``, else ``gpt-4o-mini``
                on OpenAI's API and the server's only model elsewhere.
            api_key: API key; default ``$OPENAI_API_KEY``.
            base_url: Server URL; default ``$OPENAI_BASE_URL``, else OpenAI's API.
                ``/v1`` is added to a URL without a path.
            timeout: Seconds one attempt may take.
            max_attempts: Attempts per call, the first included (1 disables retries).
            wait_initial: Base of the exponential backoff between attempts, in seconds.
            wait_max: Longest wait between two attempts, in seconds.
            default_max_tokens: ``max_tokens`` used when a call gives none.
            default_temperature: ``temperature`` used when a call gives none.
            max_tokens_param: Request field carrying the token limit. Newer OpenAI
                reasoning models only accept ``"max_completion_tokens"``; vLLM and
                Ollama understand ``"max_tokens"``.
            http_client: An ``httpx.Client`` for the sync SDK client (proxies, tests).
            async_http_client: An ``httpx.AsyncClient`` for the async SDK client.

        Raises:
            ConfigError: If no API key is set for OpenAI's own API, the base URL is
                not an http(s) URL, or a number is out of range.
        """
        url = base_url or os.environ.get(ENV_BASE_URL) or None
        self.base_url = None if url is None else _normalised_url(url)
        self._model = _configured_model(model, self.base_url)
        self._api_key = _api_key(api_key, self.base_url)
        _check_numbers(timeout, max_attempts, wait_initial, wait_max)
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.wait_initial = wait_initial
        self.wait_max = wait_max
        self.default_max_tokens = default_max_tokens
        self.default_temperature = default_temperature
        self.max_tokens_param = max_tokens_param
        self._http_client = http_client
        self._async_http_client = async_http_client
        self._client: OpenAI | None = None
        # One async client per event loop: a pooled connection belongs to the loop that
        # opened it, and a second asyncio.run() would fail on the first loop's.
        self._aclients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncOpenAI]
        self._aclients = weakref.WeakKeyDictionary()

    @property
    def model(self) -> str:  # type: ignore[override]  # read-only: resolved once
        """The model asked for (see the class attributes)."""
        return self._model or _ASK_SERVER

    # -- clients ---------------------------------------------------------------------

    def _sync_client(self) -> OpenAI:
        if self._client is None:
            from openai import OpenAI

            self._client = OpenAI(**self._client_kwargs(self._http_client))
        return self._client

    def _async_client(self) -> AsyncOpenAI:
        loop = asyncio.get_running_loop()
        client = self._aclients.get(loop)
        if client is None:
            from openai import AsyncOpenAI

            client = AsyncOpenAI(**self._client_kwargs(self._async_http_client))
            self._aclients[loop] = client
        return client

    def _client_kwargs(self, http_client: Any | None) -> dict[str, Any]:
        # Retries are ours (tenacity, with logging); the SDK's own would multiply them.
        # Every request the client sends (a listing too) is bounded by the timeout.
        kwargs: dict[str, Any] = {
            "api_key": self._api_key,
            "max_retries": 0,
            "timeout": self.timeout,
        }
        if self.base_url is not None:
            kwargs["base_url"] = self.base_url
        if http_client is not None:
            kwargs["http_client"] = http_client
        return kwargs

    # -- calls -----------------------------------------------------------------------

    def _complete(self, request: CompletionRequest) -> LLMResponse:
        from tenacity import Retrying

        client = self._sync_client()
        if self._model is None:
            self._model = self._discover(client)
        payload = self._payload(request)
        started = time.perf_counter()
        retrying = Retrying(**self._retry_kwargs())
        try:
            completion = retrying(client.chat.completions.create, **payload)
        except Exception as exc:
            raise self._translate(exc, attempts_made(retrying)) from exc
        return self._response(completion, started, attempts_made(retrying))

    async def _acomplete(self, request: CompletionRequest) -> LLMResponse:
        from tenacity import AsyncRetrying

        client = self._async_client()
        if self._model is None:
            self._model = await self._adiscover(client)
        payload = self._payload(request)
        started = time.perf_counter()
        retrying = AsyncRetrying(**self._retry_kwargs())

        # A plain coroutine function: tenacity does not see through the SDK's decorators
        # and would otherwise "call" the method without awaiting it.
        async def attempt() -> Any:
            return await client.chat.completions.create(**payload)

        try:
            completion: Any = await retrying(attempt)
        except Exception as exc:
            raise self._translate(exc, attempts_made(retrying)) from exc
        return self._response(completion, started, attempts_made(retrying))

    # -- discovery: the one model a server serves ---------------------------------------

    def _discover(self, client: OpenAI) -> str:
        """Ask ``/models`` under the calls' own timeout and retries; the one model it lists."""
        from tenacity import Retrying

        retrying = Retrying(**self._retry_kwargs())
        try:
            raw = retrying(client.models.with_raw_response.list, timeout=self.timeout)
        except Exception as exc:
            raise self._unlisted(exc, attempts_made(retrying)) from exc
        return self._only_model(raw.http_response)

    async def _adiscover(self, client: AsyncOpenAI) -> str:
        """Async :meth:`_discover`."""
        from tenacity import AsyncRetrying

        retrying = AsyncRetrying(**self._retry_kwargs())

        async def attempt() -> Any:
            return await client.models.with_raw_response.list(timeout=self.timeout)

        try:
            raw: Any = await retrying(attempt)
        except Exception as exc:
            raise self._unlisted(exc, attempts_made(retrying)) from exc
        return self._only_model(raw.http_response)

    def _unlisted(self, exc: Exception, attempts: int) -> Exception:
        """The error for a server that was not told the model and could not list its own.

        A transient failure that outlived the retries (timeout, connection, 429, 5xx) is
        the error a chat call would have raised; a refusal (401, 404, ...) means this
        server cannot name its model, which only configuration can fix.
        """
        import openai

        if is_transient_error(exc) or not isinstance(exc, openai.APIStatusError):
            return self._translate(exc, attempts, what="listing its models")
        return ConfigError(
            f"no model name given and the server at {redacted_url(self.base_url)} could not "
            f"list its models ({type(exc).__name__}: {_detail(exc)}): {_NAME_IT}"
        )

    def _only_model(self, response: httpx.Response) -> str:
        """The one model a server's ``/models`` answer lists, for a server not told which.

        Raises:
            ConfigError: If the answer is not a model list (``{"data": [{"id": ...}]}``),
                an id is not a usable model name, or it lists several models or none.
        """
        where = f"the server at {redacted_url(self.base_url)}"
        names = _listed_ids(response, where)
        if len(set(names)) != 1:
            offered = quoted(", ".join(sorted(set(names))))
            raise ConfigError(
                f"no model name given and {where} serves {len(set(names))} models "
                f"({offered or 'none'}): {_NAME_IT}"
            )
        _log.info("%s serves one model, %r: using it", where, names[0])
        return names[0]

    def _payload(self, request: CompletionRequest) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "timeout": self.timeout,
        }
        options = request.options(
            max_tokens=self.default_max_tokens, temperature=self.default_temperature
        )
        if "max_tokens" in options:
            payload[self.max_tokens_param] = options.pop("max_tokens")
        payload.update(options)
        if request.stop:
            payload["stop"] = request.stop
        if request.top_logprobs is not None:
            payload["logprobs"] = True
            payload["top_logprobs"] = request.top_logprobs
        return payload

    def _retry_kwargs(self) -> dict[str, Any]:
        policy = RetryPolicy(self.max_attempts, self.wait_initial, self.wait_max)
        # The SDK's own error types say what is transient; the log names the error.
        return policy.kwargs(transient=is_transient_error, before_sleep=log_retry_with_message)

    def _response(self, completion: Any, started: float, attempts: int) -> LLMResponse:
        latency_ms = (time.perf_counter() - started) * 1000.0
        choices = getattr(completion, "choices", None) or []
        if not choices:
            raise LLMError(f"model {quoted(self.model, limit=80)!r} returned no choices")
        choice = choices[0]
        message = getattr(choice, "message", None)
        text = ensure_text(getattr(message, "content", None), model=self.model)
        usage = None
        raw_usage = getattr(completion, "usage", None)
        if raw_usage is not None:
            prompt = int(raw_usage.prompt_tokens or 0)
            generated = int(raw_usage.completion_tokens or 0)
            usage = TokenUsage(
                prompt_tokens=prompt,
                completion_tokens=generated,
                total_tokens=int(raw_usage.total_tokens or prompt + generated),
            )
        return LLMResponse(
            text=text,
            model=str(getattr(completion, "model", None) or self.model),
            usage=usage,
            latency_ms=latency_ms,
            finish_reason=getattr(choice, "finish_reason", None),
            attempts=attempts,
            first_token_logprobs=_first_token_logprobs(choice),
        )

    def _translate(self, exc: Exception, attempts: int, *, what: str | None = None) -> Exception:
        """Map an SDK error onto the package's errors, with a message that says what to do.

        Args:
            exc: The SDK's error.
            attempts: Attempts made.
            what: What the call was doing, when not a completion (``"listing its models"``).
        """
        import openai

        server = redacted_url(self.base_url or "https://api.openai.com/v1")
        if what is None:
            where = f"model {quoted(self.model, limit=80)!r} at {server}"
        else:
            where = f"the server at {server}, {what},"
        tries = f" after {attempts} attempt{'s' if attempts != 1 else ''}"
        if isinstance(exc, openai.APITimeoutError):
            return LLMTimeoutError(f"{where} did not answer within {self.timeout}s{tries}")
        if isinstance(exc, openai.AuthenticationError):
            return LLMError(f"{where} rejected the API key (401): check ${ENV_API_KEY}")
        if isinstance(exc, openai.PermissionDeniedError):
            return LLMError(f"{where} denied access (403): {_detail(exc)}")
        if isinstance(exc, openai.NotFoundError):
            return LLMError(f"{where} was not found (404): check the model name and base URL")
        if isinstance(exc, openai.APIStatusError):
            kind = "transient error" if is_transient_error(exc) else "error"
            return LLMError(f"{where} failed with {kind} {exc.status_code}{tries}: {_detail(exc)}")
        if isinstance(exc, openai.APIConnectionError):
            return LLMError(f"could not connect to {where}{tries}: {quoted(exc)}")
        if isinstance(exc, openai.OpenAIError):
            return LLMError(f"{where} failed: {quoted(exc)}")
        if isinstance(exc, LLMError | InvalidInputError):
            return exc
        return LLMError(f"{where} failed unexpectedly: {type(exc).__name__}: {quoted(exc)}")


def is_transient_error(exc: BaseException) -> bool:
    """Whether an OpenAI SDK error is worth retrying.

    Rate limits, timeouts, connection failures and server errors (5xx) are; bad keys,
    bad requests and unknown models are not.

    Args:
        exc: The exception raised by the SDK.

    Returns:
        ``True`` for transient failures.
    """
    import openai

    if isinstance(exc, openai.APIConnectionError):  # timeouts included
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code >= 500 or exc.status_code in _TRANSIENT_STATUS
    return False


def _normalised_url(url: str) -> str:
    """An OpenAI-compatible base URL as the SDK wants it: ``/v1`` added to a bare host.

    The SDK appends ``/chat/completions`` to the base URL; servers answer under
    ``/v1``, so ``http://localhost:8000`` becomes ``http://localhost:8000/v1``. A URL
    with a path is kept (trailing slash dropped): some gateways serve the API under
    their own prefix.

    Args:
        url: The URL as the user wrote it.

    Returns:
        The base URL.

    Raises:
        ConfigError: If ``url`` is not an http(s) URL with a host.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"base URL {redacted_url(url)!r} is not an http(s) URL "
            f"(e.g. http://localhost:8000/v1; set ${ENV_BASE_URL} or pass base_url=)"
        )
    path = parts.path.rstrip("/") or "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def _configured_model(model: str | None, base_url: str | None) -> str | None:
    """The model name given, OpenAI's default on OpenAI's API, else ``None`` (ask the server)."""
    name = model or os.environ.get(ENV_MODEL)
    if name:
        return name
    if base_url is None or urlsplit(base_url).hostname == "api.openai.com":
        return DEFAULT_OPENAI_MODEL
    return None


def _api_key(api_key: str | None, base_url: str | None) -> str:
    key = api_key or os.environ.get(ENV_API_KEY)
    if key:
        return key
    if base_url is None:
        raise ConfigError(
            f"OpenAICompatibleLLM needs an API key: pass api_key= or set ${ENV_API_KEY} "
            f"(or set ${ENV_BASE_URL} for a self-hosted server such as vLLM or Ollama)"
        )
    # Self-hosted servers ignore the key, but the SDK refuses to start without one.
    return _PLACEHOLDER_KEY


def _check_numbers(timeout: float, max_attempts: int, wait_initial: float, wait_max: float) -> None:
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise ConfigError(f"timeout must be a number of seconds, got {timeout!r}")
    if not math.isfinite(timeout) or timeout <= 0:  # NaN passed `<= 0`
        raise ConfigError(f"timeout must be positive and finite, got {timeout}")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise ConfigError(f"max_attempts must be a whole number from 1, got {max_attempts!r}")
    if wait_initial < 0 or wait_max < 0:
        raise ConfigError("retry waits must not be negative")


def _detail(exc: Any) -> str:
    """The server's message in an SDK error, as a message may quote it."""
    return quoted(getattr(exc, "message", None) or str(exc))


def _listed_ids(response: httpx.Response, where: str) -> list[str]:
    """The model ids of a ``/models`` answer (``{"data": [{"id": "name"}, ...]}``).

    Raises:
        ConfigError: If the answer is not JSON, has no ``data`` list, or an entry has no
            usable id: a string, not blank, without control or format characters, at
            most :data:`_MAX_MODEL_ID` characters.
    """
    try:
        body = loads_strict(response.content)
    except InvalidInputError as exc:
        raise ConfigError(
            f"no model name given and {where} answered /models with something that is not "
            f"JSON ({exc}; {quoted(response.text, limit=120)!r}): {_NAME_IT}"
        ) from None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        shown = quoted(json.dumps(body, ensure_ascii=False), limit=120)
        raise ConfigError(
            f"no model name given and {where} answered /models with {shown!r}, not a model "
            f'list ({{"data": [{{"id": ...}}]}}): {_NAME_IT}'
        )
    ids: list[str] = []
    for index, entry in enumerate(data):
        ident = entry.get("id") if isinstance(entry, dict) else None
        problem = _id_problem(ident)
        if problem is not None:
            shown = quoted(json.dumps(entry, ensure_ascii=False), limit=120)
            raise ConfigError(
                f"no model name given and {where} lists a model whose id {problem} "
                f"(entry {index}: {shown}): {_NAME_IT}"
            )
        ids.append(str(ident))
    return ids


def _id_problem(ident: object) -> str | None:
    """Why ``ident`` cannot be sent as a model name, or ``None`` when it can."""
    if not isinstance(ident, str):
        return "is missing or not text"
    if not ident.strip():
        return "is blank"
    if len(ident) > _MAX_MODEL_ID:
        return f"is {len(ident)} characters long (at most {_MAX_MODEL_ID})"
    if ident != ident.strip() or not printable(ident):
        return "holds spaces at its ends or characters that do not print"
    return None


def _first_token_logprobs(choice: Any) -> dict[str, float] | None:
    """The first generated token's alternatives, ``{token: logprob}``, where sent."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    first = content[0]
    alternatives = getattr(first, "top_logprobs", None) or [first]
    out: dict[str, float] = {}
    for alternative in alternatives:
        token, logprob = getattr(alternative, "token", None), getattr(alternative, "logprob", None)
        if isinstance(token, str) and isinstance(logprob, int | float) and math.isfinite(logprob):
            out.setdefault(token, float(logprob))
    return out or None
