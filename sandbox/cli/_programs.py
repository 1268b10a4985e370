"""The commands for learners in another language: `sandbox init go DIR` and `sandbox grade [N] -- CMD`.

`_main` registers them (`add_commands`); this module parses their options and hands the work to
`_scaffold` (a new Go module) and `grading.programs._grade` (the program, case by case). It touches only what
those do: the folder `init` is given, the report `grade` is asked for, and (with `--room`) the
workshop room the verdicts are posted to.
"""

from __future__ import annotations

import argparse
import functools
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._exceptions import SandboxError
from ..grading.judge._language import LANGUAGES, detect_language
from ..grading.judge._meta import ChallengeInfo, find_root, load_challenges, select
from ..grading.programs._program_cases import CASES, program_title
from ..wire import PROVIDERS
from . import _room as room
from ._scaffold import ScaffoldError, init_go

__all__ = ["GRADE_TIMEOUT", "Command", "CommandLineError", "add_commands", "add_program_options", "watch_program"]

GRADE_TIMEOUT = 10.0

Command = Callable[..., argparse.ArgumentParser]


class CommandLineError(SandboxError):
    """Bad input on the command line: printed as `sandbox: error: ...`, exit status 2."""


def add_commands(command: Command, where: argparse.ArgumentParser) -> None:
    """Register `init` and `grade` with the `sandbox` parser (`command(name, summary, handler, parents)`)."""
    init = command("init", "Start a Go module for the lesson's loop: sandbox init go DIR.", _init, [])
    init.add_argument("language", choices=["go"], help="the language of the new module (go)")
    init.add_argument("folder", type=Path, metavar="DIR", help="a new (or empty) folder for the module")
    grade_ = command(
        "grade",
        "Grade a program in any language on the challenges: sandbox grade [N] [options] -- COMMAND [ARGS...]",
        _grade,
        [where],
    )
    grade_.add_argument("number", nargs="?", metavar="N", help="a challenge: 2, 02 or 02_bounded_loop (default: all)")
    add_program_options(grade_)
    grade_.add_argument("--report", type=Path, default=None, metavar="PATH", help="write Gradescope results.json")
    room.add_join_options(grade_)


def add_program_options(parser: argparse.ArgumentParser) -> None:
    """How a program is built and graded: `grade`'s options, which `watch -- CMD` takes too."""
    parser.add_argument(
        "--wire",
        default=",".join(PROVIDERS),
        metavar="LIST",
        help=f"the wire formats the program speaks, comma-separated (default: {','.join(PROVIDERS)})",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=GRADE_TIMEOUT,
        metavar="S",
        help=f"seconds per case (default {GRADE_TIMEOUT:g})",
    )
    parser.add_argument(
        "--build",
        default=None,
        metavar="SHELL",
        help="a shell line to run once first, e.g. 'go build -o loop .' or 'cd loop && go build -o ../bin .'",
    )
    parser.add_argument(
        "--lang",
        choices=LANGUAGES,
        default=None,
        help="the program's language, for the names in the feedback (default: read from the command and the build)",
    )
    parser.add_argument(
        "--isolation",
        choices=("auto", "strict", "process"),
        default="auto",
        help="strict: only under bubblewrap (refuse without it); process: plain processes; auto (default): "
        "bubblewrap when usable",
    )
    parser.add_argument("--grade-as", default=None, metavar="USER", help="grading as root: run the program as USER")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="also say where the program runs when it is the default"
    )


def _init(args: argparse.Namespace) -> int:
    folder: Path = args.folder
    try:
        written = init_go(folder)
    except (ScaffoldError, OSError) as error:
        raise CommandLineError(str(error)) from None
    tops = sorted({path.parts[0] + ("/" if len(path.parts) > 1 else "") for path in written})
    print(f"Created a Go module in {folder} ({len(written)} files): {', '.join(tops)}")
    print("main.go holds the lesson's loop as the lesson writes it; skyl/ is the client it imports. Next:")
    print(f"    cd {folder}")
    print("    go build -o loop . && sandbox grade -- ./loop")
    return 0


def _grade(args: argparse.Namespace) -> int:
    chosen, run = _prepared(args, "grade")
    return room.around_grade(args, lambda observe: run([info.name for info in chosen], args.build, observe))


def watch_program(args: argparse.Namespace) -> int:
    """`sandbox watch [N] [options] -- CMD`: build and grade the program now and after each save of its
    source: challenge N, or each challenge in order up to the first that fails. `args.interval` is
    checked by the caller (`_challenges`)."""
    from ..grading.judge._progress import CLEAR
    from ..grading.programs._watch import watch

    chosen, run = _prepared(args, "watch")
    folder = Path.cwd()
    clear = sys.stdout.isatty()
    again = f"sandbox hint {chosen[0].number}" if len(chosen) == 1 else "sandbox hint N"
    language = args.lang or detect_language(args.program, args.build)
    if language in ("go", "js"):
        again += f" --lang {language}"

    def grade_once(built: Callable[[], None]) -> None:
        print(f"{CLEAR if clear else ''}=== {shlex.join(args.program)} ({time.strftime('%H:%M:%S')})", flush=True)
        for number, info in enumerate(chosen):
            build = args.build if number == 0 else None  # built once a save
            status = room.around_grade(args, functools.partial(run, [info.name], build, built=built))
            if status != 0:
                print(f"\nWaiting for you to save a file in {folder}... (stuck? {again}; Ctrl-C to stop)", flush=True)
                return
        print(f"\nEvery case passes. Waiting for you to save a file in {folder}... (Ctrl-C to stop)", flush=True)

    print(f"Watching {folder}: save a source file to build and grade again. Ctrl-C to stop.", flush=True)
    try:
        watch(grade_once, folder, interval=args.interval)
    except KeyboardInterrupt:
        print("\nStopped watching.")
    return 0


Run = Callable[..., int]
"""run(names, build, observe, built=None): grade these challenges after this build line (or none),
posting to this room observer (or None); `built()` is called once the build is done."""


def _prepared(args: argparse.Namespace, verb: str) -> tuple[list[ChallengeInfo], Run]:
    """The challenges `args` asks for, and a function that grades some of them (with a build line or none)."""
    from ..grading.programs._grade import grade, plan  # pytest and hypothesis: `check` and `list` start without them

    if not args.program:
        raise CommandLineError(
            f"sandbox {verb} needs the program to run after `--`, e.g.: sandbox {verb} 2 -- ./loop  or  "
            f"sandbox {verb} -- node examples/js/loop.mjs"
        )
    providers = [name.strip() for name in args.wire.split(",") if name.strip()]
    unknown = [name for name in providers if name not in PROVIDERS]
    if unknown or not providers:
        raise CommandLineError(f"--wire {args.wire}: use one or more of {', '.join(PROVIDERS)}, comma-separated.")
    if args.timeout <= 0:
        raise CommandLineError(f"--timeout {args.timeout}: use a number of seconds above 0.")
    from ..grading.boundary._isolation import IsolationError, choose

    try:
        isolation = choose(args.isolation, args.grade_as)
    except IsolationError as error:
        raise CommandLineError(str(error)) from None
    root = find_root(args.dir or Path.cwd())
    known = {info.name: info for info in load_challenges(root)} if root else {}
    programs = [known.get(name) or ChallengeInfo(name, Path(name)) for name in CASES]
    chosen = programs
    if args.number:
        candidates = [*programs, *(info for name, info in known.items() if name not in CASES)]
        try:
            found = select(candidates, args.number)
        except LookupError as error:
            raise CommandLineError(str(error)) from None
        if found.name not in CASES:
            choices = "\n".join(f"- {info.number}: {info.name}" for info in programs)
            raise CommandLineError(f"{found.name} grades Python code only so far. A program is graded on:\n{choices}")
        chosen = [found]
    language = args.lang or detect_language(args.program, args.build)
    titles = {info.name: program_title(info.name, info.title) for info in chosen}

    def run(names: list[str], build: str | None, observe: Any, built: Callable[[], None] | None = None) -> int:
        return grade(
            args.program,
            plan(names, providers),
            out=sys.stdout,
            timeout=args.timeout,
            report=getattr(args, "report", None),
            build=build,
            language=language,
            titles=titles,
            observe=observe,
            isolation=isolation,
            show_isolation=args.verbose
            or args.isolation != "auto"
            or not isolation.sandboxed
            or bool(isolation.unfiltered),
            built=built,
        )

    return chosen, run
