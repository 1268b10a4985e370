"""A SHA-256 over everything the engine answers, to prove a speed change left the output byte-identical.

    python bench/fingerprint.py              every section; prints each section's hash, count and time
    python bench/fingerprint.py --sections catalogue,faults
    python bench/fingerprint.py --mask-answer-ids

`--mask-answer-ids` writes every id an answer issues for itself (`chatcmpl-...`, `msg_01...`,
`req_...`, `resp_...`, a conversation's and its items' ids) and the durations in
`openai-processing-ms` and `server-timing` as `<id>` before hashing: run on both sides of a change
to how those ids are derived, it proves that nothing else changed.

Run it on main before a change and after it: the hashes must match. Each section runs on fresh
engines (their answer counter numbers the ids), so the hash is the same on every run of the same code.
What one exchange contributes: the request (method, path, query, body), the status, the headers in
order, each chunk (an SSE frame is one), and what the doors and graders read beside the bytes (the
error's rule and message index, the scenario and step, the fault and its delivery).

Sections:
- `catalogue`: every scenario of the catalogue x 4 providers x plain/streamed x reasoning asked or
  not, each a tool loop through the skyl client (at most 6 rounds); `runaway` to a budget of 3; one
  request resent past the repeat guard.
- `faults`: every fault kind (with `times`, `after`, a provider filter, retry hints of 0 or 30 s) on each provider's
  `single_call` and `parallel_calls` conversations, plain and streamed, each request sent twice.
- `mutations`: every node of every distinct valid body of at most 60 nodes the catalogue sent (the
  first requests of each loop: about 500 bodies), replaced by each of 7 wrong-typed values, dropped,
  and duplicated (a list's item twice, an object's key twice): about 160,000 requests.
- `pool`: the serve bench's request pool (`bench/_serve.py: request_pool`), plain and streamed.
- `alt`: each Gemini stream body under the `alt=` queries a client may send, good and bad.

A 500 (`sandbox internal error`) anywhere is counted and printed: no request should cause one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import sandbox  # noqa: E402
from sandbox import skyl  # noqa: E402
from sandbox.engine._catalogue import catalogue  # noqa: E402
from sandbox.engine._engine import Engine, Exchange  # noqa: E402
from sandbox.wire import PROVIDERS  # noqa: E402

SECTIONS = ("catalogue", "faults", "mutations", "pool", "alt")
WRONG: tuple[Any, ...] = (None, True, 0, 1.5, "x", [], {})
MUTATED_NODES = 60
"""Bodies with more nodes than this are not mutated: longer histories add time, not new shapes."""
FAULTS = (  # each error's retry hint 0 (none) or 30 s (every resend is early): the hash never hangs on timing
    "rate_limit@1:retry_after=0",
    "rate_limit@2:times=2:retry_after=30",
    "overloaded@1:retry_after=0",
    "server_error@2:retry_after=30",
    "stream_error@1",
    "stream_error@2:after=2",
    "truncated@1:after=1",
    "cut@2",
    "cut@1:after=3",
    "latency@1:first_byte=0.01:between=0.001",
    "rate_limit@1:provider=anthropic:retry_after=30",
)
ALT_QUERIES = (None, "alt=sse", "alt=json", "", "alt=", "alt=xml", "alt=sse&alt=json", "key=k&alt=sse", "alt=%ff")

ANSWER_IDS = re.compile(
    rb"chatcmpl-[A-Za-z0-9]{29}|msg_01[1-9A-HJ-NP-Za-km-z]{22}|req_011C[1-9A-HJ-NP-Za-km-z]{20}"
    rb"|req_[0-9a-f]{32}|\b[a-z]+_[0-9a-f]{48}\b"
)
"""The shapes of the ids an answer issues for itself (`--mask-answer-ids`)."""
TIMED = ("openai-processing-ms", "server-timing")
"""Headers whose plausible durations derive from an answer's identity (`--mask-answer-ids`)."""

Sent = tuple[str, str | None, dict[str, str], bytes]
"""A request as the engine takes it: path, query, headers, body."""


class Fingerprint:
    """A running SHA-256 of exchanges, and the count of internal errors among them."""

    def __init__(self, mask: bool = False) -> None:
        self.mask = mask
        self.hash = hashlib.sha256()
        self.count = 0
        self.internal: list[str] = []

    def add(self, exchange: Exchange, query: str | None = None) -> None:
        self.count += 1
        error = exchange.error
        fields = (
            exchange.method,
            exchange.path,
            query,
            exchange.status,
            list(exchange.headers.items()),
            exchange.provider,
            exchange.scenario,
            exchange.step,
            None if error is None else (error.rule.value, error.message_index),
            repr(exchange.fault),
            repr(exchange.delivery),
        )
        if self.mask:
            headers = fields[4]
            fields = (*fields[:4], [(k, "<id>" if k in TIMED else v) for k, v in headers], *fields[5:])
        self._update(repr(fields).encode("utf-8", "surrogatepass") + b"\0")
        self._update(exchange.request_body + b"\0")
        for chunk in exchange.chunks:
            self._update(len(chunk).to_bytes(8, "big") + chunk)
        self.hash.update(b"\1")
        if exchange.status == 500 and b"sandbox internal error" in exchange.body:
            self.internal.append(f"{exchange.path}: {exchange.body[:300]!r} <- {exchange.request_body[:200]!r}")

    def _update(self, data: bytes) -> None:
        self.hash.update(ANSWER_IDS.sub(b"<id>", data) if self.mask else data)


def _result(scenario: str, round_: int, call: skyl.ToolCall) -> skyl.Message:
    """A deterministic tool result; `runaway_empty` gets nothing usable for two rounds, and
    `tool_error_recovery` an error first, as a loop meeting those tools would."""
    if scenario.startswith("runaway_empty") and round_ < 2:
        return skyl.tool_result_message(call.id, "")
    if scenario.startswith("tool_error_recovery") and round_ == 0:
        return skyl.tool_result_message(call.id, "error: city not found", is_error=True)
    return skyl.tool_result_message(call.id, f"{call.name}: {json.dumps(dict(call.arguments), sort_keys=True)} ok")


def _loop(engine: Engine, provider: str, name: str, *, stream: bool, reasoning: bool, rounds: int = 6) -> None:
    scenario = engine.scenarios[name]
    client = skyl.Client(provider, api_key="fingerprint-key", transport=sandbox.transport(engine=engine))
    req = skyl.Request(
        model=name, messages=[skyl.user_text(scenario.prompt)], tools=list(scenario.tools), reasoning=reasoning
    )
    for round_ in range(rounds):
        try:
            resp = skyl.collect_stream(client.stream(req)) if stream else client.complete(req)
        except sandbox.ProviderError:
            return
        if not resp.tool_calls():
            return
        req.messages.append(resp.message)
        req.messages.extend(_result(name, round_, call) for call in resp.tool_calls())


class Recording:
    """Engines whose every exchange goes into one fingerprint, and the valid requests they answered."""

    def __init__(self, fingerprint: Fingerprint) -> None:
        self.fingerprint = fingerprint
        self.valid: list[Sent] = []

    def engine(self, **options: Any) -> Engine:
        fingerprint, valid = self.fingerprint, self.valid
        engine = Engine(**options)
        handle = engine.handle

        def recorded(
            method: str,
            path: str,
            body: bytes,
            *,
            client: str = "",
            query: str | None = None,
            headers: Any = None,
        ) -> Exchange:
            exchange = handle(method, path, body, client=client, query=query, headers=headers)
            fingerprint.add(exchange, query)
            if exchange.status == 200:
                valid.append((path, query, dict(headers or {}), body))
            return exchange

        engine.handle = recorded  # type: ignore[method-assign]
        return engine


def catalogue_runs(recording: Recording) -> None:
    for name in sorted(catalogue()):
        for provider in PROVIDERS:
            for stream in (False, True):
                for reasoning in (False, True):
                    _loop(recording.engine(), provider, name, stream=stream, reasoning=reasoning)
    for provider in PROVIDERS:
        for stream in (False, True):
            _loop(recording.engine(budget=3), provider, "runaway", stream=stream, reasoning=False)
    for provider in PROVIDERS:
        engine = recording.engine()
        _loop(engine, provider, "single_call", stream=False, reasoning=False, rounds=1)
        path, query, headers, body = recording.valid[-1]
        for _ in range(52):
            engine.handle("POST", path, body, client="repeater", query=query, headers=headers)


def _conversations(provider: str) -> Iterator[list[Sent]]:
    for name in ("single_call", "parallel_calls"):
        for stream in (False, True):
            recording = Recording(Fingerprint())
            _loop(recording.engine(), provider, name, stream=stream, reasoning=False)
            yield recording.valid


def fault_runs(fingerprint: Fingerprint) -> None:
    for provider in PROVIDERS:
        for conversation in _conversations(provider):
            for spec in FAULTS:
                engine = Engine(faults=spec)
                for index, (path, query, headers, body) in enumerate(conversation):
                    for _ in range(2):
                        exchange = engine.handle("POST", path, body, client=f"f{index}", query=query, headers=headers)
                        fingerprint.add(exchange, query)


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _nodes(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _nodes(inner, (*path, index))


def _dumps_duplicating(value: Any, target: tuple[Any, ...], path: tuple[Any, ...] = ()) -> str:
    """`value` as JSON text with the object key at `target` written twice (its last component)."""
    if isinstance(value, dict):
        parts = []
        for key, inner in value.items():
            text = f"{json.dumps(key)}:{_dumps_duplicating(inner, target, (*path, key))}"
            parts.append(text)
            if (*path, key) == target:
                parts.append(text)
        return "{" + ",".join(parts) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dumps_duplicating(inner, target, (*path, i)) for i, inner in enumerate(value)) + "]"
    return json.dumps(value)


def _mutants(body: bytes) -> Iterator[bytes]:
    data = json.loads(body)
    nodes = list(_nodes(data))
    if len(nodes) > MUTATED_NODES:
        return
    for path in nodes[1:]:
        *head, last = path
        for wrong in WRONG:
            copy = json.loads(body)
            parent = copy
            for key in head:
                parent = parent[key]
            parent[last] = wrong
            yield json.dumps(copy).encode()
        copy = json.loads(body)
        parent = copy
        for key in head:
            parent = parent[key]
        if isinstance(parent, list):
            parent.insert(last, parent[last])
            yield json.dumps(copy).encode()
            del parent[last]
            del parent[last]
            yield json.dumps(copy).encode()
        else:
            del parent[last]
            yield json.dumps(copy).encode()
            yield _dumps_duplicating(data, path).encode()


def mutation_runs(fingerprint: Fingerprint, valid: list[Sent]) -> None:
    seen: set[tuple[str, bytes]] = set()
    for path, query, headers, body in valid:
        if (path, body) in seen:
            continue
        seen.add((path, body))
        engine = Engine()
        for index, mutant in enumerate(_mutants(body)):
            exchange = engine.handle("POST", path, mutant, client=f"m{index}", query=query, headers=headers)
            fingerprint.add(exchange, query)


def pool_runs(fingerprint: Fingerprint) -> None:
    import _serve

    for stream in (False, True):
        engine = Engine()
        for index, raw in enumerate(_serve.request_pool(stream, 4000)):
            head, body = raw.split(b"\r\n\r\n", 1)
            path, _, query = head.split(b" ")[1].decode().partition("?")
            headers = {"content-type": "application/json"}
            exchange = engine.handle("POST", path, body, client=f"c{index % 64}", query=query or None, headers=headers)
            fingerprint.add(exchange, query or None)


def alt_runs(fingerprint: Fingerprint, valid: list[Sent]) -> None:
    engine = Engine()
    for index, (path, _, headers, body) in enumerate(valid):
        if path.endswith(":streamGenerateContent"):
            for query in ALT_QUERIES:
                exchange = engine.handle("POST", path, body, client=f"a{index}", query=query, headers=headers)
                fingerprint.add(exchange, query)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"some of: {','.join(SECTIONS)}")
    parser.add_argument("--mask-answer-ids", action="store_true", help="hash every answer's own ids as <id>")
    args = parser.parse_args(argv)
    chosen = [name for name in args.sections.split(",") if name]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; use some of {', '.join(SECTIONS)}")
    total = hashlib.sha256()
    catalogue_fp = Fingerprint(args.mask_answer_ids)
    recording = Recording(catalogue_fp)
    started = time.perf_counter()
    catalogue_runs(recording)  # every other section reads its valid bodies
    catalogue_seconds = time.perf_counter() - started
    runs: dict[str, Callable[[Fingerprint], None]] = {
        "faults": fault_runs,
        "mutations": lambda fp: mutation_runs(fp, recording.valid),
        "pool": pool_runs,
        "alt": lambda fp: alt_runs(fp, recording.valid),
    }
    internal = 0
    for name in chosen:
        started = time.perf_counter()
        if name == "catalogue":
            fingerprint = catalogue_fp
        else:
            fingerprint = Fingerprint(args.mask_answer_ids)
            runs[name](fingerprint)
        seconds = catalogue_seconds if name == "catalogue" else time.perf_counter() - started
        digest = fingerprint.hash.hexdigest()
        total.update(f"{name}:{digest}".encode())
        print(f"{name:10} {digest}  {fingerprint.count:7} exchanges  {seconds:6.1f} s")
        for line in fingerprint.internal[:5]:
            print(f"  internal error: {line}")
        internal += len(fingerprint.internal)
    print(f"{'all':10} {total.hexdigest()}  ({','.join(chosen)})")
    if internal:
        print(f"{internal} internal errors")
    return 1 if internal else 0


if __name__ == "__main__":
    raise SystemExit(main())
