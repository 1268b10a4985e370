"""`sandbox serve` in a thread of the test process, on a free port of 127.0.0.1: the command's own
HTTP protocol (`sandbox.adapters.server`), for the official-SDK tests and the framework suite."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import sandbox
from sandbox.adapters.server import background


@contextlib.contextmanager
def serving(engine: sandbox.Engine) -> Iterator[str]:
    """Serve `engine` until the block ends; yields the base URL, http://127.0.0.1:PORT."""
    with background(engine, grace=1.0) as base:
        yield base
