"""The skyl client, as learners use it: `from sandbox import skyl`.

It mirrors the lesson's API in Python names, so the lesson's loop reads almost line for line:

    resp = client.complete(req)
    calls = resp.tool_calls()
    if not calls:
        return resp
    req.messages.append(resp.message)
    for call in calls:
        req.messages.append(skyl.tool_result_message(call.id, run(call)))
"""

from __future__ import annotations

from .._exceptions import ProviderError, SandboxError, ToolLoopError, UsageError
from ..messages._events import (
    MessageEnd,
    ReasoningDelta,
    ReasoningEnd,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from ..messages._types import (
    Message,
    Part,
    Reasoning,
    Request,
    Response,
    Role,
    StopReason,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
    assistant_text,
    system_text,
    tool_result_message,
    user_text,
)
from ..wire import PROVIDERS
from ._client import AsyncClient, AsyncStream, Client, Stream
from ._collect import StreamCollector, acollect_stream, collect_stream

__all__ = [
    "PROVIDERS",
    "AsyncClient",
    "AsyncStream",
    "Client",
    "Message",
    "MessageEnd",
    "Part",
    "ProviderError",
    "Reasoning",
    "ReasoningDelta",
    "ReasoningEnd",
    "Request",
    "Response",
    "Role",
    "SandboxError",
    "StopReason",
    "Stream",
    "StreamCollector",
    "StreamEvent",
    "Text",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolLoopError",
    "ToolResult",
    "Usage",
    "UsageError",
    "acollect_stream",
    "assistant_text",
    "collect_stream",
    "system_text",
    "tool_result_message",
    "user_text",
]
