"""The first process of a program's run (`sandbox grade`): it starts the program, keeps its deadline,
and kills everything the program started before it reports how the program ended.

    python -I -S _launch.py STATUS_FD SECONDS UID GID PROCESSES PORT SOCKET -- COMMAND...

It runs as the grader's user (root on an autograder) and starts the program as the unprivileged
`UID:GID` (`-` to keep the user), so the program cannot signal or trace it, capping that user's
processes at `PROCESSES` (`-`: the sandbox's cgroup caps them). It is the "child
subreaper" of everything below it: a process that leaves the program's session (`setsid`, a double
fork) comes back to it, and is killed with the rest once the program ends or its time is up. Under
bubblewrap it is the sandbox's first process (whose end ends the sandbox), and with `PORT` it
listens on the sandbox's own 127.0.0.1:PORT and relays every connection to the grader's endpoint
through the Unix socket `SOCKET`: the program's base URL works unchanged, and leads nowhere else.

Run as a script, with the standard library only (no `site`, nothing of the package), so that it
starts in a few milliseconds. It writes one line to STATUS_FD: `exit N`, `signal N`, `timeout`, or
`notstarted WHY`.
"""

from __future__ import annotations

import ctypes
import os
import resource
import selectors
import signal
import socket
import sys
import threading
import time
import warnings  # noqa: F401 - os.execvp needs it, and after the user changes it may not be readable

_PR_SET_CHILD_SUBREAPER = 36


def main(argv: list[str]) -> None:
    status_fd, seconds, uid, gid, processes, port, path = argv[:7]
    command = argv[8:]
    os.set_inheritable(int(status_fd), False)  # the program must not write our report line
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    if port != "-":
        _relay(int(port), path)
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        _become(command, uid, gid, processes, ready_write)
    os.close(ready_write)
    failed = os.read(ready_read, 4096).decode(errors="replace")  # empty: the program's exec succeeded
    if failed:
        _report(status_fd, f"notstarted {failed}")
        _sweep(pid)
        return
    status = _wait(pid, time.monotonic() + float(seconds))
    _sweep(pid)
    if status is None:
        _report(status_fd, "timeout")
    elif os.WIFSIGNALED(status):
        _report(status_fd, f"signal {os.WTERMSIG(status)}")
    else:
        _report(status_fd, f"exit {os.WEXITSTATUS(status)}")


def _become(command: list[str], uid: str, gid: str, processes: str, ready: int) -> None:
    """In the child: a session of its own, the unprivileged user, then the program."""
    try:
        os.setsid()
        if uid != "-":
            if processes != "-":  # a user of the learner's alone: cap its processes (a fork bomb stops there)
                resource.setrlimit(resource.RLIMIT_NPROC, (int(processes), int(processes)))
            os.setgroups([])
            os.setgid(int(gid))
            os.setuid(int(uid))
        os.set_inheritable(ready, False)
        os.set_blocking(ready, True)
        os.execvp(command[0], command)
    except OSError as error:
        os.write(ready, f"{error.strerror or error} ({command[0]})".encode())
    finally:
        os._exit(127)


def _wait(pid: int, deadline: float) -> int | None:
    """The program's wait status, or None at the deadline. Orphans coming back to us are reaped too."""
    while True:
        try:
            found, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return None
        if found == pid:
            return status
        if found == 0:
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.002)


def _sweep(pid: int) -> None:
    """Kill the program's session, then every process that came back to us, until none is left."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    me = str(os.getpid())
    for _ in range(2000):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat", "rb") as stat:
                        parent = stat.read().rsplit(b")", 1)[1].split()[1].decode()
                except (OSError, IndexError):
                    continue
                if parent == me:
                    try:
                        os.kill(int(entry), signal.SIGKILL)
                    except OSError:
                        pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return
        time.sleep(0.005)


def _report(fd: str, line: str) -> None:
    os.write(int(fd), (line + "\n").encode())


_RELAYED = 64
"""Connections relayed at once: a newcomer beyond them closes the one quiet longest."""
_CHUNK = 65536
"""Bytes held per direction of a connection: nothing more is read from one side until the other took them."""


def _relay(port: int, path: str) -> None:
    """127.0.0.1:`port` in this network namespace, relayed to the endpoint's Unix socket at `path`, by one
    thread that holds at most `_RELAYED` connections and `_CHUNK` bytes per direction of each."""
    listener = socket.create_server(("127.0.0.1", port))
    listener.set_inheritable(False)
    listener.setblocking(False)
    threading.Thread(target=_serve_relay, args=(listener, path), daemon=True).start()


class _Pair:
    """One relayed connection: its two ends, and the bytes waiting to be written to each."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.other = {client: upstream, upstream: client}
        self.waiting = {client: b"", upstream: b""}
        self.ended: set[socket.socket] = set()
        """The ends that closed their side: the other's writing side is shut once it has their bytes."""
        self.quiet_since = time.monotonic()

    def interest(self, end: socket.socket) -> int:
        events = 0
        if end not in self.ended and not self.waiting[self.other[end]]:
            events |= selectors.EVENT_READ
        if self.waiting[end]:
            events |= selectors.EVENT_WRITE
        return events

    def step(self, end: socket.socket, events: int) -> bool:
        """Move the bytes `end` is ready for; False once both sides are done (or one failed)."""
        self.quiet_since = time.monotonic()
        other = self.other[end]
        try:
            if events & selectors.EVENT_WRITE:
                self._write(end)
            if events & selectors.EVENT_READ:
                data = end.recv(_CHUNK)
                if not data:
                    self.ended.add(end)
                self.waiting[other] = data
                self._write(other)
        except OSError:
            return False
        return len(self.ended) < 2 or any(self.waiting.values())

    def _write(self, end: socket.socket) -> None:
        try:
            sent = end.send(self.waiting[end]) if self.waiting[end] else 0
        except BlockingIOError:
            sent = 0
        self.waiting[end] = self.waiting[end][sent:]
        if not self.waiting[end] and self.other[end] in self.ended:
            end.shutdown(socket.SHUT_WR)


def _serve_relay(listener: socket.socket, path: str) -> None:
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    pairs: set[_Pair] = set()

    def watch(pair: _Pair) -> None:
        for end in pair.other:
            events = pair.interest(end)
            if end.fileno() in selector.get_map():
                if events:
                    selector.modify(end, events, pair)
                else:
                    selector.unregister(end)
            elif events:
                selector.register(end, events, pair)

    def close(pair: _Pair) -> None:
        pairs.discard(pair)
        for end in pair.other:
            if end.fileno() in selector.get_map():
                selector.unregister(end)
            end.close()

    while True:
        for key, events in selector.select():
            if key.fileobj is not listener:
                pair = key.data
                if pair.step(key.fileobj, events):
                    watch(pair)
                else:
                    close(pair)
                continue
            try:
                client, _ = listener.accept()
            except OSError:
                continue
            if len(pairs) >= _RELAYED:
                close(min(pairs, key=lambda other: other.quiet_since))
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(path)
            except OSError:
                client.close()
                upstream.close()
                continue
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each answer out at once, whole or not
            client.setblocking(False)
            upstream.setblocking(False)
            pair = _Pair(client, upstream)
            pairs.add(pair)
            watch(pair)


if __name__ == "__main__":
    main(sys.argv[1:])
