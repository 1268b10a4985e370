"""The `sandbox` command: work through the challenges, read the scenarios, serve the sandbox.

sandbox list                 each challenge with its status and a progress bar
sandbox check [N]            grade challenge N (or all of them)
sandbox hint N               the next hint for challenge N
sandbox watch                re-grade on save: the first unfinished challenge, one failure at a time
sandbox solution N           the reference solution, once N passes
sandbox scenarios            the scenario catalogue
sandbox replay SCENARIO      a reference run of a scenario, request by request
sandbox serve                the sandbox over HTTP, for SDKs, curl, or a room
sandbox room                 the sandbox with a workshop room: a live page of every learner's progress
sandbox init go DIR          a Go module with the lesson's loop and the skyl client, from an empty folder
sandbox grade [N] -- CMD     grade a program in any language (Go, JavaScript, ...) on the challenges
sandbox watch [N] -- CMD     build (--build) and grade it again on every save of its source
sandbox record --upstream U  a recording proxy: a real provider's traffic becomes a scenario
sandbox import CASSETTE...   vcrpy / pytest-recording cassettes become scenarios
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from .. import skyl
from .._exceptions import SandboxError
from ..adapters._asgi import SandboxApp, cors_origins_of
from ..adapters._control import ControlApp
from ..adapters._serve import forwarded_ips_of, serve
from ..adapters._transport import transport
from ..adapters._workers import serve_workers
from ..engine import _catalogue
from ..engine._engine import DEFAULT_BUDGET, ECHO_MODES, Engine
from ..engine._scenario import Scenario
from ..engine.kept import DEFAULT_MAX_KEPT
from ..grading.judge._transcript import describe_call, describe_message, quote
from ..wire import PROVIDERS
from . import _challenges as challenges
from . import _record as record
from . import _room as room
from ._programs import add_commands

__all__ = ["main"]

REPLAY_ROUNDS = 5
MAX_WORKERS = 256


class CommandError(Exception):
    """Bad input on the command line: printed as `sandbox: error: ...`, exit status 2."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    words = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if words[:1] in (["grade"], ["watch"]) and "--" in words:  # everything after `--` is the program to grade
        split = words.index("--")
        words, command = words[:split], words[split + 1 :]
    try:
        args = parser.parse_args(words)
        args.program = command
        return int(args.handler(args))
    except (CommandError, SandboxError) as error:
        print(f"sandbox: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`sandbox scenarios | head`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors in the one-line form every other error of the command uses."""

    def error(self, message: str) -> NoReturn:
        raise CommandError(f"{message} (see `{self.prog} --help`)")


def _port(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 0 <= int(text) <= 65535:  # '²' is a digit to isdigit
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port: use a number from 1 to 65535 (0: any free one)")
    return int(text)


def _workers(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of worker processes: use 1 to {MAX_WORKERS} (about one per CPU core)"
        )
    return int(text)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="sandbox",
        description="skyl-sandbox: graded tool-loop challenges and an offline fake LLM provider.",
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True, parser_class=_Parser)
    where = _Parser(add_help=False)
    where.add_argument(
        "--dir", type=Path, default=None, help="the challenges folder (default: ./challenges, or the one above)"
    )

    def command(name: str, summary: str, handler: object, parents: list[_Parser]) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=summary, description=summary, parents=parents)
        sub.set_defaults(handler=handler)
        return sub

    challenges.add_commands(command, where)  # list, check, hint, watch, solution
    command("scenarios", "List the scenario catalogue with descriptions.", _scenarios, [])
    replay = command("replay", "Run the lesson's loop on a scenario and print the transcript.", _replay, [])
    replay.add_argument("scenario", help="a scenario name (see `sandbox scenarios`)")
    replay.add_argument("--provider", default="openai", choices=PROVIDERS, help="the wire format (default openai)")
    replay.add_argument("--wire", action="store_true", help="also print each request and response body")
    serve_ = command("serve", "Serve the sandbox over HTTP: all four wire formats at their real paths.", _serve, [])
    room_ = command("room", room.SUMMARY, _serve, [])
    room_.set_defaults(room=True)
    for sub in (serve_, room_):
        sub.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
        sub.add_argument("--port", type=_port, default=8765, help="port (default 8765)")
        sub.add_argument("--scenario", default=None, help="answer every request with this scenario")
        sub.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="model requests per conversation")
        sub.add_argument("--scenarios", type=Path, default=None, metavar="DIR", help="also load DIR/*.toml")
        faults = "faults in every conversation, e.g. 'rate_limit@2,cut@3:after=2'"
        sub.add_argument("--faults", default=None, metavar="SPEC", help=faults)
        echo = "faithful (default): answer what the real provider answers; strict: also refuse rebuilt turns"
        sub.add_argument("--echo", choices=ECHO_MODES, default="faithful", help=echo)
        cors = "answer browsers from this origin only, e.g. http://localhost:3000 (repeatable; default: any)"
        sub.add_argument("--cors-origin", action="append", metavar="ORIGIN", help=cors)
        sub.add_argument("--kept", type=int, default=DEFAULT_MAX_KEPT, metavar="N", help="stored states (2000)")
        sub.add_argument("--kept-mib", type=float, default=64.0, metavar="M", help="MiB they may hold (64)")
        store = (
            "where kept state lives: memory (the default for one worker), sqlite:///PATH (the default for "
            "several: a new file) or redis://HOST:PORT/DB (several machines)"
        )
        sub.add_argument("--store", default=None, metavar="URL", help=store)
        workers = "worker processes sharing the port and the store (1)"
        sub.add_argument("--workers", type=_workers, default=1, metavar="N", help=workers)
        forwarded = "proxies whose X-Forwarded-For names the client: addresses or networks, comma-separated, or *"
        sub.add_argument("--forwarded-allow-ips", default=None, metavar="IPS", help=forwarded)
        room.add_options(sub, flag=sub is serve_)
        record.add_port_file(sub)
    record.add_control_options(serve_)
    verify = command("verify", room.VERIFY_SUMMARY, room.verify, [])
    room.add_verify_options(verify)
    add_commands(command, where)  # init, grade: for learners in another language (`_program_cli`)
    record.add_commands(command, _port)  # record, import: scenarios from real traffic
    return parser


# -- the sandbox -------------------------------------------------------------------------------------


def _scenarios(args: argparse.Namespace) -> int:
    for name, scenario in sorted(_catalogue.catalogue().items()):
        print(name)
        print(textwrap.fill(scenario.description, 100, initial_indent="    ", subsequent_indent="    "))
        print()
    print("A request's model field names its scenario: skyl.Request(model='single_call', ...).")
    return 0


def _replay(args: argparse.Namespace) -> int:
    """The lesson's loop, bounded at 5 rounds, with the scenario's own tool outputs."""
    from ..grading.judge._dialogue import call_key  # pytest, which only replay and grade need

    scenario = _catalogue.get_scenario(args.scenario)
    mounted = transport(scenario)
    client = skyl.Client(args.provider, transport=mounted)
    request = skyl.Request(
        model=scenario.name,
        messages=[skyl.user_text(scenario.prompt)],
        tools=list(scenario.tools),
        reasoning=scenario.reasoning,  # a reasoning scenario shows what the model thought
    )
    summary = " ".join(scenario.description.split()).split(". ")[0].rstrip(".")
    print(f"Scenario {scenario.name} on {args.provider}: {summary}.\n")
    history: list[str] = []
    for number in range(1, REPLAY_ROUNDS + 1):
        label = f"request {number}"
        if number == 1:
            print(_step(label, "user", quote(scenario.prompt)))
            label = ""
        response = client.complete(request)
        if args.wire:
            exchange = mounted.journal[-1]
            print(f"\n--- request {number}: POST {exchange.path}\n{_indented(exchange.request_body)}")
            print(f"--- response {number}: {exchange.status}\n{_indented(exchange.body)}\n")
        for part in response.message.reasoning():
            print(_step(label, "think", quote(part.summary, 80) if part.summary else f"({_hidden(part)})"))
            label = ""
        print(_step(label, "reply", describe_message(response.message)))
        calls = response.tool_calls()
        if not calls:
            print(f"\nDone after {number} request(s): the model answered without asking for tools.")
            return 0
        request.messages.append(response.message)
        for call in calls:
            output = scenario.tool_outputs.get(call_key(call), "")
            history.append(call.name)
            print(_step("", "run", f"{describe_call(call)} -> {quote(output)}"))
            request.messages.append(skyl.tool_result_message(call.id, output))
    print(
        f"\nThe loop gave up after {REPLAY_ROUNDS} tool rounds; call sequence was [{' '.join(history)}]: "
        "check what these tools return."
    )
    return 0


def _hidden(part: skyl.Reasoning) -> str:
    return "redacted thinking" if part.redacted else f"hidden reasoning, sent back as {part.provider} sent it"


def _indented(body: bytes) -> str:
    """A JSON body made readable; a stream's SSE frames as they were sent."""
    try:
        return json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except ValueError:
        return body.decode("utf-8", errors="replace")


def _step(label: str, role: str, text: str) -> str:
    return f"{label:<11}{role:<7}{text}"


def _serve(args: argparse.Namespace) -> int:
    if args.scenarios is not None and not args.scenarios.is_dir():
        raise CommandError(f"--scenarios {args.scenarios}: no such folder of *.toml scenario files.")
    scenarios = _catalogue.load_scenarios([args.scenarios]) if args.scenarios else None
    shadowed = sorted(set(scenarios or ()) & set(_catalogue.catalogue()))
    if shadowed:
        raise CommandError(
            f"--scenarios {args.scenarios}: {', '.join(map(repr, shadowed))} is also the name of a built-in "
            "scenario, and a request's model name must pick one scenario. Rename it in its file."
        )
    args.cors_origin = cors_origins_of(args.cors_origin)
    args.forwarded_allow_ips = forwarded_ips_of(args.forwarded_allow_ips)
    token = record.control_token(args) if hasattr(args, "control") else None
    if token is not None and args.room:
        raise CommandError("--control serves the sandbox alone: drop --room, or --control.")
    if args.room and args.store is not None and args.store.startswith(("redis://", "rediss://")):
        raise CommandError(
            f"--store {args.store} with a workshop room: a room is one workshop on one machine (its learners and "
            "runs are in one SQLite file, --room-db), so it is not shared through Redis. Drop --store (add "
            "--workers N for more processes on this machine), or serve a lesson site without a room: "
            "sandbox serve --store redis://... --workers N."
        )
    if args.workers > 1 and token is not None:
        raise CommandError(
            f"--workers {args.workers} with --control: the control API reads and resets one process's journal. "
            "Drop --workers (one process), or --control."
        )
    if args.workers > 1 and args.store == "memory":
        raise CommandError(
            f"--workers {args.workers} --store memory: memory is one process's own, and each worker is a process, "
            "so a continuation that reached another worker would not be found. Leave --store out (the workers "
            "then share a new SQLite file), or name one: --store sqlite:///kept.db or --store redis://HOST:PORT/0."
        )
    args.store_note = ""
    with contextlib.ExitStack() as stack:
        if args.store is None and args.workers > 1:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="sandbox-store-"))
            args.store = f"sqlite:///{Path(folder) / 'kept.db'}"
            args.store_note = " (removed when the server stops; name one with --store to keep it)"
        return _serve_with(args, scenarios, token)


def _serve_with(args: argparse.Namespace, scenarios: dict[str, Scenario] | None, token: str | None) -> int:
    engine_class = room.RecordingEngine if args.room else Engine
    make_engine = functools.partial(
        engine_class,
        args.scenario,
        scenarios=scenarios,
        budget=args.budget,
        faults=args.faults,
        echo=args.echo,
        kept=args.kept,
        kept_mib=args.kept_mib,
        store=args.store or "memory",
    )
    engine = make_engine()  # in this process too: a bad option or store is one clear error before any worker

    def banner(port: int) -> None:
        """Printed once the port is bound (the one chosen for --port 0), so a taken port prints only its error."""
        base = f"http://{args.host}:{port}"
        print(f"Serving the sandbox at {base} (Ctrl-C to stop).")
        print(f"  OpenAI (Chat and Responses): base_url={base}/v1    Anthropic, Gemini: base_url={base}")
        if engine.pinned is not None:
            print(f"  Every request plays scenario {engine.pinned.name!r}.")
        else:
            print(f"  The model name picks the scenario: {', '.join(sorted(engine.scenarios))}.")
        if engine.faults.faults:
            print(f"  Faults in every conversation: {', '.join(map(repr, engine.faults.faults))}.")
        if engine.strict:
            print("  Strict echo: rebuilt model turns and undeclared tools are refused, as the graders refuse them.")
        if args.workers > 1:
            print(f"  {args.workers} worker processes, sharing kept state in {args.store}{args.store_note}.")
        if args.host not in ("127.0.0.1", "localhost", "::1"):
            print(f"  Listening on {args.host}: anyone who can reach this machine can use it.")
        if token is not None:
            print(f"  Control API at {base}/_sandbox/ (journal, reset, scenarios): Authorization: Bearer {token}")
        sys.stdout.flush()
        record.write_port_file(args.port_file, port)

    if args.room:
        return room.serve_room(args, engine, make_engine, banner)
    options = {"host": args.host, "port": args.port, "cors_origins": args.cors_origin, "ready": banner}
    if args.workers > 1:
        serve_workers(make_engine, workers=args.workers, forwarded_allow_ips=args.forwarded_allow_ips, **options)
    elif token is None:
        serve(engine, forwarded_allow_ips=args.forwarded_allow_ips, **options)
    else:
        control = token

        def wrap(app: SandboxApp) -> ControlApp:
            return ControlApp(app, control)

        serve(engine, forwarded_allow_ips=args.forwarded_allow_ips, wrap=wrap, **options)
    return 0
