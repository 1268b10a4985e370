"""The commands that work through the challenges: `list`, `check`, `hint`, `watch` and `solution`.

`_main` registers them (`add_commands`); each finds the challenges folder (`--dir`, or the one at or
above the working directory) and hands the work to `grading.judge` (progress, grading with pytest).
May touch: the challenges folder's state file (hints shown), and with `--room` the workshop room the
verdicts are posted to; `watch -- CMD` hands over to `_programs`.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from ..grading.judge._language import translate
from ..grading.judge._meta import ChallengeInfo, find_root, load_challenges, select
from ..grading.judge._progress import Progress
from ..grading.judge._state import State
from . import _room as room
from ._programs import Command, CommandLineError, add_program_options, watch_program

__all__ = ["add_commands"]


def add_commands(command: Command, where: argparse.ArgumentParser) -> None:
    """Register the challenge commands with the `sandbox` parser (`command(name, summary, handler, parents)`)."""
    command("list", "List the challenges with their status and a progress bar.", _list, [where])
    check = command("check", "Grade challenge N with pytest (every challenge without N).", _check, [where])
    check.add_argument("number", nargs="?", metavar="N", help="a challenge: 2, 02 or 02_bounded_loop")
    room.add_join_options(check)
    hint = command("hint", "Show the next hint for challenge N (one more each time).", _hint, [where])
    hint.add_argument("number", metavar="N", help="a challenge: 2, 02 or 02_bounded_loop")
    hint.add_argument(
        "--lang",
        choices=("python", "go", "js"),
        default="python",
        help="the hints for your language: python (the exercises, default), or go or js (a program "
        "graded with sandbox grade)",
    )
    watch = command(
        "watch",
        "Re-grade on every save: the first unfinished challenge, one failure at a time; with -- COMMAND, a "
        "program, built again (--build) and graded on challenge N (or each in order up to the first failing).",
        _watch,
        [where],
    )
    watch.add_argument("number", nargs="?", metavar="N", help="a challenge: 2, 02 or 02_bounded_loop (default: all)")
    watch.add_argument(
        "--interval", type=float, default=0.2, metavar="S", help="seconds between looks for a save (default 0.2)"
    )
    add_program_options(watch)
    room.add_join_options(watch)
    solution = command("solution", "Show the reference solution of challenge N, once N passes.", _solution, [where])
    solution.add_argument("number", metavar="N", help="a challenge: 2, 02 or 02_bounded_loop")


def _challenges(args: argparse.Namespace) -> tuple[Path, list[ChallengeInfo]]:
    start = args.dir or Path.cwd()
    root = find_root(start)
    if root is None:
        raise CommandLineError(
            f"no challenges folder at or above {start} (looking for challenges/hints.toml). Run sandbox "
            "from your clone of skyl-sandbox, or pass --dir path/to/challenges."
        )
    return root, load_challenges(root)


def _pick(challenges: list[ChallengeInfo], number: str) -> ChallengeInfo:
    try:
        return select(challenges, number)
    except LookupError as error:
        raise CommandLineError(str(error)) from None


def _list(args: argparse.Namespace) -> int:
    root, challenges = _challenges(args)
    progress = Progress(root, challenges)
    print(f"Challenges in {root}\n")
    print("\n".join(progress.lines(progress.tallies())))
    return 0


def _check(args: argparse.Namespace) -> int:
    room.join_from(args)
    root, challenges = _challenges(args)
    chosen = [_pick(challenges, args.number)] if args.number else challenges
    return Progress(root, challenges).run_here(chosen)


def _hint(args: argparse.Namespace) -> int:
    root, challenges = _challenges(args)
    info = _pick(challenges, args.number)
    hints = info.hints_for(args.lang)
    if not hints:
        raise CommandLineError(f"{info.name} has no hints in {root / 'hints.toml'}.")
    state = State(root)
    shown = min(state.hints.get(info.name, 0) + 1, len(hints))
    state.hints[info.name] = shown
    state.save()
    print(f"{info.name}: {info.title}")
    print(_wrap("Rule: ", translate(info.rule, args.lang)))
    for number, text in enumerate(hints[:shown], 1):
        print()
        print(_wrap(f"Hint {number}/{len(hints)}: ", text))
    print()
    if shown < len(hints):
        again = f"sandbox hint {info.number}" + (f" --lang {args.lang}" if args.lang != "python" else "")
        print(f"Run `{again}` again for the next hint.")
    else:
        print(f"That was the last hint. Read {info.folder / 'README.md'} again, and the transcript in the failure.")
    return 0


def _watch(args: argparse.Namespace) -> int:
    if args.interval <= 0:
        raise CommandLineError(f"--interval {args.interval}: use a number of seconds above 0.")
    if args.program:
        return watch_program(args)
    room.join_from(args)
    root, challenges = _challenges(args)
    if args.number:
        challenges = [_pick(challenges, args.number)]
    print(f"Watching {root}: save a file to grade it again. Ctrl-C to stop.", flush=True)
    try:
        Progress(root, challenges).watch(args.interval, lambda text: print(text, flush=True), clear=sys.stdout.isatty())
    except KeyboardInterrupt:
        print("\nStopped watching.")
    return 0


def _solution(args: argparse.Namespace) -> int:
    root, challenges = _challenges(args)
    info = _pick(challenges, args.number)
    tally = Progress(root, [info]).tallies()[info.name]
    if tally.status != "passed":
        print(
            f"{info.name} is {tally.status} ({tally.passed}/{tally.total} tests pass). Its solution unlocks once "
            f"`sandbox check {info.number}` passes; `sandbox hint {info.number}` reveals hints one at a time.",
            file=sys.stderr,
        )
        return 1
    path = root.parent / "solutions" / f"{info.name}.py"
    if not path.is_file():
        raise CommandLineError(f"no reference solution at {path}.")
    print(f"# {path}: compare it with your {info.exercise.name}\n")
    print(path.read_text(encoding="utf-8"), end="")
    return 0


def _wrap(label: str, text: str) -> str:
    return textwrap.fill(text, 100, initial_indent=label, subsequent_indent=" " * len(label))
