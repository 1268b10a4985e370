"""`sandbox grade` per case, by language: what a Go and a JavaScript learner wait for (issue 20).

    python bench/programs.py            15 rounds (about a minute)
    python bench/programs.py --quick    4 rounds (the smoke test)

Each round runs one `parallel_calls` case (five HTTP requests: the tools, two model requests, two
tool runs) of each subject on the grader's own endpoint, the subjects taking turns so that load from
other processes hits all of them alike; the figure is each subject's median, as a ratio to the Go
reference's in the same run:

- `examples/go/loop` (built here, into a temporary folder, GOPROXY=off): the baseline;
- `examples/js/loop.mjs` as it is (node:http over a kept-alive agent);
- the same loop doing its HTTP with the built-in `fetch` (a copy made here: the example's
  `request()` rewritten over fetch), which is what the issue measured at about 1.5 s a case;
- `node -e 0` with `node:http` imported: Node's own start, the floor under any JavaScript program.

Everything talks to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sandbox.engine._catalogue import get_scenario  # noqa: E402
from sandbox.grading.boundary._endpoint import Endpoint  # noqa: E402
from sandbox.grading.programs._program_dialogue import ProgramDialogue  # noqa: E402

JS_LOOP = ROOT / "examples" / "js" / "loop.mjs"
_FETCH_REQUEST = """function request(url, { method = "GET", headers = {}, body } = {}) {
  return fetch(url, { method, headers, body }).then(async (resp) => ({
    status: resp.status,
    headers: Object.fromEntries(resp.headers),
    text: await resp.text(),
  }));
}
"""


def fetch_variant(folder: Path) -> Path:
    """loop.mjs with its `request()` over the built-in fetch instead of node:http."""
    source = JS_LOOP.read_text()
    start = source.index("function request(")
    end = source.index("\n}\n", start) + 3
    path = folder / "loop_fetch.mjs"
    path.write_text(source[:start] + _FETCH_REQUEST + source[end:])
    return path


def build_go(folder: Path) -> Path:
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local", "CGO_ENABLED": "0"}
    env.setdefault("GOCACHE", str(folder / "cache"))
    binary = folder / "loop"
    subprocess.run(["go", "build", "-o", str(binary), "./loop"], cwd=ROOT / "examples" / "go", env=env, check=True)
    return binary


def one_case(command: list[str], endpoint: Endpoint) -> float:
    talk = ProgramDialogue(get_scenario("parallel_calls"), "openai")
    started = time.perf_counter()
    run = talk.run(command, 60, endpoint)
    seconds = time.perf_counter() - started
    if run.returncode != 0:
        raise SystemExit(f"{command} failed: {run.stderr[-500:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="4 rounds instead of 15")
    args = parser.parse_args()
    if not shutil.which("go") or not shutil.which("node"):
        raise SystemExit("bench/programs.py needs go and node on PATH")
    rounds = 4 if args.quick else 15
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        subjects = {
            "Go reference (baseline)": [str(build_go(folder))],
            "JavaScript, node:http": ["node", str(JS_LOOP)],
            "JavaScript, fetch": ["node", str(fetch_variant(folder))],
        }
        floor = ["node", "-e", "require('node:http')"]
        times: dict[str, list[float]] = {name: [] for name in [*subjects, "node start (floor)"]}
        endpoint = Endpoint()
        try:
            for _ in range(rounds):
                for name, command in subjects.items():
                    times[name].append(one_case(command, endpoint))
                started = time.perf_counter()
                subprocess.run(floor, check=True)
                times["node start (floor)"].append(time.perf_counter() - started)
        finally:
            endpoint.close()
    base = statistics.median(times["Go reference (baseline)"])
    load = " / ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"{rounds} rounds of one parallel_calls case each; load average after the run {load}\n")
    print("| Subject | Median per case | Range | Ratio to Go |")
    print("|---|---|---|---|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.3f} s | {min(values):.3f}-{max(values):.3f} s | {median / base:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
