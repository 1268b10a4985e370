"""The first process of a program's run (`sandbox grade`): it starts the program, keeps its deadline,
and kills everything the program started before it reports how the program ended.

    python -I -S _launch.py STATUS_FD SECONDS UID GID PORT SOCKET -- COMMAND...

It runs as the grader's user (root on an autograder) and starts the program as the unprivileged
`UID:GID` (`-` to keep the user), so the program cannot signal or trace it. It is the "child
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
import signal
import socket
import sys
import threading
import time
import warnings  # noqa: F401 - os.execvp needs it, and after the user changes it may not be readable

_PR_SET_CHILD_SUBREAPER = 36
_PROCESSES = 512
"""As `_confine.PROCESS_LIMIT` (this script imports nothing of the package)."""


def main(argv: list[str]) -> None:
    status_fd, seconds, uid, gid, port, path = argv[:6]
    command = argv[7:]
    os.set_inheritable(int(status_fd), False)  # the program must not write our report line
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    if port != "-":
        _relay(int(port), path)
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        _become(command, uid, gid, ready_write)
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


def _become(command: list[str], uid: str, gid: str, ready: int) -> None:
    """In the child: a session of its own, the unprivileged user, then the program."""
    try:
        os.setsid()
        if uid != "-":  # a user of the learner's alone: cap its processes (a fork bomb stops there)
            resource.setrlimit(resource.RLIMIT_NPROC, (_PROCESSES, _PROCESSES))
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


def _relay(port: int, path: str) -> None:
    """127.0.0.1:`port` in this network namespace, relayed to the endpoint's Unix socket at `path`."""
    listener = socket.create_server(("127.0.0.1", port))
    listener.set_inheritable(False)

    def accept() -> None:
        while True:
            client, _ = listener.accept()
            threading.Thread(target=_pair, args=(client, path), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()


def _pair(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        return
    threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()
    _pump(client, upstream)


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    finally:
        try:
            target.shutdown(socket.SHUT_WR)  # the other direction ends on its own
        except OSError:
            pass


if __name__ == "__main__":
    main(sys.argv[1:])
