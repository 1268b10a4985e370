"""`sandbox serve`: the sandbox over HTTP/1.1 on a socket of its own.

    _answer      what a door answers around the engine (health, HEAD, CORS, encodings, limits): no sockets
    _connection  one connection: httptools parsing, one write per answer
    _watch       when a connection gives up: deadlines, the write timeout, the lingering close
    _request     the limits a connection holds clients to; one request as it arrives
    _cycle       a request run through an ASGI app on a connection (the room's; a fault's delivery)
    _framing     an answer as the bytes of one write
    _pool        the open connections, capped by the open-file limit; the sweep that runs deadlines
    _serve       the listening socket, the loop, signals, graceful shutdown

The ASGI app (`sandbox.SandboxApp`) answers through the same `_answer.Front`, so the two doors agree.
"""

from __future__ import annotations

from ._answer import Front, Reply, cors_origins_of, sender_of
from ._serve import QuietLog, background, serve

__all__ = ["Front", "QuietLog", "Reply", "background", "cors_origins_of", "sender_of", "serve"]
