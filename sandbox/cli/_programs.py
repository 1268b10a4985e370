"""The commands for learners in another language: `sandbox init go DIR` and `sandbox grade [N] -- CMD`.

`cli.py` registers them (`add_commands`); this module parses their options and hands the work to
`_scaffold` (a new Go module) and `grading.programs._grade` (the program, case by case). It touches only what
those do: the folder `init` is given, the report `grade` is asked for, and (with `--room`) the
workshop room the verdicts are posted to.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from .._exceptions import SandboxError
from ..grading.judge._language import LANGUAGES, detect_language
from ..grading.judge._meta import ChallengeInfo, find_root, load_challenges, select
from ..grading.programs._program_cases import CASES, program_title
from ..wire import PROVIDERS
from . import _room as room
from ._scaffold import ScaffoldError, init_go

__all__ = ["GRADE_TIMEOUT", "CommandLineError", "add_commands"]

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
    grade_.add_argument(
        "--wire",
        default=",".join(PROVIDERS),
        metavar="LIST",
        help=f"the wire formats the program speaks, comma-separated (default: {','.join(PROVIDERS)})",
    )
    grade_.add_argument("--report", type=Path, default=None, metavar="PATH", help="write Gradescope results.json")
    grade_.add_argument(
        "--timeout",
        type=float,
        default=GRADE_TIMEOUT,
        metavar="S",
        help=f"seconds per case (default {GRADE_TIMEOUT:g})",
    )
    grade_.add_argument(
        "--build",
        default=None,
        metavar="SHELL",
        help="a shell line to run once first, e.g. 'go build -o loop .' or 'cd loop && go build -o ../bin .'",
    )
    grade_.add_argument(
        "--lang",
        choices=LANGUAGES,
        default=None,
        help="the program's language, for the names in the feedback (default: read from the command and the build)",
    )
    grade_.add_argument(
        "--isolation",
        choices=("auto", "strict", "process"),
        default="auto",
        help="strict: only under bubblewrap (refuse without it); process: plain processes; auto (default): "
        "bubblewrap when usable",
    )
    grade_.add_argument("--grade-as", default=None, metavar="USER", help="grading as root: run the program as USER")
    grade_.add_argument(
        "-v", "--verbose", action="store_true", help="also say where the program runs when it is the default"
    )
    room.add_join_options(grade_)


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
    from ..grading.programs._grade import grade, plan  # pytest and hypothesis: `check` and `list` start without them

    if not args.program:
        raise CommandLineError(
            "sandbox grade needs the program to run after `--`, e.g.: sandbox grade 2 -- ./loop  or  "
            "sandbox grade -- node examples/js/loop.mjs"
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
    return room.around_grade(
        args,
        lambda observe: grade(
            args.program,
            plan([info.name for info in chosen], providers),
            out=sys.stdout,
            timeout=args.timeout,
            report=args.report,
            build=args.build,
            language=language,
            titles={info.name: program_title(info.name, info.title) for info in chosen},
            observe=observe,
            isolation=isolation,
            show_isolation=args.verbose
            or args.isolation != "auto"
            or not isolation.sandboxed
            or bool(isolation.unfiltered),
        ),
    )
