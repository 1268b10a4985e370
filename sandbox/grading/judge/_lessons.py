"""The lesson's rule and a hint for each kind of mistake (`sandbox.wire.Rule`).

A provider error says what is wrong with the request; the rule says which line of the lesson that
breaks, and the hint says what in a tool loop usually causes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...wire import Rule

__all__ = [
    "APPEND",
    "ASYNCIO_RUN",
    "AWAIT",
    "AWAIT_CLIENT",
    "BOUND",
    "CONCURRENT",
    "END",
    "GATHER_LIST",
    "MISSING",
    "ORDER",
    "PROVIDER_FAILED",
    "REPORT",
    "STREAM",
    "TOOL_FAILED",
    "WHOLE_TURN",
    "Lesson",
    "lesson_for",
    "lesson_for_diagnosis",
]


@dataclass(frozen=True)
class Lesson:
    rule: str
    """The lesson's rule, as the recap states it."""
    hint: str
    """What usually causes this kind of mistake, and what to change."""


_TURN_FIRST = "Append resp.message before any tool result: every provider requires it."
_ONE_PER_CALL = "Append the assistant turn once, then one tool message per call, in call order."
_BOUND = (
    "Loop until resp.tool_calls() is empty, with a hard bound of 5 rounds (5 model requests): raise once it is hit."
)

_ONCE = Lesson(
    "Append resp.message itself, once per turn; never a reconstruction.",
    "An assistant turn in the history is not the one the model sent: appended twice, rebuilt "
    "without its calls, or edited. Append resp.message exactly once per round, as you received it, "
    "outside the loop over its calls.",
)

# Keyed by the rule's value, so a rule the wire formats add later can have its lesson here first.
_LESSONS: dict[str, Lesson] = {
    Rule.RESULT_WITHOUT_TURN: Lesson(
        _TURN_FIRST,
        "A tool result has no assistant turn with tool calls right before it. Append resp.message itself, "
        "then the results: skyl.assistant_text(resp.text()) keeps the prose and drops the calls, so the "
        "results that follow answer nothing.",
    ),
    Rule.MISSING_RESULT: Lesson(
        _ONE_PER_CALL,
        "A call in that turn got no result. Loop over resp.tool_calls() and append a result for every "
        "call; when a tool fails or produced nothing, append an error result rather than skipping it.",
    ),
    Rule.DUPLICATE_RESULT: Lesson(
        "Each call gets exactly one result, carrying that call's own id (call.id).",
        "Two results answer the same call. Does every result use its own call's id (call.id, not the "
        "first call's)? Is the loop over the calls nested inside another loop, or are the results of an "
        "earlier round appended again?",
    ),
    Rule.UNKNOWN_CALL_ID: Lesson(
        "Each tool result carries its own call id: that is how the provider pairs them.",
        "A result answers an id the turn before it did not make. Use call.id from this turn's "
        "resp.tool_calls(), not an id from an earlier turn or one you made up.",
    ),
    Rule.HISTORY_MISMATCH: _ONCE,
    Rule.REASONING_DROPPED: Lesson(
        "Append resp.message itself: a reasoning model's turn goes back whole, its reasoning before its calls.",
        "The provider sent reasoning with that turn (Responses reasoning items, Anthropic thinking blocks, a "
        "Gemini thought signature) and continues the model's thinking from it, so it refuses a turn that comes "
        "back without it or with it out of place. A turn rebuilt from resp.tool_calls(), or a stream collector "
        "that keeps only text and calls, drops it: append resp.message unchanged, and when streaming keep each "
        "ReasoningEnd event's part where it arrived, before the calls.",
    ),
    Rule.REASONING_INVALID: Lesson(
        "Append resp.message itself: reasoning goes back exactly as the provider sent it, with its own turn.",
        "The provider signs its reasoning for one turn and checks the signature: reasoning edited, moved to "
        "another turn, or sent while the request no longer enables thinking is refused. Send each turn's "
        "reasoning back with that turn, unchanged, and keep the request's settings the same every round.",
    ),
    "duplicate_turn": _ONCE,
    Rule.SCRIPT_FINISHED: Lesson(
        "Loop until resp.tool_calls() is empty: prefer the call list over the stop reason.",
        "The model had already answered (a turn with no tool calls), yet the loop asked again. Return "
        "the response as soon as resp.tool_calls() is empty, whatever resp.stop_reason says.",
    ),
    Rule.BUDGET: Lesson(
        _BOUND,
        "The loop kept calling the model until the sandbox's request budget stopped it. Count the "
        "rounds and raise an exception once the bound (5) is hit.",
    ),
    Rule.MISSING_TOOL: Lesson(
        "Send the same request every round, tools included.",
        "The request no longer declares the tools the model calls. Keep appending to the req you were "
        "given instead of building a new one without its tools.",
    ),
    Rule.UNKNOWN_SCENARIO: Lesson(
        "Send the same request every round.",
        "The model name changed. Keep req.model as you received it: in the sandbox it names the scenario.",
    ),
    Rule.MALFORMED: Lesson(
        "A tool result is a string, paired with its call by id.",
        "The provider could not read the request. Check what you put in the messages: a tool result's "
        "content must be a str (convert other values with str()), its call id the call's own.",
    ),
}

_FALLBACK = Lesson(
    "Send the conversation the provider expects: the model's turn, then its results.",
    "Read the provider's message above: it names the field it rejected.",
)


_DIAGNOSED = {
    "turn_first": _LESSONS[Rule.RESULT_WITHOUT_TURN],
    "turn_once": _ONCE,
    "call_id": _LESSONS[Rule.UNKNOWN_CALL_ID],
    "duplicate": _LESSONS[Rule.DUPLICATE_RESULT],
    "error_result": Lesson(
        "Every call gets a result: a missing result or a failing tool becomes an error result, never silence.",
        "Send the failure back as the call's result, marked so the model can tell: "
        "skyl.tool_result_message(call.id, 'ERROR: <what went wrong>', is_error=True).",
    ),
}


def lesson_for(rule: Rule | None) -> Lesson:
    return _LESSONS.get(rule.value, _FALLBACK) if rule is not None else _FALLBACK


def lesson_for_diagnosis(kind: str) -> Lesson:
    """The lesson for a mistake found in the conversation itself (`_checks.diagnose`)."""
    return _DIAGNOSED[kind]


# Lessons for what the grader sees in the journal rather than in a provider's error.
END = Lesson(
    "Loop until resp.tool_calls() is empty: prefer the call list over the stop reason.",
    "The stop reason can disagree with the call list (a turn cut at max_tokens can still carry calls, and "
    "an answer can claim tool_use with none; on Gemini, whose finishReason says STOP either way, skyl "
    "reports StopReason.TOOL_USE for any turn with a call). Decide with resp.tool_calls(), not "
    "resp.stop_reason.",
)
BOUND = Lesson(
    _BOUND,
    "Count the rounds; after the fifth, raise an exception (skyl.ToolLoopError fits) instead of "
    "returning, so the caller knows the loop gave up.",
)
REPORT = Lesson(
    "Make the bound's error say what happened: the bound, the calls in order, and what to check.",
    "Keep a list of call names, extend it with each round's calls, and put it in the message: "
    "f'gave up after {MAX_ROUNDS} tool rounds; call sequence was {history}: check what these tools return'.",
)
ORDER = Lesson(
    "Append the assistant turn once, then one tool message per call, in call order.",
    "Walk resp.tool_calls() in order and append each call's own result; a failing tool gets an error "
    "result in its place. With asyncio, gather() returns results in the order of its arguments.",
)
APPEND = Lesson(
    _TURN_FIRST,
    "Each round must add to the conversation before asking again: append resp.message, then one "
    "result per call, to req.messages itself (not to a copy), then send req.",
)
MISSING = Lesson(
    "Every call gets a result: a call with no entry in `results` gets an error result, never a crash.",
    "Look the output up with results.get(call.id); when it is missing, append "
    "skyl.tool_result_message(call.id, 'ERROR: no result was produced for this call', is_error=True).",
)
TOOL_FAILED = Lesson(
    "Every call gets a result, even when its tool fails: the failure becomes an error result.",
    "A failing tool is information for the model, not a reason to stop: wrap run(call) in "
    "try/except Exception and send the error back, e.g. skyl.tool_result_message(call.id, "
    "f'ERROR: {exc}', is_error=True). The model can then correct itself on the next round.",
)
PROVIDER_FAILED = Lesson(
    "Catch the tool's failure, not the provider's: a ProviderError means the request itself was refused.",
    "Wrap run(call) alone in try/except, never client.complete(req): resending a refused request gets the "
    "same refusal, and returning an earlier response hides that the model never answered. Let the "
    "ProviderError propagate (or raise your own error from it).",
)
CONCURRENT = Lesson(
    "The calls of one turn are independent: run them concurrently, append the results in call order.",
    "Start every call of the turn, then await them together: "
    "outputs = await asyncio.gather(*(run(call) for call in calls)). A for loop that awaits each "
    "run(call) in turn runs them one at a time.",
)
AWAIT = Lesson(
    CONCURRENT.rule,
    "run(call) is a coroutine function: calling it starts nothing until it is awaited. Await it, or "
    "gather the turn's calls: outputs = await asyncio.gather(*(run(call) for call in calls)).",
)
AWAIT_CLIENT = Lesson(
    "The loop is the same with await: resp = await client.complete(req).",
    "AsyncClient.complete is a coroutine function: client.complete(req) only creates a coroutine, and "
    "nothing is sent until it is awaited. Write resp = await client.complete(req).",
)
GATHER_LIST = Lesson(
    CONCURRENT.rule,
    "asyncio.gather takes each coroutine as an argument of its own, not a list of them: unpack it with *, "
    "outputs = await asyncio.gather(*(run(call) for call in calls)).",
)
ASYNCIO_RUN = Lesson(
    CONCURRENT.rule,
    "asyncio.run() starts an event loop; inside async def one is already running. Await the coroutine "
    "instead, or gather the turn's calls: outputs = await asyncio.gather(*(run(call) for call in calls)).",
)
WHOLE_TURN = Lesson(
    "A streamed turn goes back whole: rebuild every part the stream announced, reasoning included.",
    "A reasoning model's stream sends each reasoning part as ReasoningDelta fragments (to show) and one "
    "ReasoningEnd, whose event.reasoning is the part to keep. Keep the parts in the order they first "
    "appeared: the reasoning comes before the calls it led to, and the provider wants it back there.",
)
STREAM = Lesson(
    "There is no resp.message on a stream: rebuild the turn from the events you saw.",
    "Text arrives as TextDelta fragments; each call as ToolCallStart (id, name), then ToolCallDelta "
    "fragments of its JSON arguments, keyed by event.index. Join each call's fragments and parse them "
    "once, after the stream ends. MessageEnd carries the stop reason, usage, model and id: copy them "
    "from it, never guess them from the calls.",
)
