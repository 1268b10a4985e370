"""The worker process of each implementation file, seen from the grader: started on first use, kept
between tests, replaced after a death or a hang."""

from __future__ import annotations

from pathlib import Path

from ._endpoint import Endpoint
from ._protocol import ImplementationError
from ._runner import TimedOut, Worker, WorkerDied, Zygote, shared_zygote, show_output

__all__ = ["Implementations"]


class Implementations:
    """A worker process per implementation file, loaded on first use and kept between tests; a worker
    that died or hung is replaced by the next test that needs one. Import errors are remembered: the
    file is not imported again this session."""

    def __init__(self) -> None:
        self._zygote: Zygote | None = None
        self._endpoint: Endpoint | None = None
        self._workers: dict[Path, Worker] = {}
        self._failed: dict[Path, ImplementationError] = {}

    def start(self) -> None:
        """Start the zygote now: its start-up overlaps the rest of pytest's. Raises `WorkerError`."""
        if self._zygote is None:
            self._zygote = shared_zygote()

    @property
    def endpoint(self) -> Endpoint:
        if self._endpoint is None:
            self._endpoint = Endpoint()
        return self._endpoint

    def get(self, path: Path, shown_as: str, seconds: float) -> Worker:
        """The live worker for `path`, importing it (within `seconds`) in a fresh one when needed."""
        if path in self._failed:
            raise self._failed[path]
        worker = self._workers.get(path)
        if worker is not None and worker.alive:
            return worker
        self.start()
        assert self._zygote is not None
        worker = Worker(self._zygote)
        try:
            reply = worker.request({"op": "load", "path": str(path), "shown_as": shown_as}, seconds)
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
        if self._zygote is not None:
            self._zygote.sweep()
            self._zygote = None
        if self._endpoint is not None:
            self._endpoint.close()
            self._endpoint = None
