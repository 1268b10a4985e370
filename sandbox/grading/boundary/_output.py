"""What a worker printed, kept to a readable size, and how a process ended, in a learner's words."""

from __future__ import annotations

import os
import signal
import sys
from typing import Protocol

from ._confine import MEMORY_LIMIT
from ._text import escaped

__all__ = ["CPU_LIMIT", "OUTPUT_LIMIT", "Capture", "describe_exit", "show_output"]

OUTPUT_LIMIT = 4000
"""Characters of a call's printed output kept per stream: the first and last halves."""
CPU_LIMIT = 120
"""CPU seconds a worker (or anything it starts) may use in its life: a process that escapes the
grader's clock still stops."""


class _Printed(Protocol):
    def output(self) -> tuple[str, str]: ...


class Capture:
    """One output stream of a worker: the first and last `OUTPUT_LIMIT // 2` characters of a call's output."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        os.set_blocking(fd, False)
        self.open = True
        self._half = OUTPUT_LIMIT // 2 - 60
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0

    def read(self) -> None:
        while self.open:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.open = False
                return
            self._total += len(data)
            room = self._half - len(self._head)
            if room > 0:
                self._head += data[:room]
                data = data[room:]
            self._tail += data
            del self._tail[: max(0, len(self._tail) - self._half)]

    def take(self) -> str:
        self.read()
        head, tail = self._head.decode(errors="replace"), self._tail.decode(errors="replace")
        cut = self._total - len(self._head) - len(self._tail)
        self._head, self._tail, self._total = bytearray(), bytearray(), 0
        if cut <= 0:
            return head + tail
        return f"{head}\n[... {cut} characters of output cut: print less, or print only on failure ...]\n{tail}"

    def close(self) -> None:
        os.close(self.fd)


def show_output(worker: _Printed) -> None:
    """What the learner's code printed, into the running test's captured output: shown with its failure."""
    out, err = worker.output()
    if out:
        sys.stdout.write(escaped(out))
    if err:
        sys.stderr.write(escaped(err))


def describe_exit(status: int | None, *, out_of_memory: bool = False) -> str:
    """How a process ended, for a learner: the exit code, or the signal and what usually sends it.
    `out_of_memory`: the kernel killed a process of its sandbox for going over the sandbox's memory cap."""
    if status is None:
        return "its process ended (the grader could not learn how)"
    if os.WIFEXITED(status):
        code = os.WEXITSTATUS(status)
        return f"its process exited with code {code} (os._exit(), or a crash of the interpreter)"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        killed = f"the {CPU_LIMIT} s CPU limit, or the system ran out of memory"
        if out_of_memory:
            killed = f"your code ran out of its sandbox's {MEMORY_LIMIT >> 30} GiB of memory: hold less at once"
        why = {
            "SIGKILL": killed,
            "SIGXCPU": f"it used more than its {CPU_LIMIT} s of CPU time",
            "SIGSEGV": "a crash of the interpreter, usually a recursion too deep for its stack",
            "SIGABRT": "the interpreter aborted, often a recursion too deep for its stack",
            "SIGALRM": "an alarm it set with signal.alarm() went off",
            "SIGXFSZ": "it wrote a file over the size limit",
        }.get(name, "a signal sent to it")
        return f"its process was killed by {name} ({why})"
    return f"its process ended with status {status}"  # pragma: no cover - stopped, not ended
