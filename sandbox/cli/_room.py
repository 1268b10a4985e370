"""`sandbox room` (and `sandbox serve --room`): the sandbox server with the workshop room mounted beside it;
`sandbox verify`: the instructor's own grading of learners' submissions, recorded in the room as verified.

May touch: the room's database file (`--room-db`, or a new temporary one), stdout for the banner,
this machine's network interfaces (read, for their addresses), and the listening socket through
`sandbox.adapters._serve.serve` (or `_workers.serve_workers`, each worker process serving the room
on the one file). The banner prints the instructor's URL (with the room's secret key,
which the page takes off the address bar at once) and, for each address learners can reach, the one
line they use to join. `sandbox verify` runs `pytest challenges/ --impl DIR` for each learner's folder
(learner code inside the grading sandbox: `--isolation strict` by default) in a temporary folder of
its own, and sends each report's tallies to the room with the instructor's key.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import ipaddress
import json
import os
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from .._exceptions import UsageError
from ..adapters._asgi import SandboxApp
from ..adapters._serve import serve
from ..adapters._workers import before_shutdown, serve_workers
from ..engine._engine import Engine
from ..grading.judge._meta import find_root, load_challenges
from ..grading.judge._room_graded import grade_run
from ..grading.judge._room_link import ROOM_ENV, ROOM_NAME_ENV, RoomLink
from ..room._app import PREFIX, RoomApp
from ..room._service import RecordingEngine, RoomService
from ..room._store import RoomDatabase

__all__ = [
    "RecordingEngine",
    "add_join_options",
    "add_options",
    "add_verify_options",
    "around_grade",
    "join_from",
    "room_app",
    "serve_room",
    "verify",
]
VERIFY_SUMMARY = "Grade each learner's folder of submissions and record the results in the room as verified."
KEY_ENV = "SANDBOX_ROOM_KEY"

Observer = Callable[[Sequence[Any], Mapping[str, tuple[str, str]]], None]
SUMMARY = "Serve the sandbox with a workshop room: a live page of every learner's progress."


def add_options(parser: argparse.ArgumentParser, *, flag: bool) -> None:
    """The room's options; `flag` adds `--room` itself (for `sandbox serve`)."""
    if flag:
        parser.add_argument("--room", action="store_true", help="also run a workshop room (see `sandbox room`)")
    parser.add_argument(
        "--room-db",
        type=Path,
        default=None,
        metavar="FILE",
        help="the room's SQLite file: a restart with it keeps the room",
    )
    parser.add_argument(
        "--stuck-runs", type=int, default=3, metavar="N", help="stuck: the same failure N runs in a row (3)"
    )
    parser.add_argument(
        "--stuck-minutes", type=float, default=10.0, metavar="M", help="stuck: no run for M minutes (10)"
    )


def add_join_options(parser: argparse.ArgumentParser) -> None:
    """`--room URL --name NAME` for `sandbox check` and `watch`: the pytest they run joins the room."""
    parser.add_argument(
        "--room", default=None, metavar="URL", help=f"post each run to a workshop room (or ${ROOM_ENV})"
    )
    parser.add_argument("--name", default=None, metavar="NAME", help=f"your name in the room (or ${ROOM_NAME_ENV})")


def join_from(args: argparse.Namespace) -> None:
    """Hand `--room` and `--name` to the pytest run through the environment, as a learner could themselves."""
    if args.room:
        os.environ[ROOM_ENV] = args.room
    if args.name:
        os.environ[ROOM_NAME_ENV] = args.name
    if os.environ.get(ROOM_ENV) and not os.environ.get(ROOM_NAME_ENV):
        raise UsageError(f"--room {os.environ[ROOM_ENV]}: say who you are too, with --name 'YOUR NAME'.")


def around_grade(args: argparse.Namespace, grade: Callable[[Observer | None], int]) -> int:
    """`sandbox grade --room URL --name NAME`: join while the cases run, post their verdicts once all
    are final, and say in one line if the room could not take them. The exit status is the grader's."""
    join_from(args)
    url, name = os.environ.get(ROOM_ENV), os.environ.get(ROOM_NAME_ENV)
    if not url or not name:
        return grade(None)
    link = RoomLink(url, name)

    def observe(planned: Sequence[Any], outcomes: Mapping[str, tuple[str, str]]) -> None:
        link.post(grade_run(planned, outcomes))

    status = grade(observe)
    link.finish(print)
    return status


def reachable_hosts(host: str) -> list[str]:
    """The addresses learners reach a server bound to `host` at: `host` itself, or for a wildcard this
    machine's own IPv4 addresses other than loopback (read from its interfaces; none resolved)."""
    if host not in ("0.0.0.0", "::", ""):
        return [host]
    found: list[str] = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, interface in socket.if_nameindex():
            with contextlib.suppress(OSError, ImportError):
                import fcntl  # Linux and the BSDs: SIOCGIFADDR

                packed = fcntl.ioctl(probe.fileno(), 0x8915, struct.pack("256s", interface.encode()[:15]))
                address = socket.inet_ntoa(packed[20:24])
                if not ipaddress.ip_address(address).is_loopback and address not in found:
                    found.append(address)
    return found or ["127.0.0.1"]


def room_app(path: Path, titles: dict[str, str], stuck_runs: int, stuck_minutes: float, app: SandboxApp) -> RoomApp:
    """The room around one worker process's sandbox `app`, on the room's file at `path` (see `serve_room`)."""
    service = RoomService(RoomDatabase(path), titles=titles, stuck_runs=stuck_runs, stuck_minutes=stuck_minutes)

    def stop() -> None:
        service.closing = True  # the page's open streams end within a second, not at the grace's end

    before_shutdown(stop)
    return RoomApp(app, service)


def serve_room(
    args: argparse.Namespace, engine: Engine, make_engine: Callable[[], Engine], banner: Callable[[int], None]
) -> int:
    """The sandbox and the room, in one process or (`--workers N`) in N that share the room's file."""
    if args.stuck_runs < 1 or args.stuck_minutes <= 0:
        raise UsageError("--stuck-runs takes a whole number from 1, --stuck-minutes a number above 0.")
    path: Path = args.room_db
    if path is None:
        handle, name = tempfile.mkstemp(prefix="sandbox-room-", suffix=".db")
        os.close(handle)
        path = Path(name)
    root = find_root(Path.cwd())
    titles = {info.name: info.title for info in load_challenges(root)} if root else {}
    try:
        store = RoomDatabase(path)
    except sqlite3.Error as error:
        raise UsageError(
            f"--room-db {path}: SQLite cannot open that file ({error}). Give a file in a folder that exists and "
            "that this user may write, e.g. --room-db workshop.db."
        ) from None
    service = RoomService(store, titles=titles, stuck_runs=args.stuck_runs, stuck_minutes=args.stuck_minutes)

    def ready(port: int) -> None:
        banner(port)
        hosts = reachable_hosts(args.host)
        bases = [f"http://{host}:{port}" for host in hosts]
        room = f"{bases[0]}{PREFIX}"
        kept = "" if args.room_db else f" (a new room: start again with --room-db {path} to keep it)"
        print(f"\nWorkshop room, state in {path}{kept}")
        print(f"  Instructor's page (keep the key to yourself): {room}/?key={service.key}")
        print(f"  Projector (shows nothing secret, once the page above is open): {room}/projector")
        for base in bases:
            print(f"  Learners join:  pytest challenges/ --room {base}{PREFIX} --name 'THEIR NAME'")
        print(f"             or:  sandbox check --room {room} --name 'THEIR NAME'   (also sandbox watch)")
        print(f"             or:  export {ROOM_ENV}={room} {ROOM_NAME_ENV}='THEIR NAME'")
        base = bases[0]
        print(f"  Their own loops: base_url={base}/v1 (Anthropic, Gemini: {base}), api_key: the key their join prints")
        if args.host in ("127.0.0.1", "localhost", "::1"):
            print("  Only this machine can reach it: for a room of laptops, start it with --host 0.0.0.0.")
        sys.stdout.flush()

    def stop() -> None:
        service.closing = True  # the instructor's open page streams end within a second, not at the grace's end

    options = {
        "host": args.host,
        "port": args.port,
        "cors_origins": args.cors_origin,
        "forwarded_allow_ips": args.forwarded_allow_ips,
        "ready": ready,
    }
    try:
        if args.workers > 1:
            wrap = functools.partial(room_app, path, titles, args.stuck_runs, args.stuck_minutes)
            serve_workers(make_engine, workers=args.workers, wrap=wrap, **options)
        else:
            serve(engine, wrap=lambda app: RoomApp(app, service), on_stop=stop, **options)
    finally:
        service.closing = True
        store.close()
    return 0


def add_verify_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("submissions", type=Path, help="one folder per learner, named as in the room")
    parser.add_argument("--room", required=True, metavar="URL", help="the room's URL, as `sandbox room` printed it")
    parser.add_argument("--key", default=None, help=f"the instructor's key (or ${KEY_ENV})")
    parser.add_argument(
        "--isolation", default="strict", choices=("strict", "auto", "process"), help="where learner code runs (strict)"
    )
    parser.add_argument("challenges", nargs="*", metavar="N", help="only these challenges (default: all)")


def _tallies(report: Path) -> dict[str, Any]:
    """A `--report` file as the room takes a run: the tallies per challenge (no feedback: the
    instructor reads that in the report itself)."""
    data = json.loads(report.read_text(encoding="utf-8"))
    challenges = {
        name: {key: int(tally[key]) for key in ("passed", "failed", "not_started")}
        | {
            "collected": int(tally["passed"])
            + int(tally["failed"])
            + int(tally["not_started"])
            + int(tally.get("not_run", 0))
        }
        for name, tally in data["extra_data"]["challenges"].items()
    }
    return {"source": "grade", "challenges": challenges, "failures": []}


def verify(args: argparse.Namespace) -> int:
    """`sandbox verify SUBMISSIONS --room URL`: 0 when every learner's results were recorded."""
    key = args.key or os.environ.get(KEY_ENV)
    if not key:
        raise UsageError(
            f"sandbox verify needs the instructor's key: --key KEY (or ${KEY_ENV}), as the banner printed."
        )
    root = find_root(Path.cwd())
    if root is None:
        raise UsageError("sandbox verify grades with ./challenges: run it in the checkout the learners were given.")
    folders = sorted(path for path in args.submissions.iterdir() if path.is_dir()) if args.submissions.is_dir() else []
    if not folders:
        raise UsageError(
            f"{args.submissions}: no learner's folder in it (one folder per learner, named as in the room)."
        )
    infos = load_challenges(root)
    numbers = {given.zfill(2) for given in args.challenges}
    wanted = [info.folder for info in infos if not numbers or info.name[:2] in numbers or info.name in numbers]
    if not wanted:
        raise UsageError(f"no challenge {', '.join(args.challenges)} in {root}: give numbers such as 2 or 02.")
    url = args.room.rstrip("/")
    failed = 0
    for folder in folders:
        with tempfile.TemporaryDirectory(prefix="sandbox-verify-") as scratch:
            report = Path(scratch) / "results.json"
            command = [sys.executable, "-m", "pytest", *map(str, wanted), "--impl", str(folder.resolve())]
            command += ["--report", str(report), "--isolation", args.isolation, "-q", "-p", "no:cacheprovider"]
            subprocess.run(command, cwd=root.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            if not report.is_file():
                print(f"{folder.name}: grading wrote no report (run the command by hand to see why): not recorded")
                failed += 1
                continue
            run = _tallies(report)
        quoted = httpx.URL(path=folder.name).raw_path.decode()
        response = httpx.put(
            f"{url}/api/learners/{quoted}/verified",
            json=run,
            headers={"authorization": f"Bearer {key}"},
            timeout=30,
            trust_env=False,
        )
        if response.status_code != 200:
            print(f"{folder.name}: the room refused the results ({response.status_code}: {response.text[:200]})")
            failed += 1
            continue
        passed = sum(tally["passed"] for tally in run["challenges"].values())
        total = sum(tally["collected"] for tally in run["challenges"].values())
        print(f"{folder.name}: {passed}/{total} tests passed, recorded in the room as verified")
    return 1 if failed else 0
