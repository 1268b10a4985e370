"""A program's feedback speaks the program's language (`sandbox grade --lang`, or the language read from
the command): every rule, hint and headline a Go or JavaScript program can be shown names Go's or
JavaScript's ways, never asyncio, a dict, `is_error=True` or `StopReason.TOOL_USE`.

The texts are checked as `Feedback.render` writes them (`translate`), from the same objects the program
grader uses: the lessons it can attach, and the headlines `check_history` writes for results that are
out of order, kept by tool name, or unmarked errors.
"""

from __future__ import annotations

import re

import pytest

from sandbox.grading.judge import _lessons
from sandbox.grading.judge._checks import EXPECT_ERROR, check_history
from sandbox.grading.judge._language import translate
from sandbox.grading.judge._lessons import Lesson
from sandbox.grading.programs import _program_lessons
from sandbox.messages._types import Message, Text, ToolCall, ToolResult

PYTHON_ONLY = re.compile(
    r"asyncio|gather\(|\bf'|\bf\"|try/except|\bexcept\b|is_error=True|\bdict\b|StopReason\.[A-Z_]{3,}|json\.loads|"
    r"\bNone\b|str\(\)|tool_calls\(\)|stop_reason|assistant_text|tool_result_message|resp\.text\(\)"
)
"""Python's words (skyl's Python API, the standard library, the syntax) that a Go or JS learner cannot act on."""

PROGRAM_LESSONS: dict[str, Lesson] = {
    **{f"provider rejection: {rule}": lesson for rule, lesson in _lessons._LESSONS.items()},
    "fallback": _lessons._FALLBACK,
    **{f"diagnosis: {kind}": lesson for kind, lesson in _lessons._DIAGNOSED.items()},
    **{name: getattr(_lessons, name) for name in ("APPEND", "ORDER", "STREAM", "END", "BOUND", "REPORT")},
    **{name: getattr(_program_lessons, name) for name in _program_lessons.__all__},
}
"""Every lesson a program's failure can carry: what `Verdicts` attaches (a provider's rejection, a
diagnosis of the conversation, call order, appending) and what `ProgramDialogue` attaches."""

PARIS = ToolCall("call_1", "get_weather", {"city": "Paris"})
LISBON = ToolCall("call_2", "get_weather", {"city": "Lisbon"})
OUTPUTS = {"call_1": "18C, clear", "call_2": "24C, sunny"}


def _history(*results: ToolResult) -> list[Message]:
    return [
        Message("user", [Text("What's the weather in Paris and Lisbon?")]),
        Message("assistant", [PARIS, LISBON]),
        *(Message("tool", [result]) for result in results),
    ]


def _headline(messages: list[Message], expected: dict[str, object]) -> str:
    problem = check_history(messages, messages, lambda call: expected[call.id], has_call_ids=False)
    assert problem is not None
    return problem.headline


HEADLINES = {
    "outputs swapped": (
        _headline(_history(ToolResult("call_1", "24C, sunny"), ToolResult("call_2", "18C, clear")), dict(OUTPUTS)),
        {"go": "goroutine", "js": "Promise.all"},
    ),
    "outputs kept by tool name": (
        _headline(_history(ToolResult("call_1", "24C, sunny"), ToolResult("call_2", "24C, sunny")), dict(OUTPUTS)),
        {"go": "map keyed by tool name", "js": "keyed by tool name"},
    ),
    "an error result not marked": (
        _headline(
            _history(ToolResult("call_1", "18C, clear"), ToolResult("call_2", "nothing")),
            {"call_1": "18C, clear", "call_2": EXPECT_ERROR},
        ),
        {"go": "skyl.ToolErrorMessage", "js": "toolResultMessage(call.id, text, true)"},
    ),
}


@pytest.mark.parametrize("language", ["go", "js"])
@pytest.mark.parametrize("name", sorted(PROGRAM_LESSONS))
def test_every_lesson_a_program_can_be_shown_is_in_its_language(name: str, language: str) -> None:
    lesson = PROGRAM_LESSONS[name]
    for part in (lesson.rule, lesson.hint):
        said = translate(part, language)
        assert not PYTHON_ONLY.search(said), (language, name, said)


@pytest.mark.parametrize("language", ["go", "js"])
@pytest.mark.parametrize("name", sorted(HEADLINES))
def test_the_result_order_headlines_name_the_languages_own_ways(name: str, language: str) -> None:
    headline, own = HEADLINES[name]
    said = translate(headline, language)
    assert not PYTHON_ONLY.search(said), (language, name, said)
    assert own[language] in said, (language, name, said)


def test_python_keeps_its_own_words() -> None:
    """The Python learner's feedback is unchanged: asyncio and the rest are the right words there."""
    headline, _ = HEADLINES["outputs swapped"]
    assert "asyncio.gather returns them in that order" in translate(headline, "python")
    assert "With asyncio, gather() returns results" in translate(_lessons.ORDER.hint, "python")
    assert "StopReason.TOOL_USE" in translate(_lessons.END.hint, "python")


def test_the_stop_reason_hint_names_go_and_javascript_constants() -> None:
    assert "skyl.StopToolUse" in translate(_lessons.END.hint, "go")
    assert 'stopReason "tool_use"' in translate(_lessons.END.hint, "js")


def test_the_stream_hint_names_events_a_javascript_program_can_see() -> None:
    """A JavaScript program parses the provider's events itself: skyl's event names mean nothing there."""
    said = translate(_lessons.STREAM.hint, "js")
    assert "TextDelta" not in said and "ToolCallStart" not in said, said
    assert "JSON.parse" in said and "input_json_delta" in said, said
    assert "skyl.ToolCallDelta" in translate(_lessons.STREAM.hint, "go")


OWN_API = {
    "go": {
        "STREAM_EVERY_REQUEST": ("client.Stream(ctx, req)", "skyl.CollectStream(stream)"),
        "RETRY_AFTER_THE_HINT": ("errors.As(err, &perr)", "perr.RetryAfter", "perr.Status"),
        "RETRY_THE_SAME_REQUEST": ("skyl.CollectStream", "Status 0"),
        "RUN_CONCURRENTLY": ("goroutine", "sync.WaitGroup"),
        "TOOL_FAILED_GOES_BACK": ("sandbox.Run(ctx, call)", "skyl.ToolErrorMessage"),
    },
    "js": {
        "STREAM_EVERY_REQUEST": ("stream: true", "JSON.parse"),
        "RETRY_AFTER_THE_HINT": ("retryAfter", "setTimeout"),
        "RUN_CONCURRENTLY": ("Promise.all(calls.map(run))",),
        "TOOL_FAILED_GOES_BACK": ("toolResultMessage(call.id",),
    },
}
OTHER_API = {
    "go": re.compile(r"Promise\.all|JavaScript|\"stream\": true|retry-after-ms|google\.rpc\.RetryInfo|retryDelay"),
    "js": re.compile(r"goroutine|WaitGroup|\bGo\b|skyl\.|perr\."),
}
"""A Go program talks through skyl's Go client, which reads the hints and streams for it: the raw HTTP
names and JavaScript's ways mean nothing there; a JavaScript program has no goroutines or skyl."""


@pytest.mark.parametrize("language", ["go", "js"])
@pytest.mark.parametrize("name", sorted(PROGRAM_LESSONS))
def test_no_lesson_offers_another_languages_ways(name: str, language: str) -> None:
    lesson = PROGRAM_LESSONS[name]
    for part in (lesson.rule, lesson.hint):
        said = translate(part, language)
        assert not OTHER_API[language].search(said), (language, name, said)


@pytest.mark.parametrize("language", ["go", "js"])
@pytest.mark.parametrize("name", sorted(_program_lessons.__all__))
def test_the_program_hints_name_the_learners_api(name: str, language: str) -> None:
    said = translate(getattr(_program_lessons, name).hint, language)
    for words in OWN_API[language].get(name, ()):
        assert words in said, (language, name, words, said)
