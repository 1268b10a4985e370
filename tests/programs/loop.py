"""The lesson's tool loop as a program, standard library only: what `sandbox grade` runs in the tests.

It speaks OpenAI Chat and Anthropic, streaming or not, through the contract's environment, runs
each turn's calls on threads, and retries a 429, 503, 529 or a broken answer after the provider's
hint (challenge 10). `--mistake NAME` makes one of the lesson's mistakes, so the tests can check that
each one fails with its rule named.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

MAX_TOOL_ROUNDS = 5
MAX_ATTEMPTS = 3
RETRYABLE = {0, 429, 503, 529}
"""0: the connection broke before the answer was whole."""
BASE = os.environ["SANDBOX_BASE_URL"]
WIRE = os.environ["SANDBOX_WIRE"]
MISTAKE = sys.argv[sys.argv.index("--mistake") + 1] if "--mistake" in sys.argv else ""
"""unbounded, assistant_text, no_sequence, no_stream, sequential, tool_error_exits, caps_calls_at_three,
swallows_provider_errors, sequential_once (with --marker PATH); challenge 10's: no_retry, retries_only_429,
retries_400, ignores_hint, unbounded_retries, vague_give_up, turn_twice, reruns_tools, keeps_half_turn,
retries_all_but_400, fixed_sleep, retries_cuts_forever, counts_messages, reraises_provider_error."""
STREAM = os.environ["SANDBOX_STREAM"] == "1" and MISTAKE != "no_stream"


class Broken(Exception):
    """The provider answered with an error status, or the answer broke before its end (status 0)."""

    def __init__(self, status: int, raw: bytes, hint: float | None, partial: bytes = b"") -> None:
        super().__init__(f"{WIRE} {status or 'connection broke'}: {raw.decode(errors='replace')[:300]}")
        self.status, self.raw, self.hint, self.partial = status, raw, hint, partial


def post(url: str, body: Any) -> tuple[int, bytes]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        raw = error.read()
        raise Broken(error.code, raw, hint(error.headers, raw)) from None
    except http.client.IncompleteRead as cut:
        raise Broken(0, b"the answer broke before its end", None, cut.partial) from None
    except (OSError, http.client.HTTPException) as cut:
        raise Broken(0, str(cut).encode(), None) from None


def hint(headers: Any, raw: bytes) -> float | None:
    """The provider's retry hint: retry-after-ms, retry-after (seconds), or Gemini's RetryInfo retryDelay."""
    if headers.get("retry-after-ms"):
        return float(headers["retry-after-ms"]) / 1000
    if headers.get("retry-after"):
        return float(headers["retry-after"])
    try:
        details = json.loads(raw)["error"].get("details", [])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    delays = [d["retryDelay"] for d in details if isinstance(d, dict) and "retryDelay" in d]
    return float(delays[0].rstrip("s")) if delays else None


def ask(url: str, body: Any) -> tuple[int, bytes]:
    """One model request, tried up to MAX_ATTEMPTS times after the provider's hint; a 400 is never retried."""
    single = MISTAKE in ("no_retry", "turn_twice", "reruns_tools")  # the last two retry the whole round instead
    attempts = 10 if MISTAKE == "unbounded_retries" else 1 if single else MAX_ATTEMPTS
    retryable = {429} if MISTAKE == "retries_only_429" else RETRYABLE
    attempt = 0
    while attempt < attempts:
        attempt += 1
        try:
            return post(url, body)
        except Broken as error:
            if MISTAKE == "keeps_half_turn" and error.partial:
                return 200, error.partial  # the mistake: what arrived, taken as the whole turn
            if MISTAKE == "retries_cuts_forever" and error.status == 0:
                attempt -= 1  # the mistake: a broken connection is always worth one more try
                continue
            retried = MISTAKE == "retries_400" or (MISTAKE == "retries_all_but_400" and error.status != 400)
            if error.status not in retryable and not retried:
                raise
            if attempt == attempts:
                if MISTAKE in ("turn_twice", "reruns_tools"):
                    raise  # they retry the whole round (`next_turn`)
                if MISTAKE == "vague_give_up":
                    raise SystemExit("the model request failed") from None
                if MISTAKE == "counts_messages":
                    messages = len(body.get("messages") or body.get("input") or body.get("contents") or [])
                    raise SystemExit(
                        f"gave up on a request of {messages} messages: the provider kept answering "
                        f"{error.status}; check the provider's status page"
                    ) from None
                if MISTAKE == "reraises_provider_error":
                    raise SystemExit(str(error)) from None
                raise SystemExit(
                    f"gave up after {attempt} attempts: the provider kept answering {error.status}: {error}; "
                    "check the provider's status page and your rate limits"
                ) from None
            if MISTAKE == "fixed_sleep":
                time.sleep(0.1)
            elif MISTAKE != "ignores_hint":
                time.sleep(error.hint if error.hint is not None else 0.05 * 2 ** (attempt - 1))
    raise AssertionError("unreachable")


def run(call: dict[str, Any]) -> tuple[str, bool]:
    """One tool call through the sandbox: (output, is_error)."""
    _, body = post(f"{BASE}/tools/run", {"name": call["name"], "arguments": call["arguments"]})
    ran = json.loads(body)
    if "output" in ran:
        return ran["output"], False
    if MISTAKE == "tool_error_exits":
        raise SystemExit(f"tool {call['name']} failed: {ran['error']}")
    return f"ERROR: {ran['error']}", True


def events(raw: bytes) -> list[Any]:
    found = []
    for line in raw.decode(errors="replace").splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            try:
                found.append(json.loads(line[5:]))
            except ValueError:
                assert MISTAKE == "keeps_half_turn", line  # only a kept half ends inside a line
    return found


def arguments(text: str) -> Any:
    """A call's arguments; a half-kept turn's may have been cut off."""
    try:
        return json.loads(text or "{}")
    except ValueError:
        assert MISTAKE == "keeps_half_turn", text
        return {}


# -- OpenAI Chat -------------------------------------------------------------------------------------


def openai_turn(messages: list[Any], tools: list[Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    body: dict[str, Any] = {"model": os.environ["SANDBOX_MODEL"], "messages": messages, "stream": STREAM}
    if tools:  # OpenAI refuses an empty tools array
        body["tools"] = [{"type": "function", "function": tool} for tool in tools]
    _, raw = ask(f"{os.environ['OPENAI_BASE_URL']}/chat/completions", body)
    if not STREAM:
        message = json.loads(raw)["choices"][0]["message"]
    else:
        message = {"role": "assistant", "content": ""}
        calls: dict[int, dict[str, Any]] = {}
        for chunk in events(raw):
            for choice in chunk["choices"]:
                delta = choice["delta"]
                message["content"] += delta.get("content") or ""
                for part in delta.get("tool_calls") or []:
                    call = calls.setdefault(
                        part["index"], {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                    )
                    call["id"] = part.get("id") or call["id"]
                    call["function"]["name"] += part.get("function", {}).get("name") or ""
                    call["function"]["arguments"] += part.get("function", {}).get("arguments") or ""
        if calls:
            message["tool_calls"] = [calls[index] for index in sorted(calls)]
    found = [
        {"id": call["id"], "name": call["function"]["name"], "arguments": arguments(call["function"]["arguments"])}
        for call in message.get("tool_calls") or []
    ]
    return message, found


def openai_result(call: dict[str, Any], output: str, is_error: bool) -> list[Any]:
    return [{"role": "tool", "tool_call_id": call["id"], "content": output}]


# -- Anthropic ---------------------------------------------------------------------------------------


def anthropic_turn(messages: list[Any], tools: list[Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    body: dict[str, Any] = {
        "model": os.environ["SANDBOX_MODEL"],
        "max_tokens": 1024,
        "messages": messages,
        "stream": STREAM,
    }
    if tools:
        body["tools"] = [
            {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]} for t in tools
        ]
    _, raw = ask(f"{os.environ['ANTHROPIC_BASE_URL']}/v1/messages", body)
    if not STREAM:
        content = json.loads(raw)["content"]
    else:
        blocks: dict[int, dict[str, Any]] = {}
        partial: dict[int, str] = {}
        for event in events(raw):
            if event["type"] == "content_block_start":
                blocks[event["index"]] = dict(event["content_block"])
                partial[event["index"]] = ""
            elif event["type"] == "content_block_delta":
                delta = event["delta"]
                if delta["type"] == "text_delta":
                    blocks[event["index"]]["text"] += delta["text"]
                elif delta["type"] == "input_json_delta":
                    partial[event["index"]] += delta["partial_json"]
            elif event["type"] == "content_block_stop" and blocks[event["index"]]["type"] == "tool_use":
                blocks[event["index"]]["input"] = arguments(partial[event["index"]])
        content = [blocks[index] for index in sorted(blocks)]
    for block in content:
        if block["type"] == "tool_use":
            block.setdefault("input", {})  # a half-kept turn's last call never stopped
    found = [{"id": b["id"], "name": b["name"], "arguments": b["input"]} for b in content if b["type"] == "tool_use"]
    return {"role": "assistant", "content": content}, found


def anthropic_text(message: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in message["content"] if block["type"] == "text")


def anthropic_result(call: dict[str, Any], output: str, is_error: bool) -> list[Any]:
    block = {"type": "tool_result", "tool_use_id": call["id"], "content": output, "is_error": is_error}
    return [{"role": "user", "content": [block]}]


def sequential() -> bool:
    """`sequential`: always. `sequential_once`: on the first generated scenario only (a marker file
    remembers), as a loop whose timing varies from run to run."""
    if MISTAKE == "sequential":
        return True
    if MISTAKE != "sequential_once" or not os.environ["SANDBOX_MODEL"].startswith("generated_"):
        return False
    marker = sys.argv[sys.argv.index("--marker") + 1]
    if os.path.exists(marker):
        return False
    open(marker, "w").close()
    return True


# -- the loop ----------------------------------------------------------------------------------------


def complete() -> str:
    with urllib.request.urlopen(f"{BASE}/tools", timeout=30) as response:
        tools = json.loads(response.read())
    turn, result, text = {
        "openai": (openai_turn, openai_result, lambda m: m.get("content") or ""),
        "anthropic": (anthropic_turn, anthropic_result, anthropic_text),
    }[WIRE]
    messages: list[Any] = [{"role": "user", "content": os.environ["SANDBOX_PROMPT"]}]
    history: list[str] = []
    rounds = 100 if MISTAKE == "unbounded" else MAX_TOOL_ROUNDS
    last_round: tuple[int, Any, list[Any]] | None = None
    """Where the last round's appends began, its turn and its calls: what `turn_twice` and `reruns_tools` redo."""

    def run_round(message: Any, calls: list[Any]) -> None:
        if MISTAKE == "assistant_text":
            messages.append({"role": "assistant", "content": text(message) or "..."})
        else:
            messages.append(message)
        with ThreadPoolExecutor(max_workers=1 if sequential() else len(calls)) as pool:
            outputs = list(pool.map(run, calls))
        for call, (output, is_error) in zip(calls, outputs, strict=True):
            history.append(call["name"])
            messages.extend(result(call, output, is_error))

    for _ in range(rounds):
        try:
            message, calls = next_turn(turn, messages, tools, last_round, run_round)
        except Broken:
            if MISTAKE == "swallows_provider_errors":
                continue  # the mistake: a refused request is tried again
            raise
        if MISTAKE == "caps_calls_at_three":
            calls = calls[:3]
        if not calls:
            return str(text(message))
        last_round = (len(messages), message, calls)
        run_round(message, calls)
    if MISTAKE == "no_sequence":
        raise SystemExit(f"gave up after {MAX_TOOL_ROUNDS} tool rounds")
    raise SystemExit(
        f"gave up after {MAX_TOOL_ROUNDS} tool rounds; call sequence was {history}: check what these tools return"
    )


def next_turn(turn: Any, messages: list[Any], tools: list[Any], last_round: Any, run_round: Any) -> Any:
    """The model's next turn. `ask` retries the request alone; `turn_twice` and `reruns_tools` retry the
    whole round instead: the turn and its results appended again, or the tools run again."""
    if MISTAKE not in ("turn_twice", "reruns_tools"):
        return turn(messages, tools)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            return turn(messages, tools)
        except Broken as error:
            if error.status not in RETRYABLE or attempt == MAX_ATTEMPTS:
                raise SystemExit(f"gave up after {attempt} attempts: {error}; check the status page") from None
            if last_round is not None:
                mark, message, calls = last_round
                if MISTAKE == "turn_twice":
                    messages.extend(messages[mark:])  # the turn and its results, again
                else:
                    del messages[mark:]  # rolled back, so the request looks right, and the tools run again
                    run_round(message, calls)
            time.sleep(error.hint if error.hint is not None else 0.05)
    raise AssertionError("unreachable")


if __name__ == "__main__":
    try:
        print(complete())
    except Broken as refused:
        raise SystemExit(str(refused)) from None  # a 400: the request itself is wrong, never sent again
