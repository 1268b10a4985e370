"""A worker: the process that imports the learner's module and runs each call the grader sends.

Forked by the zygote (`_zygote`), it serves `load` and `call` messages on its socket until the grader
closes it. The learner's client reaches the grader's endpoint over loopback (`_loopback`); what the
learner's code returns or raises goes back as data (`boundary._marshal`), never as objects.
"""

from __future__ import annotations

import asyncio
import inspect
import socket
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import httpx

from ... import skyl
from ...engine._scenario import Call
from ...skyl import _collect
from ...wire import get_wire_format
from ..boundary._endpoint import TOOLS_PATH
from ..boundary._marshal import TOOL_ERRORS, body_digest, error_to_data, from_data, to_data
from ..boundary._protocol import BrokenFrame, FrameBuffer, receive, send
from ._awaited import HandedOut
from ._load import ImplementationError, load_implementation
from ._loopback import AsyncConnections, Connections, DirectAsyncClient, DirectClient

__all__ = ["OFF_LIMITS", "Worker"]

OFF_LIMITS = (
    "This challenge asks you to rebuild the turn yourself: skyl.collect_stream and skyl.StreamCollector are "
    "off limits here. Write your own collect_stream(stream)."
)
_DEPTH = 1000
"""The recursion limit the worker's own code needs to answer, whatever the learner's code set."""


class _OffLimits(Exception):
    """Raised by skyl's collector while a challenge takes it away."""


class _OffLimitsCollector:
    def __init__(self, *args: object, **kwargs: object) -> None:
        raise _OffLimits(OFF_LIMITS)


class Worker:
    """Serves the grader's messages on `connection`: `load` the learner's module, then `call`s into it."""

    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection
        self.module: ModuleType | None = None
        self.source = Path()
        self.taken_away = False
        """skyl's stream collector is off limits here for good (challenges 05 and 09)."""
        self._connections: dict[str, Connections] = {}

    def serve(self) -> None:
        buffer, pending = FrameBuffer(), list[dict[str, Any]]()
        while True:
            message = receive(self.connection, buffer, pending)
            if message is None:
                return
            if message["op"] == "load":
                reply = self._load(message)
            else:
                reply = self._call(message)
            sys.setrecursionlimit(max(sys.getrecursionlimit(), _DEPTH))
            try:
                send(self.connection, reply)
            except (BrokenFrame, ValueError, TypeError, RecursionError) as exc:
                error = {"type": "ValueError", "module": "builtins", "message": f"the result could not be sent: {exc}"}
                send(self.connection, {"op": "result", "error": error})

    def _load(self, message: dict[str, Any]) -> dict[str, Any]:
        self.source = Path(message["path"])
        try:
            source = message.get("source") if isinstance(message.get("source"), str) else None
            if message.get("take_away") is True and not self.taken_away:
                _take_away_collector()  # for the worker's life: a module cannot keep skyl's at import
                self.taken_away = True
            self.module = load_implementation(self.source, message["shown_as"], source)
        except ImplementationError as error:
            return {"op": "load_error", "message": str(error)}
        functions = {
            name: inspect.iscoroutinefunction(value)
            for name, value in vars(self.module).items()
            if isinstance(name, str) and callable(value)
        }
        return {"op": "loaded", "functions": functions}

    def _call(self, message: dict[str, Any]) -> dict[str, Any]:
        call = _Call(self, message)
        return call.run()

    def connections(self, base: str, unix: str | None = None) -> Connections:
        key = unix or urlsplit(base).netloc
        if key not in self._connections:
            self._connections[key] = Connections(base, unix)
        return self._connections[key]


class _Call:
    """One call of a learner's function, with the arguments the grader described."""

    def __init__(self, worker: Worker, message: dict[str, Any]) -> None:
        self.worker = worker
        self.message = message
        self.base: str = message["base"]
        self.provider: str = message["provider"]
        self.asynchronous: bool = message["mode"] == "async"
        self.token_path = urlsplit(self.base).path
        unix = message.get("socket") if isinstance(message.get("socket"), str) else None
        self.connections = worker.connections(self.base, unix)
        self.async_connections = AsyncConnections(self.base, unix) if self.asynchronous else None
        self.tool_errors: list[BaseException] = []
        self.handed_out = HandedOut()
        """The coroutines of `run`; the async client keeps its own."""
        self.request: skyl.Request | None = None
        self.stream: _WatchedStream | None = None
        self.clients: list[skyl.Client] = []
        self.tools: dict[str, Any] = {}
        self.encoded: dict[int, tuple[Any, int]] = {}
        self.known: list[Any] = []
        """Each distinct message the clients encoded, as data, once: `sent` and `messages` name them by
        index, since a loop resends its whole history every round (which, spelled out, was most of a
        reply's bytes, encoded here and decoded by the grader)."""
        self.sent: list[dict[str, Any]] = []
        """What the clients encoded, sent with the answer: the grader reads it only after the call."""
        self.async_clients: list[_NotingAsyncClient] = []

    def run(self) -> dict[str, Any]:
        function = getattr(self.worker.module, self.message["function"])
        reply: dict[str, Any] = {"op": "result"}
        taking = self.message.get("take_away") and not self.worker.taken_away
        restore = _take_away_collector() if taking else None
        try:
            args = [self._argument(spec) for spec in self.message["args"]]
            value = function(*args)
            if inspect.isawaitable(value):
                value = asyncio.run(self._awaited(value))
            reply["value"] = to_data(value)
        except BaseException as error:  # noqa: BLE001 - everything goes back to the grader as data
            reply["error"] = error_to_data(error, self.worker.source, self._tag)
        finally:
            if restore is not None:
                restore()
            for client in self.clients:
                client.close()
        sys.setrecursionlimit(max(sys.getrecursionlimit(), _DEPTH))
        if self.request is not None:
            reply["messages"] = self._final_messages(self.request.messages)
        reply["known"] = self.known
        reply["sent"] = self.sent
        reply["never_awaited"] = self.handed_out.close_unawaited()
        reply["client_never_awaited"] = sum(client.handed_out.close_unawaited() for client in self.async_clients)
        if self.stream is not None:
            reply["stream_finished"] = self.stream.finished
        return reply

    async def _awaited(self, value: Any) -> Any:
        try:
            return await value
        finally:
            if self.async_connections is not None:
                await self.async_connections.close()

    def _tag(self, error: BaseException) -> dict[str, bool]:
        return {
            "tool": any(error is failure for failure in self.tool_errors),
            "not_implemented": isinstance(error, NotImplementedError),
            "off_limits": isinstance(error, _OffLimits),
        }

    # -- the arguments --------------------------------------------------------------------------------

    def _argument(self, spec: dict[str, Any]) -> Any:
        kind = spec["kind"]
        if kind == "client":
            return self._client()
        if kind == "run":
            if self.asynchronous:
                return self._async_run
            if spec["tools"] is None:  # the grader answers (and counts) every run
                return self._run_remote
            self.tools = spec["tools"]
            return self._run
        if kind == "request":
            self.request = from_data(spec["value"])
            return self.request
        if kind == "stream":
            request = from_data(spec["value"])
            client = self._sync_client()
            self.stream = _WatchedStream(client.stream(request))
            return self.stream
        return from_data(spec["value"])

    def _base_url(self) -> str:
        return self.base + urlsplit(get_wire_format(self.provider).base_url).path

    def _client(self) -> skyl.Client | skyl.AsyncClient:
        if self.asynchronous:
            assert self.async_connections is not None
            client = _NotingAsyncClient(
                self.provider, base_url=self._base_url(), transport=self.async_connections.transport(), note=self._sent
            )
            self.async_clients.append(client)
            return client
        return self._sync_client()

    def _sync_client(self) -> skyl.Client:
        client = _NotingClient(
            self.provider, base_url=self._base_url(), transport=self.connections.transport(), note=self._sent
        )
        self.clients.append(client)
        return client

    def _sent(self, body: bytes, request: skyl.Request) -> None:
        """Note which messages the client encoded into `body` (named by its digest), for the grader."""
        messages = [self._message_index(message) for message in request.messages]
        self.sent.append({"digest": body_digest(body), "messages": messages})

    def _message_index(self, message: Any) -> int:
        """A message's place in `known`, described once per message object."""
        known = self.encoded.get(id(message))
        if known is None or known[0] is not message:
            return self._remember(message, to_data(message))
        return known[1]

    def _remember(self, message: Any, described: Any) -> int:
        """Add `message`'s description to `known`, as what that message object now stands for."""
        self.known.append(described)
        self.encoded[id(message)] = (message, len(self.known) - 1)
        return len(self.known) - 1

    def _final_messages(self, messages: Any) -> Any:
        """The request's messages once the call is over, described afresh (the learner's code may have
        changed them since they were sent); each one still described as sent is named by its index."""
        if type(messages) is not list:
            return to_data(messages)
        items = list(messages)  # a snapshot: a thread the learner left running may still change the list
        data = to_data(items)
        indices = []
        for message, described in zip(items, data, strict=True):
            known = self.encoded.get(id(message))
            if known is None or known[0] is not message or self.known[known[1]] != described:
                indices.append(self._remember(message, described))
            else:
                indices.append(known[1])
        return indices

    def _run(self, call: skyl.ToolCall) -> str:
        """The synchronous tool: answered here from the grader's table, as `Dialogue.output` would."""
        _check_call(call)
        key = repr(Call(call.name, dict(call.arguments)))
        if call.name in self.tools["unknown"] or key in self.tools["failing"]:
            error: Exception = (
                KeyError(call.name)
                if call.name in self.tools["unknown"]
                else TOOL_ERRORS.get(str(self.tools.get("raises")), RuntimeError)(self.tools["failing"][key])
            )
            self.tool_errors.append(error)
            raise error
        if key not in self.tools["outputs"]:
            raise LookupError(f"run() was given {key}, which the model did not ask for.")
        return str(self.tools["outputs"][key])

    def _run_remote(self, call: skyl.ToolCall) -> str:
        _check_call(call)
        return self._answer(self.connections.post_json(self.token_path + TOOLS_PATH, {"call": to_data(call)}))

    def _async_run(self, call: skyl.ToolCall) -> Coroutine[Any, Any, str]:
        return self.handed_out.keep(self._run_async(call))

    async def _run_async(self, call: skyl.ToolCall) -> str:
        _check_call(call)
        assert self.async_connections is not None
        answer = await self.async_connections.post_json(self.token_path + TOOLS_PATH, {"call": to_data(call)})
        return self._answer(answer)

    def _answer(self, answer: Any) -> str:
        error = answer.get("error") if isinstance(answer, dict) else None
        if isinstance(error, dict):
            failure = TOOL_ERRORS.get(str(error.get("type")), RuntimeError)(*error.get("args", []))
            self.tool_errors.append(failure)
            raise failure
        return str(answer["output"])


def _check_call(call: object) -> None:
    if not isinstance(call, skyl.ToolCall):
        raise TypeError(f"run() takes a skyl.ToolCall from resp.tool_calls(), got {type(call).__name__}: {call!r}")


class _NotingClient(skyl.Client):
    def __init__(
        self,
        provider: str,
        *,
        transport: httpx.BaseTransport,
        note: Callable[[bytes, skyl.Request], None],
        **kwargs: Any,
    ) -> None:
        self._direct = DirectClient(transport)
        super().__init__(provider, http_client=self._direct, **kwargs)
        self._note = note

    def close(self) -> None:
        self._direct.close()

    def _prepare(self, request: skyl.Request, *, stream: bool) -> tuple[str, bytes, dict[str, str]]:
        prepared = super()._prepare(request, stream=stream)
        self._note(prepared[1], request)
        return prepared


class _NotingAsyncClient(skyl.AsyncClient):
    """Also keeps the coroutines of `complete`, so that one never awaited is reported."""

    def __init__(
        self,
        provider: str,
        *,
        transport: httpx.AsyncBaseTransport,
        note: Callable[[bytes, skyl.Request], None],
        **kwargs: Any,
    ) -> None:
        self._direct = DirectAsyncClient(transport)
        super().__init__(provider, http_client=self._direct, **kwargs)
        self._note = note
        self.handed_out = HandedOut()

    def complete(self, request: skyl.Request) -> Coroutine[Any, Any, skyl.Response]:
        return self.handed_out.keep(super().complete(request))

    def _prepare(self, request: skyl.Request, *, stream: bool) -> tuple[str, bytes, dict[str, str]]:
        prepared = super()._prepare(request, stream=stream)
        self._note(prepared[1], request)
        return prepared


class _WatchedStream:
    """The stream a learner's collector reads; it remembers whether the turn was read to its end."""

    def __init__(self, stream: skyl.Stream) -> None:
        self._stream = stream
        self.finished = False

    def __iter__(self) -> Any:
        for event in self._stream:
            if isinstance(event, skyl.MessageEnd):
                self.finished = True
            yield event

    def __enter__(self) -> _WatchedStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stream.__exit__(None, None, None)


def _take_away_collector() -> Callable[[], None]:
    taken = (_collect.StreamCollector, skyl.StreamCollector)
    _collect.StreamCollector = _OffLimitsCollector  # type: ignore[assignment,misc]
    skyl.StreamCollector = _OffLimitsCollector  # type: ignore[assignment,misc]

    def restore() -> None:
        _collect.StreamCollector, skyl.StreamCollector = taken  # type: ignore[misc]

    return restore
