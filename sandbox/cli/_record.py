"""The commands that make scenarios from real traffic: `sandbox record` and `sandbox import`, and
the server-control options `sandbox serve` shares with `record` (`--port-file`, `--control`).

`record` serves `sandbox.adapters._record`'s proxy in front of `--upstream`; `import` reads
cassettes with `sandbox.engine._cassettes`. Both write the scenario with `sandbox.engine._recorded`.
They touch the folder `--out` names, and `--port-file`.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from .._exceptions import SandboxError
from ..engine._cassettes import read_cassette, scenario_name
from ..engine._recorded import scenarios_from

__all__ = ["CONTROL_TOKEN_ENV", "add_commands", "add_control_options", "control_token", "write_port_file"]

Command = Callable[..., argparse.ArgumentParser]
CONTROL_TOKEN_ENV = "SANDBOX_CONTROL_TOKEN"
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class RecordError(SandboxError):
    """Bad input to `record` or `import`: printed as `sandbox: error: ...`, exit status 2."""


def add_commands(command: Command, port: Callable[[str], int]) -> None:
    """Register `record` and `import` with the `sandbox` parser."""
    record = command(
        "record", "Record a real provider's traffic as a scenario: a proxy in front of --upstream.", _record, []
    )
    record.add_argument(
        "--upstream", required=True, metavar="URL", help="the provider's base URL, e.g. https://api.openai.com"
    )
    record.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    record.add_argument("--port", type=port, default=8766, help="port (default 8766; 0: any free one)")
    record.add_argument(
        "--out", type=Path, default=Path("recordings"), metavar="DIR", help="where to write (./recordings)"
    )
    record.add_argument("--name", default="recorded", help="the scenario's name and the files' (default recorded)")
    add_port_file(record)
    imported = command("import", "Turn vcrpy / pytest-recording cassettes into scenarios.", _import, [])
    imported.add_argument("cassettes", nargs="+", type=Path, metavar="CASSETTE", help="YAML or JSON cassette files")
    imported.add_argument("--out", type=Path, default=Path("."), metavar="DIR", help="where to write (default .)")
    imported.add_argument("--name", default=None, help="the scenario's name (one cassette; default: its file name)")


def add_port_file(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--port-file", type=Path, default=None, metavar="PATH", help="write the bound port there once listening"
    )


def add_control_options(parser: argparse.ArgumentParser) -> None:
    """`sandbox serve`'s control API options."""
    parser.add_argument(
        "--control", action="store_true", help="open the control API under /_sandbox/ (journal, reset, scenarios)"
    )
    parser.add_argument(
        "--control-token",
        default=None,
        metavar="TOKEN",
        help=f"the control API's token (default: ${CONTROL_TOKEN_ENV}, else one made and printed)",
    )


def control_token(args: argparse.Namespace) -> str | None:
    """The control API's token, or None when the API stays off."""
    given = args.control_token or os.environ.get(CONTROL_TOKEN_ENV)
    if not args.control:
        if args.control_token:
            raise RecordError("--control-token is the control API's token: add --control to open the API.")
        return None
    if given is not None and len(given) < 16:
        raise RecordError("--control-token: use at least 16 characters (or leave it out: one is made for you).")
    return given or secrets.token_urlsafe(24)


def write_port_file(path: Path | None, port: int) -> None:
    """Write the bound port, whole or not at all: a reader polling the file never sees half of it."""
    if path is None:
        return
    partial = path.with_name(f".{path.name}.part")
    try:
        partial.write_text(f"{port}\n", encoding="utf-8")
        partial.replace(path)
    except OSError as exc:
        raise RecordError(f"--port-file {path}: cannot write it ({exc.strerror or exc}).") from None


def _upstream(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise RecordError(
            f"--upstream {text}: give the provider's base URL, a scheme and a host (and a port or a path if "
            "any), e.g. --upstream https://api.anthropic.com or --upstream http://127.0.0.1:8765"
        )
    return text.rstrip("/")


def _name(text: str, option: str) -> str:
    if not _NAME.match(text):
        raise RecordError(
            f"{option} {text}: a scenario name is 1 to 64 letters, digits, _ or - (it is the model name)."
        )
    return text


def _record(args: argparse.Namespace) -> int:
    from ..adapters._record import Recorder, RecordingProxy, run_proxy  # httpx's async client, uvicorn

    upstream = _upstream(args.upstream)
    name = _name(args.name, "--name")
    try:
        recorder = Recorder(args.out, name, upstream)
    except OSError as exc:
        raise RecordError(f"--out {args.out}: cannot write there ({exc.strerror or exc}).") from None

    def ready(port: int) -> None:
        base = f"http://{args.host}:{port}"
        print(f"Recording at {base}, forwarding to {upstream} (Ctrl-C to stop).")
        print(f"  OpenAI: base_url={base}/v1    Anthropic, Gemini: base_url={base}")
        print(f"  Writing {recorder.out / (name + '.toml')} (the scenario) and {recorder.raw} (each exchange);")
        print("  API keys, auth headers, cookies and key= parameters are never written.")
        sys.stdout.flush()
        write_port_file(args.port_file, port)

    run_proxy(RecordingProxy(upstream, recorder), host=args.host, port=args.port, ready=ready)
    if recorder.written:
        print(f"Recorded {recorder.exchanges} exchange(s): {', '.join(map(str, recorder.written))}.")
    else:
        print(f"No model conversation passed through: nothing but {recorder.raw} was written.")
    return 0


def _import(args: argparse.Namespace) -> int:
    if args.name is not None:
        _name(args.name, "--name")
        if len(args.cassettes) > 1:
            raise RecordError("--name names one cassette's scenario: give one cassette, or leave --name out.")
    if not args.out.is_dir():
        raise RecordError(f"--out {args.out}: no such folder.")
    empty = 0
    for cassette in args.cassettes:
        recordings = read_cassette(cassette)
        name = args.name or scenario_name(cassette)
        found = scenarios_from(recordings, name=name, source=cassette.name)
        if not found:
            print(f"{cassette}: no model request of the four wire formats; nothing written.", file=sys.stderr)
            empty += 1
        for scenario, text in found:
            path = args.out / f"{scenario}.toml"
            path.write_text(text, encoding="utf-8")
            print(f"{cassette} -> {path}")
    return 1 if empty else 0
