"""TCP settings of the sandbox's listening sockets (`sandbox serve`'s, the grading endpoint's): they
send at once, and the grading endpoint's acknowledge at once, so a kept-alive request costs no more
than a fresh one.

- `tcp_socket`: a stream socket whose protocol says TCP, with `TCP_NODELAY`. asyncio sets
  TCP_NODELAY on an accepted socket only when its protocol is IPPROTO_TCP (protocol 0, what
  `socket.socket()` and `socket.create_server()` give, is left alone), and accepted sockets inherit
  the listener's protocol; Linux also copies TCP_NODELAY from the listener.
- `quick_ack`: acknowledge what was just read at once. A client that writes a request's head and
  its body in two segments (http.client, Net::HTTP, many others) holds the body until the head is
  acknowledged, and on a kept-alive connection Linux delays that ACK by about 40 ms, hoping to
  piggyback it on an answer that cannot come before the body: every request would stall. Linux
  clears the flag by itself, so it is set again after each read that leaves a request unfinished.
  A request read whole needs no ACK of its own (its answer carries one), and skipping the call
  there saves two system calls a request with uvloop. Elsewhere than Linux: nothing.
"""

from __future__ import annotations

import socket
from typing import Any

__all__ = ["quick_ack", "tcp_socket"]

_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)


def tcp_socket(family: socket.AddressFamily = socket.AF_INET) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def quick_ack(sock: Any) -> None:
    """`sock`: a socket, or the socket-like object an event loop's transport gives (or None)."""
    if _QUICKACK is not None and sock is not None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
        except OSError:  # a socket already closed
            pass
