"""The HTTP client of a ``truthlens serve`` service, shared by its remote models.

:class:`ServiceClient` is the HTTP layer: one pooled ``httpx.Client`` for sync calls and
one ``httpx.AsyncClient`` per event loop for async ones, a timeout on every call, and
retries on transient failures only (the connection could not be made or was dropped,
or a gateway answered 502 / 503 / 504). Everything else fails at once with a typed
error: bad input the service itself refused is :class:`InvalidInputError`
(:class:`InputTooLargeError` for its 413), anything else the service (or a proxy in
front of it) does wrong is :class:`ServiceError` (:class:`ServiceTimeoutError` when it
is too slow).

``timeout_s`` bounds a whole call, retries included: httpx's own timeouts bound each
read, so a server trickling a byte at a time would otherwise hold a call for as long
as it likes. Sync calls run on the client's own event loop thread, so both forms share
one implementation and a cancelled call closes its connection.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import urlsplit

from .._errors import (
    InputTooLargeError,
    InvalidInputError,
    ServiceError,
    ServiceTimeoutError,
    TruthLensError,
)
from .._json import JSONFormatError, loads_strict
from .._optional import require
from .._quoting import quoted, redacted_url

if TYPE_CHECKING:
    import httpx

__all__ = [
    "OnError",
    "ServiceClient",
    "base_url",
    "is_service_url",
    "reply_rows",
    "shared_client",
    "unit_value",
]

OnError = Literal["raise", "unverifiable"]

_T = TypeVar("_T")

# Gateways and proxies answer these while a replica restarts or is overloaded: retrying
# is safe because the request did not reach the model. 500 is a bug: not retried.
_TRANSIENT_STATUS = frozenset({502, 503, 504})
# The service's own answer to bad input (invalid JSON, too large, failed validation).
_INPUT_STATUS = frozenset({400, 413, 422})


def is_service_url(model: str) -> bool:
    """Whether ``model`` names a TruthLens service rather than a model."""
    return model.startswith(("http://", "https://"))


class _TransientError(Exception):
    """A response worth retrying (502 / 503 / 504)."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"HTTP {response.status_code}")
        self.response = response


class ServiceClient:
    """Pooled sync and async HTTP client of one TruthLens service.

    Args:
        url: Base URL of the service, e.g. ``"http://127.0.0.1:8000"``.
        timeout_s: Seconds a whole call may take (connecting, sending, waiting, reading
            and any retries together).
        retries: Extra attempts after a transient failure (0 disables retries).
        max_connections: Connections kept open per pool.

    Raises:
        InvalidInputError: If the URL is not an http(s) URL with a host.
        MissingDependencyError: If ``httpx`` is not installed (the ``serve`` extra).
    """

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 30.0,
        retries: int = 2,
        max_connections: int = 64,
    ) -> None:
        self._httpx = require("httpx", extra="serve", feature="The TruthLens service client")
        self.url = base_url(url)
        if timeout_s <= 0:
            raise InvalidInputError(f"timeout_s must be positive, got {timeout_s}")
        if retries < 0:
            raise InvalidInputError(f"retries must be 0 or more, got {retries}")
        self.timeout_s = float(timeout_s)
        self.retries = int(retries)
        self._limits = self._httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        self._lock = threading.Lock()
        # An AsyncClient's connections belong to the loop that opened them.
        self._async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]
        self._async = weakref.WeakKeyDictionary()
        # Sync calls: the async implementation on a loop of this client's own.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # -- public calls -------------------------------------------------------------------

    def get(self, path: str) -> Any:
        """``GET path`` and return its JSON body."""
        return self._sync_run(self.aget(path))

    def post(self, path: str, payload: Any) -> Any:
        """``POST path`` with a JSON body and return the JSON reply."""
        return self._sync_run(self.apost(path, payload))

    async def aget(self, path: str) -> Any:
        """Async :meth:`get`."""
        return await self._acall(lambda: self._async_client().get(path), path)

    async def apost(self, path: str, payload: Any) -> Any:
        """Async :meth:`post`."""
        return await self._acall(lambda: self._async_client().post(path, json=payload), path)

    def close(self) -> None:
        """Close the sync calls' pool and loop (async pools close with :meth:`aclose`)."""
        with self._lock:
            loop, self._loop = self._loop, None
            thread, self._thread = self._thread, None
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self.aclose(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        if not thread.is_alive():
            loop.close()

    async def aclose(self) -> None:
        """Close the current event loop's async pool."""
        client = self._async.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    # -- plumbing -----------------------------------------------------------------------

    def _sync_run(self, call: Coroutine[Any, Any, _T]) -> _T:
        """Run ``call`` on this client's loop thread and wait for it."""
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name="truthlens-service-client", daemon=True
                )
                self._thread.start()
            loop = self._loop
        # The call ends itself at its deadline; the margin only guards against a loop
        # that no longer runs.
        return asyncio.run_coroutine_threadsafe(call, loop).result(timeout=self.timeout_s + 30)

    def _async_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._async.get(loop)
        if client is None:
            client = self._httpx.AsyncClient(
                base_url=self.url, timeout=self.timeout_s, limits=self._limits
            )
            self._async[loop] = client
        return client

    def _retry_settings(self) -> dict[str, Any]:
        import tenacity

        return {
            "stop": tenacity.stop_after_attempt(self.retries + 1),
            "wait": tenacity.wait_exponential(multiplier=0.1, max=2.0),
            "retry": tenacity.retry_if_exception(self._is_transient),
            "reraise": True,
        }

    def _aretrying(self) -> Any:
        import tenacity

        return tenacity.AsyncRetrying(**self._retry_settings())

    def _is_transient(self, exc: BaseException) -> bool:
        httpx = self._httpx
        if isinstance(exc, _TransientError):
            return True
        # A read timeout means the service has the request and is slow: sending it
        # again only adds load. Failures before the request arrived are retried.
        if isinstance(exc, httpx.ReadTimeout | httpx.WriteTimeout | httpx.PoolTimeout):
            return False
        return isinstance(exc, httpx.TransportError)

    async def _acall(self, send: Callable[[], Awaitable[httpx.Response]], path: str) -> Any:
        async def attempt() -> httpx.Response:
            response = await send()
            if response.status_code in _TRANSIENT_STATUS:
                raise _TransientError(response)
            return response

        try:
            # One deadline for the whole call: the retries and every byte of the reply.
            async with asyncio.timeout(self.timeout_s):
                response: httpx.Response = await self._aretrying()(attempt)
        except Exception as exc:
            raise self._failure(exc, path) from exc
        return self._json(response, path)

    def _failure(self, exc: Exception, path: str) -> TruthLensError:
        httpx = self._httpx
        where = f"{redacted_url(self.url)}{path}"
        if isinstance(exc, httpx.TimeoutException | TimeoutError):
            return ServiceTimeoutError(
                f"the TruthLens service at {where} did not answer within {self.timeout_s:g} s"
            )
        if isinstance(exc, _TransientError):
            return ServiceError(
                f"the TruthLens service at {where} is unavailable "
                f"({exc.response.status_code} after {self.retries + 1} attempt(s))"
            )
        if isinstance(exc, httpx.HTTPError):
            return ServiceError(
                f"cannot reach the TruthLens service at {where}: "
                f"{type(exc).__name__}: {quoted(exc)}"
            )
        if isinstance(exc, TruthLensError):
            return exc
        return ServiceError(f"call to {where} failed: {type(exc).__name__}: {quoted(exc)}")

    def _json(self, response: httpx.Response, path: str) -> Any:
        where = f"{redacted_url(self.url)}{path}"
        status = response.status_code
        refusal = _refusal(response) if status in _INPUT_STATUS else None
        if refusal is not None:
            message = f"the service rejected the request: {quoted(refusal['message'])}"
            if status == 413:
                raise InputTooLargeError(
                    message,
                    limit=_int_or_none(refusal, "limit"),
                    size=_int_or_none(refusal, "size"),
                )
            raise InvalidInputError(message)
        if status >= 400:
            # Also a 4xx that is not the service's own refusal (a proxy's 413 page): the
            # call failed, and ``on_error`` decides what that means.
            raise ServiceError(f"{where} answered {status}: {_message(response)}")
        try:
            return loads_strict(response.content)
        except JSONFormatError as exc:
            raise ServiceError(
                f"{where} answered something that is not JSON ({exc}; "
                f"{quoted(response.text, limit=80)!r}); is this a TruthLens service?"
            ) from None


def base_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInputError(
            f"not a service URL: {redacted_url(url)!r}; expected http://host:port"
        )
    return url.rstrip("/")


def _refusal(response: httpx.Response) -> dict[str, Any] | None:
    """The service's own error body (``{"error": ..., "message": ...}``), or ``None``."""
    try:
        body = loads_strict(response.content)
    except JSONFormatError:
        return None
    if not isinstance(body, dict):
        return None
    fields = (body.get("error"), body.get("message"))
    return body if all(isinstance(f, str) for f in fields) else None


def _int_or_none(body: dict[str, Any], key: str) -> int | None:
    value = body.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _message(response: httpx.Response) -> str:
    try:
        body = loads_strict(response.content)
    except JSONFormatError:
        return quoted(response.text or response.reason_phrase, limit=200)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return quoted(body["message"], limit=200)
    return quoted(body, limit=200)


_SHARED: dict[tuple[str, float, int], ServiceClient] = {}
_SHARED_LOCK = threading.Lock()


def shared_client(url: str, *, timeout_s: float = 30.0, retries: int = 2) -> ServiceClient:
    """One :class:`ServiceClient` per (url, timeout, retries) in this process.

    The engine's detector, NLI explainer and prompt classifier share its pools.
    """
    key = (base_url(url), float(timeout_s), int(retries))
    with _SHARED_LOCK:
        client = _SHARED.get(key)
        if client is None:
            client = ServiceClient(key[0], timeout_s=key[1], retries=key[2])
            _SHARED[key] = client
        return client


def reply_rows(reply: Any, key: str, count: int, where: str) -> list[Any]:
    """The list ``reply[key]``, which must hold ``count`` rows, or :class:`ServiceError`."""
    rows = reply.get(key) if isinstance(reply, dict) else None
    if not isinstance(rows, list) or len(rows) != count:
        raise ServiceError(f"malformed reply from {where}: expected {count} {key}")
    return rows


def unit_value(value: Any, where: str) -> float:
    """A confidence from a reply, which must be a number in [0, 1], or :class:`ServiceError`."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ServiceError(f"malformed reply from {where}: confidence {value!r}")
    return float(value)
