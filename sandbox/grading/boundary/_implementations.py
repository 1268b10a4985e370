"""The worker process of each implementation file, seen from the grader: started on first use, kept
between tests, replaced after a death or a hang."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from ._endpoint import Endpoint
from ._isolation import INSIDE, Isolation
from ._protocol import ImplementationError
from ._reaper import become_subreaper, sweep_children
from ._runner import TimedOut, WorkerDied, WorkerProcess, Zygote, show_output
from ._submission import read_submission
from ._zygotes import shared_zygote

__all__ = ["Implementations"]

_NUMBERS = itertools.count()


class Implementations:
    """A worker process per implementation file, loaded on first use and kept between tests; a worker
    that died or hung is replaced by the next test that needs one. Import errors are remembered: the
    file is not imported again this session. The zygote, and the sandbox it runs in, serve one
    session: `close` ends them."""

    def __init__(self, isolation: Isolation | None = None) -> None:
        self.isolation = isolation or Isolation(False)
        self._zygote: Zygote | None = None
        self._without_collector: Zygote | None = None
        """Under bubblewrap, the zygote of the challenges that take skyl's collector away: its sandbox lacks it."""
        self._endpoint: Endpoint | None = None
        self._workers: dict[Path, WorkerProcess] = {}
        self._failed: dict[Path, ImplementationError] = {}

    def start(self) -> None:
        """Start the zygote now: its start-up overlaps the rest of pytest's. Raises `WorkerError`."""
        if self._zygote is None:
            if self.isolation.uid is not None and not self.isolation.sandboxed:
                become_subreaper()  # what escapes the zygote (killed by learner code) comes back here
            self._zygote = shared_zygote(self.isolation)

    @property
    def endpoint(self) -> Endpoint:
        if self._endpoint is None:
            unix = None
            if self.isolation.sandboxed:
                self.start()
                assert self._zygote is not None
                name = f"endpoint-{os.getpid()}-{next(_NUMBERS)}.sock"
                unix = (self._zygote.sockets / name, f"{INSIDE}/sockets/{name}")
            self._endpoint = Endpoint(unix=unix)
        return self._endpoint

    def get(self, path: Path, shown_as: str, seconds: float, *, take_away: bool = False) -> WorkerProcess:
        """The live worker for `path`, importing it (within `seconds`) in a fresh one when needed.

        `take_away`: skyl's stream collector is off limits in that worker from before the import on; under
        bubblewrap the worker's sandbox lacks it (`collector_hidden`)."""
        if path in self._failed:
            raise self._failed[path]
        worker = self._workers.get(path)
        if worker is not None and worker.alive:
            return worker
        self.start()
        assert self._zygote is not None
        zygote = self._zygote
        if take_away and self.isolation.sandboxed:
            if self._without_collector is None or not self._without_collector.alive:
                self._without_collector = Zygote(self.isolation, beside=self._zygote)
            zygote = self._without_collector
        try:
            source = _source(path, shown_as, self.isolation)  # read here: a sandboxed worker does not see the file
        except ImplementationError as unreadable:
            self._failed[path] = unreadable
            raise
        worker = WorkerProcess(zygote)
        try:
            load = {"op": "load", "path": str(path), "shown_as": shown_as, "source": source, "take_away": take_away}
            reply = worker.request(load, seconds)
        except TimedOut:
            error = ImplementationError(
                f"{shown_as} did not finish importing within {seconds:g} s: look for a loop or a blocking call "
                "at module level (outside any function)."
            )
        except WorkerDied as died:
            error = ImplementationError(f"{shown_as} ended the process importing it: {died}.")
        else:
            if reply.get("op") == "loaded" and isinstance(reply.get("functions"), dict):
                worker.functions = {str(name): bool(is_async) for name, is_async in reply["functions"].items()}
                show_output(worker)
                self._workers[path] = worker
                return worker
            error = ImplementationError(str(reply.get("message", f"{shown_as} could not be imported.")))
        show_output(worker)
        worker.close()
        self._failed[path] = error
        raise error

    def discard(self, path: Path) -> None:
        """Kill the worker for `path`; the next test that needs it gets a fresh one."""
        worker = self._workers.pop(path, None)
        if worker is not None:
            worker.close()

    def close(self) -> None:
        """Kill every worker and whatever they started; stop serving."""
        for path in list(self._workers):
            self.discard(path)
        if self._without_collector is not None:  # first: it uses the other's sockets folder
            self._without_collector.close()
            self._without_collector = None
        if self._zygote is not None:
            # Its sandbox served this session's learner: the next session (another learner's, perhaps, in
            # this same process) gets a fresh one, with nothing this one's code left in /tmp or elsewhere.
            self._zygote.close()
            self._zygote = None
        if self.isolation.uid is not None and not self.isolation.sandboxed:
            sweep_children(self.isolation.uid)
        if self._endpoint is not None:
            self._endpoint.close()
            self._endpoint = None


def _source(path: Path, shown_as: str, isolation: Isolation) -> str:
    """The text of the implementation file, read by the grader as data. Raises `ImplementationError`."""
    reader = (isolation.uid, isolation.gid) if isolation.uid is not None and isolation.gid is not None else None
    return read_submission(path, shown_as, reader=reader).decode("utf-8", errors="replace")
