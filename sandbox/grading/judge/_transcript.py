"""A conversation as one line per message, the offending one marked: what a failure shows first.

   0  user       "What's the weather in Paris?"
-> 1  assistant  "Let me check the weather in Paris." (no tool calls)
   2  tool       result for call_Xs4UWem8CnHtK30n36i0BHyv: "18C, clear"
"""

from __future__ import annotations

from collections.abc import Sequence

from ...messages._types import Message, Part, Text, ToolCall

__all__ = ["describe_call", "describe_message", "quote", "render", "reply_line"]

MAX_LINES = 16
_TEXT_WIDTH = 60


def quote(text: str, width: int = _TEXT_WIDTH) -> str:
    """Text in double quotes on one line, shortened with an ellipsis."""
    flat = " ".join(text.split())
    if len(flat) > width:
        flat = flat[: width - 3] + "..."
    return f'"{flat}"'


def describe_call(call: ToolCall, *, with_id: bool = True) -> str:
    args = ", ".join(f"{key}={value!r}" for key, value in call.arguments.items())
    ident = f" [{call.id}]" if with_id else ""
    return f"{call.name}({args}){ident}"


def describe_message(message: Message) -> str:
    """One message on one line: its text, its calls or its results, with ids. An assistant turn shows
    its parts in the order it holds them (reasoning, text, calls), so a turn rebuilt in another order
    reads as it was sent."""
    text = message.text()
    if message.role == "assistant":
        runs: list[tuple[str, list[Part]]] = []
        for part in message.content:
            if isinstance(part, Text) and not part.text:
                continue
            if runs and runs[-1][0] == part.kind:
                runs[-1][1].append(part)
            else:
                runs.append((part.kind, [part]))
        shown = [_describe_run(kind, parts) for kind, parts in runs]
        if not message.tool_calls():
            shown.append("(no tool calls)")
        return " ".join(item for item in shown if item)
    results = message.tool_results()
    if results:
        return "; ".join(
            f"result for {result.call_id}: {quote(result.content, 40)}" + (" (is_error)" if result.is_error else "")
            for result in results
        )
    return quote(text)


def _describe_run(kind: str, parts: Sequence[Part]) -> str:
    if kind == "reasoning":
        return f"[reasoning x{len(parts)}]"
    if kind == "text":
        return quote("".join(part.text for part in parts if isinstance(part, Text)))
    if kind == "tool_call":
        return "calls " + ", ".join(describe_call(part) for part in parts if isinstance(part, ToolCall))
    return ""


def reply_line(message: Message) -> str:
    """The model's answer to the request above it, set apart from the numbered messages."""
    return f"    =  {'reply':<9}  {describe_message(message)}"


def render(messages: Sequence[Message], *, mark: int | None = None, max_lines: int = MAX_LINES) -> list[str]:
    """The transcript lines; long conversations keep the start, the marked message and the end."""
    lines = [
        f"{'->' if index == mark else '  '} {index:>2}  {message.role:<9}  {describe_message(message)}"
        for index, message in enumerate(messages)
    ]
    if len(lines) <= max_lines:
        return lines
    keep = set(range(2)) | set(range(len(lines) - 4, len(lines)))
    if mark is not None:
        keep |= set(range(max(0, mark - 2), min(len(lines), mark + 3)))
    shown: list[str] = []
    skipped = 0
    for index, line in enumerate(lines):
        if index in keep:
            if skipped:
                shown.append(f"   ..  ({skipped} more messages)")
                skipped = 0
            shown.append(line)
        else:
            skipped += 1
    return shown
