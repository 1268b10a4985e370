"""The processes that run learner code, apart from the grader.

    grader (pytest) --control socket--> zygote --fork--> worker, one per challenge
                                                          imports the learner's module once
                                                          runs each call the grader sends
                                                          answers with data

The zygote imports skyl, httpx and this module once, then forks a worker per challenge: a fork is
a few milliseconds where a fresh interpreter is half a second, and the zygote never runs learner
code, so every worker starts clean. A worker starts a session of its own (the grader kills its
whole process group), takes the memory, CPU and core-file limits, and serves `load` and `call`
messages on its socket until the grader closes it.

The zygote is Linux's "child subreaper" for everything below it: a process a learner detaches
(double fork, `setsid`) comes back to the zygote when its parent dies, and the zygote kills it
before the grader writes its last report.
"""

from __future__ import annotations

import asyncio
import ctypes
import inspect
import os
import resource
import select
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable, Coroutine
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from .. import _collect, skyl
from .._scenario import Call
from ..wire import get_wire_format
from ._awaited import HandedOut
from ._clients import body_digest
from ._endpoint import TOOLS_PATH
from ._load import ImplementationError, load_implementation
from ._loopback import AsyncConnections, Connections
from ._marshal import error_to_data, from_data, to_data
from ._protocol import BrokenFrame, FrameBuffer, receive, send

__all__ = ["OFF_LIMITS", "main"]

OFF_LIMITS = (
    "This challenge asks you to rebuild the turn yourself: skyl.collect_stream and skyl.StreamCollector are "
    "off limits here. Write your own collect_stream(stream)."
)
_TOOL_ERRORS: dict[str, type[Exception]] = {
    "KeyError": KeyError,
    "RuntimeError": RuntimeError,
    "LookupError": LookupError,
    "TypeError": TypeError,
}
_PR_SET_CHILD_SUBREAPER = 36
_DEPTH = 1000
"""The recursion limit the worker's own code needs to answer, whatever the learner's code set."""


# -- the zygote -------------------------------------------------------------------------------------------


def main() -> None:
    """The zygote: `python -I -u -c "...; main()" CONTROL_FD`, started by `_runner.Zygote`."""
    control = socket.socket(fileno=int(sys.argv[1]))
    _become_subreaper()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    workers: set[int] = set()
    buffer = FrameBuffer()
    send(control, {"op": "ready"})
    try:
        while True:
            readable, _, _ = select.select([control.fileno(), wake_read], [], [])
            if wake_read in readable:
                os.read(wake_read, 4096)
                _reap(control, workers)
            if control.fileno() not in readable:
                continue
            data, fds, _, _ = socket.recv_fds(control, 1 << 16, 8)
            if not data:
                return
            for message in buffer.feed(data):
                if message["op"] == "spawn":
                    pid = _fork(fds, message, [control.fileno(), wake_read, wake_write])
                    workers.add(pid)
                    send(control, {"op": "spawned", "pid": pid})
                elif message["op"] == "sweep":
                    _sweep(workers)
                    send(control, {"op": "swept"})
                elif message["op"] == "shutdown":
                    _sweep(workers)
                    send(control, {"op": "bye"})
                    return
    finally:
        _sweep(workers)


def _become_subreaper() -> None:
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
            pass


def _reap(control: socket.socket, workers: set[int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in workers:
            workers.discard(pid)
            send(control, {"op": "exited", "pid": pid, "status": status})


def _sweep(workers: set[int]) -> None:
    """Kill every worker's process group, then every process that came back to us, until none is left."""
    for pid in workers:
        _kill_group(pid)
    workers.clear()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for pid in _children():
            _kill_group(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.01)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _children() -> list[int]:
    """Our children, orphans that came back to us included (Linux's /proc; elsewhere, none known)."""
    me = os.getpid()
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(int(entry))
    return found


def _fork(fds: list[int], message: dict[str, Any], inherited: list[int]) -> int:
    connection, stdout, stderr = fds
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    code = 70
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in inherited:
            os.close(fd)
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        os.close(stdout)
        os.close(stderr)
        _limit(message["limits"])
        Worker(socket.socket(fileno=connection)).serve()
        code = 0
    except BaseException:  # noqa: BLE001 - the worker's own failure, shown to the grader on its stderr
        traceback.print_exc()
    finally:
        os._exit(code)


def _limit(limits: dict[str, int]) -> None:
    """Caps the learner cannot raise: soft and hard limits alike."""
    for name, value in (("RLIMIT_AS", limits["memory"]), ("RLIMIT_CPU", limits["cpu"]), ("RLIMIT_CORE", 0)):
        which = getattr(resource, name, None)
        if which is None:  # pragma: no cover - a platform without this limit
            continue
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):  # pragma: no cover - macOS refuses some address-space limits
            pass


# -- a worker -------------------------------------------------------------------------------------------


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
            self.module = load_implementation(self.source, message["shown_as"])
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

    def connections(self, base: str) -> Connections:
        parts = urlsplit(base)
        key = parts.netloc
        if key not in self._connections:
            self._connections[key] = Connections(base)
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
        self.connections = worker.connections(self.base)
        self.async_connections = AsyncConnections(self.base) if self.asynchronous else None
        self.tool_errors: list[BaseException] = []
        self.handed_out = HandedOut()
        """The coroutines of `run`; the async client keeps its own."""
        self.request: skyl.Request | None = None
        self.stream: _WatchedStream | None = None
        self.clients: list[skyl.Client] = []
        self.tools: dict[str, Any] = {}
        self.encoded: dict[int, tuple[Any, Any]] = {}
        self.sent: list[dict[str, Any]] = []
        """What the clients encoded, sent with the answer: the grader reads it only after the call."""
        self.async_clients: list[_NotingAsyncClient] = []

    def run(self) -> dict[str, Any]:
        function = getattr(self.worker.module, self.message["function"])
        reply: dict[str, Any] = {"op": "result"}
        restore = _take_away_collector() if self.message.get("take_away") else None
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
            reply["messages"] = to_data(self.request.messages)
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
        messages = [self._message_data(message) for message in request.messages]
        self.sent.append({"digest": body_digest(body), "messages": messages})

    def _message_data(self, message: Any) -> Any:
        """A message as data, once per message object: a loop resends its whole history every round."""
        known = self.encoded.get(id(message))
        if known is None or known[0] is not message:
            known = self.encoded[id(message)] = (message, to_data(message))
        return known[1]

    def _run(self, call: skyl.ToolCall) -> str:
        """The synchronous tool: answered here from the grader's table, as `Dialogue.output` would."""
        _check_call(call)
        key = repr(Call(call.name, dict(call.arguments)))
        if call.name in self.tools["unknown"] or key in self.tools["failing"]:
            error: Exception = (
                KeyError(call.name) if call.name in self.tools["unknown"] else RuntimeError(self.tools["failing"][key])
            )
            self.tool_errors.append(error)
            raise error
        if key not in self.tools["outputs"]:
            raise LookupError(f"run() was given {key}, which the model did not ask for.")
        return str(self.tools["outputs"][key])

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
            failure = _TOOL_ERRORS.get(str(error.get("type")), RuntimeError)(*error.get("args", []))
            self.tool_errors.append(failure)
            raise failure
        return str(answer["output"])


def _check_call(call: object) -> None:
    if not isinstance(call, skyl.ToolCall):
        raise TypeError(f"run() takes a skyl.ToolCall from resp.tool_calls(), got {type(call).__name__}: {call!r}")


class _NotingClient(skyl.Client):
    def __init__(self, provider: str, *, note: Callable[[bytes, skyl.Request], None], **kwargs: Any) -> None:
        super().__init__(provider, **kwargs)
        self._note = note

    def _prepare(self, request: skyl.Request, *, stream: bool) -> tuple[str, bytes, dict[str, str]]:
        prepared = super()._prepare(request, stream=stream)
        self._note(prepared[1], request)
        return prepared


class _NotingAsyncClient(skyl.AsyncClient):
    """Also keeps the coroutines of `complete`, so that one never awaited is reported."""

    def __init__(self, provider: str, *, note: Callable[[bytes, skyl.Request], None], **kwargs: Any) -> None:
        super().__init__(provider, **kwargs)
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
