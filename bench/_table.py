"""What every row of `bench/run.py` shares: the `Row` it makes, the alternating rounds that time a
subject against its baseline (`compare`), the profile a missed row prints, and the table as written
into bench/RESULTS.md (between its markers: the only file here that the bench writes)."""

from __future__ import annotations

import cProfile
import gc
import io
import os
import platform
import pstats
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PROMPT = "What's the weather in Paris?"


@dataclass
class Row:
    """One line of the table. `ratio` is the figure; `measured` gives the absolute numbers behind it."""

    name: str
    ratio: float | None
    baseline: str
    target: str
    met: bool | None
    measured: str
    profile: Callable[[], str] | None = None
    """Prints where the subject's time goes; run for a missed target under --profile."""


@dataclass(frozen=True)
class Settings:
    quick: bool

    @property
    def rounds(self) -> int:
        return 5 if self.quick else 9

    def number(self, per_call_us: float) -> int:
        """Calls per round: about 40 ms (quick) or 80 ms of work."""
        budget = 40_000 if self.quick else 80_000
        return max(5, int(budget / per_call_us))


def compare(subjects: dict[str, Callable[[], object]], settings: Settings, per_call_us: float) -> dict[str, float]:
    """Best seconds per call of each callable, measured in rotating order round by round."""
    number = settings.number(per_call_us)
    names = list(subjects)
    for name in names:
        for _ in range(max(3, number // 5)):
            subjects[name]()
    best = dict.fromkeys(names, float("inf"))
    for round_index in range(settings.rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            call = subjects[name]
            gc.collect()
            started = time.perf_counter()
            for _ in range(number):
                call()
            best[name] = min(best[name], (time.perf_counter() - started) / number)
    return best


def timed_row(
    name: str,
    best: dict[str, float],
    subject: str,
    baseline: str,
    most: float,
    profile: Callable[[], str],
    gloss: str = "",
) -> Row:
    """The row of `compare`'s figures for `subject` against `best["baseline"]`, met at `most` times it
    (`gloss`: words after the target, as "(10x faster)")."""
    ratio = best[subject] / best["baseline"]
    measured = f"{best[subject] * 1e6:.0f} us vs {best['baseline'] * 1e6:.0f} us"
    target = f"<= {most:g}x" + (f" {gloss}" if gloss else "")
    return Row(name, ratio, baseline, target, ratio <= most, measured, profile)


def profile_of(call: Callable[[], object], number: int = 2000, top: int = 18) -> Callable[[], str]:
    def run() -> str:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(number):
            call()
        profiler.disable()
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(top)
        return trim_profile(out.getvalue())

    return run


def trim_profile(text: str) -> str:
    lines = [line.replace(str(ROOT) + "/", "").replace(sys.prefix + "/", "") for line in text.splitlines()]
    start = next((index for index, line in enumerate(lines) if "ncalls" in line), 0)
    total = next((line.strip() for line in lines if "function calls" in line), "")
    return "\n".join([total, *lines[start:]]).rstrip()


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = " / ".join(f"{value:.2f}" for value in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (
        f"{os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}), "
        f"{cpu}; Python {platform.python_version()} ({platform.python_implementation()}); "
        f"{platform.system()} {platform.release()}; load average before the run {load}"
    )


def render(rows: list[Row]) -> str:
    header = ["Row", "Ratio", "Baseline (same run)", "Target", "Met", "Measured"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        ratio = "n/a" if row.ratio is None else f"{row.ratio:.2f}x"
        met = {True: "yes", False: "**no**", None: "-"}[row.met]
        lines.append(f"| {row.name} | {ratio} | {row.baseline} | {row.target} | {met} | {row.measured} |")
    return "\n".join(lines)


def update_results(table: str, info: str, seconds: float) -> None:
    path = HERE / "RESULTS.md"
    text = path.read_text() if path.exists() else "# Benchmark results\n\n<!-- table -->\n<!-- /table -->\n"
    block = (
        f"<!-- table -->\nMachine: {info}.\nRun time: {seconds:.0f} s (`python bench/run.py`).\n\n{table}\n"
        "<!-- /table -->"
    )
    start, end = text.index("<!-- table -->"), text.index("<!-- /table -->") + len("<!-- /table -->")
    path.write_text(text[:start] + block + text[end:])
