"""`sandbox serve --control`: a control API beside the four wire formats, under `/_sandbox/`.

Off unless asked for, and behind a token when on: every control request carries
`Authorization: Bearer TOKEN` (or `x-sandbox-token: TOKEN`); without it the answer is a 401 that
says how. The model paths are unchanged and need no token.

- `GET /_sandbox/journal`: the exchanges the sandbox answered, oldest first: `method`, `path`,
  `status`, `provider`, `scenario`, `step`, the tool `calls` each answer asked for, the refusal's
  `error` text; and the `transcript` (`Journal.transcript()`), the stable text snapshot tests compare.
- `POST /_sandbox/reset`: forget the journal.
- `POST /_sandbox/scenarios`: load a scenario (its TOML text as the body); a request's model name
  then picks it. A built-in scenario's name is refused; a loaded one may be loaded again (at most
  `MAX_LOADED` names in a server's life).
- A per-test scope: a model request (or a control request) carrying `x-sandbox-scope: NAME` is kept
  in, and reads and resets, that scope's journal alone, so tests sharing one server do not see each
  other's exchanges. Without the header: the unscoped journal.

Journals live in the serving process: with `--workers N`, each worker keeps its own.
May touch: the engine's table of scenarios (to add one) and the journals it keeps.
"""

from __future__ import annotations

import hmac
import json
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from .._exceptions import ScenarioError
from ..engine._catalogue import catalogue
from ..engine._exchange import Exchange
from ..engine._scenario import Scenario
from ._asgi import SandboxApp
from ._journal import Journal

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["CONTROL_PREFIX", "SCOPE_HEADER", "ControlApp"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

CONTROL_PREFIX = "/_sandbox/"
SCOPE_HEADER = "x-sandbox-scope"
MAX_SCOPES = 1000
"""Scopes kept at once; past this the oldest is forgotten (a long run of tests on one server)."""
MAX_SCENARIO_BYTES = 1024 * 1024
MAX_LOADED = 1000
"""Scenarios the API may load in a server's life (loading one again under its name does not count)."""


class ControlApp:
    """Wraps a `SandboxApp`: keeps the journals, and answers the control API under `/_sandbox/`
    (everything else goes to the sandbox). Without a `token` the journals are kept for the serving
    process alone (`sandbox.serving()`) and `/_sandbox/` paths go to the sandbox like any other."""

    def __init__(self, app: SandboxApp, token: str | None) -> None:
        self.app = app
        self.token = token
        self.journals: dict[str, Journal] = {}
        self.loaded: set[str] = set()
        self._lock = threading.Lock()
        app.on_exchange = self._keep

    def journal(self, scope: str = "") -> Journal:
        """The journal of `scope` ("" for requests without the scope header)."""
        with self._lock:
            found = self.journals.get(scope)
            if found is None:
                if len(self.journals) >= MAX_SCOPES:
                    del self.journals[next(iter(self.journals))]
                found = self.journals[scope] = Journal()
            return found

    def _keep(self, headers: Mapping[str, str], exchange: Exchange) -> None:
        self.journal(headers.get(SCOPE_HEADER, "")).append(exchange)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = self.token
        if scope["type"] != "http" or token is None or not scope["path"].startswith(CONTROL_PREFIX):
            await self.app(scope, receive, send)
            return
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        if not _authorised(headers, token):
            await _reply(
                send,
                401,
                {
                    "error": "sandbox: the control API needs its token: send `Authorization: Bearer TOKEN` (or "
                    "`x-sandbox-token: TOKEN`), the token `sandbox serve --control` printed or was given "
                    "with --control-token."
                },
            )
            return
        body = await _body(receive)
        status, answer = self._handle(scope["method"], scope["path"][len(CONTROL_PREFIX) :], headers, body)
        await _reply(send, status, answer)

    def _handle(
        self, method: str, action: str, headers: Mapping[str, str], body: bytes | None
    ) -> tuple[int, dict[str, Any]]:
        scope = headers.get(SCOPE_HEADER, "")
        if (method, action) == ("GET", "journal"):
            journal = self.journal(scope)
            return 200, {
                "scope": scope,
                "exchanges": [_entry(exchange) for exchange in journal],
                "dropped": journal.dropped,
                "transcript": journal.transcript(),
            }
        if (method, action) == ("POST", "reset"):
            self.journal(scope).clear()
            return 200, {"scope": scope, "reset": True}
        if (method, action) == ("POST", "scenarios"):
            return self._load(body)
        return 404, {
            "error": f"sandbox: no control action {method} {CONTROL_PREFIX}{action}. The control API has "
            f"GET {CONTROL_PREFIX}journal, POST {CONTROL_PREFIX}reset and POST {CONTROL_PREFIX}scenarios."
        }

    def _load(self, body: bytes | None) -> tuple[int, dict[str, Any]]:
        if body is None:
            return 413, {"error": f"sandbox: a scenario file is at most {MAX_SCENARIO_BYTES} bytes."}
        try:
            data = tomllib.loads(body.decode("utf-8"))
            scenario = Scenario.from_dict(data, source="the posted scenario")
            engine = self.app.engine
            for fault in scenario.faults:
                engine.faults.check_request(fault, where=f"scenario {scenario.name!r}:")
        except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
            return 400, {"error": f"sandbox: the body is not a TOML scenario file ({exc})."}
        except ScenarioError as exc:
            return 400, {"error": f"sandbox: {exc}"}
        if scenario.name in catalogue():
            return 409, {
                "error": f"sandbox: {scenario.name!r} is a built-in scenario's name, and a request's model name "
                "must pick one scenario. Rename it in the file."
            }
        if scenario.name not in self.loaded and len(self.loaded) >= MAX_LOADED:
            return 409, {
                "error": f"sandbox: this server has loaded {MAX_LOADED} scenarios, the most it keeps. Load one "
                "again under a name it already has, or restart the server."
            }
        self.loaded.add(scenario.name)
        engine.scenarios[scenario.name] = scenario
        return 200, {"loaded": scenario.name}


def _authorised(headers: Mapping[str, str], token: str) -> bool:
    given = headers.get("x-sandbox-token", "")
    bearer = headers.get("authorization", "")
    if bearer.lower().startswith("bearer "):
        given = bearer[7:].strip()
    return hmac.compare_digest(given.encode(), token.encode())


def _entry(exchange: Exchange) -> dict[str, Any]:
    turn = exchange.turn if exchange.delivers_turn else None
    calls = turn.message.tool_calls() if turn is not None else []
    return {
        "method": exchange.method,
        "path": exchange.path,
        "status": exchange.status,
        "provider": exchange.provider,
        "scenario": exchange.scenario,
        "step": exchange.step,
        "calls": [{"name": call.name, "arguments": dict(call.arguments)} for call in calls],
        "text": turn.message.text() if turn is not None else None,
        "error": exchange.error.message if exchange.error is not None else None,
        "fault": exchange.fault.kind if exchange.fault is not None else None,
    }


async def _body(receive: Receive) -> bytes | None:
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_SCENARIO_BYTES:
            return None
        parts.append(chunk)
        if message["type"] == "http.disconnect" or not message.get("more_body", False):
            return b"".join(parts)


async def _reply(send: Send, status: int, answer: Mapping[str, Any]) -> None:
    body = json.dumps(answer, ensure_ascii=False).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
