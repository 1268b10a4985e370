"""`sandbox.serving()`: `sandbox serve` in a thread of the calling process, for a test.

The same uvicorn server the command runs (`make_server`), on a free port of 127.0.0.1, until the
`with` block ends. What it yields, a `RunningSandbox`, gives the URL to hand to any client (an SDK's
`base_url`, a program in another language) and the journal of what the sandbox answered, read in
process: no control API is needed for that. `control=True` also opens the control API
(`sandbox.adapters._control`) for clients outside the process, behind `token` (one is made when
none is given).

May touch: one listening socket on 127.0.0.1, and a thread that serves it.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from .._exceptions import UsageError
from ..engine._engine import DEFAULT_BUDGET, Engine
from ..engine._scenario import Scenario
from ..engine.faults import Fault
from ._asgi import SandboxApp
from ._control import ControlApp
from ._journal import Journal
from ._serve import make_server
from ._tcp import tcp_socket

__all__ = ["RunningSandbox", "serving"]

START_TIMEOUT = 30.0


@dataclass(frozen=True)
class RunningSandbox:
    """A sandbox server running in this process."""

    url: str
    """`http://127.0.0.1:PORT`: Anthropic's and Gemini's base URL, and the control API's."""
    engine: Engine = field(repr=False)
    control: ControlApp = field(repr=False)
    token: str | None = None
    """The control API's token (None: the control API is off)."""

    @property
    def openai_url(self) -> str:
        """OpenAI's base URL (Chat Completions and Responses): the server's URL and `/v1`."""
        return f"{self.url}/v1"

    def journal(self, scope: str = "") -> Journal:
        """What the sandbox answered: the requests with `x-sandbox-scope: scope`, or ("") without it."""
        return self.control.journal(scope)


@contextlib.contextmanager
def serving(
    scenario: str | Scenario | None = None,
    *,
    budget: int = DEFAULT_BUDGET,
    faults: Sequence[Fault] | str | None = None,
    scenarios: Mapping[str, Scenario] | None = None,
    engine: Engine | None = None,
    control: bool = False,
    token: str | None = None,
) -> Iterator[RunningSandbox]:
    """Serve the sandbox on a free port of 127.0.0.1 until the block ends.

    `scenario`, `budget`, `faults` and `scenarios` are `Engine`'s (or pass a whole `engine`);
    `control=True` opens the control API, behind `token` or a token made for the run.
    """
    if engine is not None and (scenario is not None or faults is not None or scenarios is not None):
        raise UsageError("serving(engine=...) takes the engine as it is: give scenario=, faults= or scenarios= to it.")
    if token is not None and not control:
        raise UsageError("serving(token=...) is the control API's token: add control=True, or leave the token out.")
    engine = engine or Engine(scenario, budget=budget, faults=faults, scenarios=scenarios)
    if control and token is None:
        token = secrets.token_urlsafe(24)
    wrapper = ControlApp(SandboxApp(engine), token if control else None)
    sock = tcp_socket()
    sock.bind(("127.0.0.1", 0))
    server = make_server(wrapper, grace=1.0)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="sandbox-serving", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        if not server.started:
            raise UsageError(f"sandbox.serving(): the server did not start within {START_TIMEOUT:g} s.")
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        yield RunningSandbox(url, engine, wrapper, token if control else None)
    finally:
        server.should_exit = True
        thread.join(START_TIMEOUT)
        sock.close()
