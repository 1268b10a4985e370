"""The lesson's tool loop as a program, standard library only: what `sandbox grade` runs in the tests.

It speaks OpenAI Chat and Anthropic, streaming or not, through the contract's environment, and runs
each turn's calls on threads. `--mistake NAME` makes one of the lesson's mistakes, so the tests can
check that each one fails with its rule named.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

MAX_TOOL_ROUNDS = 5
BASE = os.environ["SANDBOX_BASE_URL"]
WIRE = os.environ["SANDBOX_WIRE"]
MISTAKE = sys.argv[sys.argv.index("--mistake") + 1] if "--mistake" in sys.argv else ""
"""unbounded, assistant_text, no_sequence, no_stream, sequential, tool_error_exits, caps_calls_at_three,
swallows_provider_errors, sequential_once (with --marker PATH)."""
STREAM = os.environ["SANDBOX_STREAM"] == "1" and MISTAKE != "no_stream"


def post(url: str, body: Any) -> tuple[int, bytes]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


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
    return [
        json.loads(line[5:])
        for line in raw.decode().splitlines()
        if line.startswith("data:") and line[5:].strip() != "[DONE]"
    ]


# -- OpenAI Chat -------------------------------------------------------------------------------------


def openai_turn(messages: list[Any], tools: list[Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    body: dict[str, Any] = {"model": os.environ["SANDBOX_MODEL"], "messages": messages, "stream": STREAM}
    if tools:  # OpenAI refuses an empty tools array
        body["tools"] = [{"type": "function", "function": tool} for tool in tools]
    status, raw = post(f"{os.environ['OPENAI_BASE_URL']}/chat/completions", body)
    if status != 200:
        raise RuntimeError(f"openai {status}: {raw.decode()}")
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
        {"id": call["id"], "name": call["function"]["name"], "arguments": json.loads(call["function"]["arguments"])}
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
    status, raw = post(f"{os.environ['ANTHROPIC_BASE_URL']}/v1/messages", body)
    if status != 200:
        raise RuntimeError(f"anthropic {status}: {raw.decode()}")
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
                blocks[event["index"]]["input"] = json.loads(partial[event["index"]] or "{}")
        content = [blocks[index] for index in sorted(blocks)]
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
    for _ in range(rounds):
        try:
            message, calls = turn(messages, tools)
        except RuntimeError:
            if MISTAKE == "swallows_provider_errors":
                continue  # the mistake: a refused request is tried again
            raise
        if MISTAKE == "caps_calls_at_three":
            calls = calls[:3]
        if not calls:
            return str(text(message))
        if MISTAKE == "assistant_text":
            messages.append({"role": "assistant", "content": text(message) or "..."})
        else:
            messages.append(message)
        with ThreadPoolExecutor(max_workers=1 if sequential() else len(calls)) as pool:
            outputs = list(pool.map(run, calls))
        for call, (output, is_error) in zip(calls, outputs, strict=True):
            history.append(call["name"])
            messages.extend(result(call, output, is_error))
    if MISTAKE == "no_sequence":
        raise SystemExit(f"gave up after {MAX_TOOL_ROUNDS} tool rounds")
    raise SystemExit(
        f"gave up after {MAX_TOOL_ROUNDS} tool rounds; call sequence was {history}: check what these tools return"
    )


if __name__ == "__main__":
    print(complete())
