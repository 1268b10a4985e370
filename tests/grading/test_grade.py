"""`sandbox grade`: the contract with a program in any language, tested with small Python programs.

`tests/programs/loop.py` is the lesson's loop as a standard-library program (OpenAI Chat and
Anthropic, streaming or not); `--mistake NAME` makes one of the lesson's mistakes. The tests judge
what a learner and an instructor see: the verdicts, the rule named, the exit status, the report.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

import pytest

import sandbox
from sandbox import get_scenario, skyl
from sandbox.cli import main
from sandbox.grading.boundary._endpoint import Endpoint
from sandbox.grading.judge._lessons import CONCURRENT, REPORT, STREAM, TOOL_FAILED, Lesson, lesson_for
from sandbox.grading.judge._retries import GIVE_UP, NO_REPEAT, RETRY
from sandbox.grading.programs._program_cases import CASES
from sandbox.grading.programs._program_dialogue import PROVIDER_STOPS, ProgramDialogue
from sandbox.grading.programs._sent import read_sent
from sandbox.wire import Rule

HERE = Path(__file__).resolve().parents[1]
LOOP = [sys.executable, str(HERE / "programs" / "loop.py")]


def grade(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(["grade", *argv])
    return status, capsys.readouterr().out


def run_snippet(
    code: str, *args: str, scenario: str = "parallel_calls", **options: object
) -> tuple[ProgramDialogue, str]:
    talk = ProgramDialogue(get_scenario(scenario), "anthropic", **options)  # type: ignore[arg-type]
    endpoint = Endpoint()
    try:
        run = talk.run([sys.executable, "-c", code, *args], 30, endpoint)
    finally:
        endpoint.close()
    assert run.returncode == 0, run.stderr
    return talk, run.stdout


def test_the_environment_names_the_wire_the_urls_the_model_and_the_prompt() -> None:
    names = [
        "SANDBOX_WIRE",
        "SANDBOX_BASE_URL",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "GOOGLE_GEMINI_BASE_URL",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "SANDBOX_MODEL",
        "SANDBOX_PROMPT",
        "SANDBOX_STREAM",
    ]
    code = f"import json, os; print(json.dumps({{name: os.environ.get(name) for name in {names!r}}}))"
    _, out = run_snippet(code, stream=True)
    env = json.loads(out)
    base = env["SANDBOX_BASE_URL"]
    assert base.startswith("http://127.0.0.1:")
    assert env["OPENAI_BASE_URL"] == base + "/v1"
    assert env["ANTHROPIC_BASE_URL"] == env["GOOGLE_GEMINI_BASE_URL"] == base
    assert env["SANDBOX_WIRE"] == "anthropic"
    assert env["SANDBOX_MODEL"] == "parallel_calls"
    assert env["SANDBOX_PROMPT"] == get_scenario("parallel_calls").prompt
    assert env["SANDBOX_STREAM"] == "1"
    assert all(env[key] for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"))


RUN_TOOLS = """
import json, os, sys, urllib.request, urllib.error
base = os.environ["SANDBOX_BASE_URL"]
def run(payload):
    body = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()  # a str is sent raw
    request = urllib.request.Request(base + "/tools/run", body)
    try:
        with urllib.request.urlopen(request) as response:
            return [response.status, json.load(response)]
    except urllib.error.HTTPError as error:
        return [error.code, json.load(error)]
print(json.dumps({"tools": json.load(urllib.request.urlopen(base + "/tools")),
                  "runs": [run(payload) for payload in json.loads(sys.argv[1])]}))
"""


def test_the_sandbox_describes_the_tools_and_runs_them() -> None:
    payloads = [
        {"name": "get_weather", "arguments": {"city": "Paris"}},
        {"name": "get_time", "arguments": {"city": "Tokyo"}},
        {"name": "get_weather", "arguments": {"city": "Nowhere"}},
        {"name": "get_weather", "arguments": [1]},
        "not json",
    ]
    talk, out = run_snippet(RUN_TOOLS, json.dumps(payloads), unknown_tools={"get_time"})
    seen = json.loads(out)
    assert seen["tools"] == [
        {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)}
        for tool in get_scenario("parallel_calls").tools
    ]
    paris, time, nowhere, bad, not_json = seen["runs"]
    assert paris == [200, {"output": "18C, clear"}]
    assert time[0] == 200 and "unknown tool 'get_time'" in time[1]["error"]
    assert nowhere[0] == 200 and "not a call the model asked for" in nowhere[1]["error"]
    assert bad[0] == 200 and bad[1]["error"].startswith('a tool run is {"name"')
    assert not_json[0] == 400 and "a tool run takes a JSON body" in json.dumps(not_json[1])
    assert [reply.failure for _, _, reply in talk.desk.runs] == ["", "unknown", "not_asked"]


def test_a_failing_tool_answers_with_its_error() -> None:
    payloads = [{"name": "get_weather", "arguments": {"city": "Pariss"}}]
    _, out = run_snippet(
        RUN_TOOLS,
        json.dumps(payloads),
        scenario="tool_error_recovery",
        failing={"get_weather(city='Pariss')": "no such city"},
    )
    assert json.loads(out)["runs"] == [[200, {"error": "no such city"}]]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_a_refused_request_is_read_for_its_transcript(provider: str) -> None:
    """A program has no recording client: the messages of a request the provider refused are read from
    its body, so the failure can show the conversation (the lesson's DON'T: the turn rebuilt as text)."""
    door = sandbox.transport("single_call")
    client = skyl.Client(provider, transport=door)
    request = skyl.Request(model="single_call", messages=[skyl.user_text("hi")], tools=list(door.engine.pinned.tools))
    call = client.complete(request).tool_calls()[0]
    request.messages += [skyl.assistant_text("Let me check."), skyl.tool_result_message(call.id, "18C, clear")]
    with pytest.raises(skyl.ProviderError):
        client.complete(request)
    refused = door.journal[-1]
    assert refused.conversation is None and refused.error is not None
    messages = read_sent([refused])[refused.request_body]
    assert [message.role for message in messages] == ["user", "assistant", "tool"]
    assert messages[1].tool_calls() == [] and messages[2].tool_results()[0].content == "18C, clear"


@pytest.mark.slow
def test_the_reference_program_passes_every_challenge(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    report = tmp_path / "results.json"
    status, out = grade(capsys, "--wire", "openai", "--report", str(report), "--", *LOOP)
    assert status == 0, out
    assert f"Progress [####################] {len(CASES)}/{len(CASES)} challenges passed" in out
    results = json.loads(report.read_text())
    cases = sum(len(cases) for cases in CASES.values())
    assert results["score"] == cases == len(results["tests"])
    assert results["output"] == f"{len(CASES)}/{len(CASES)} challenges passed; {cases}/{cases} tests passed."
    assert {test["status"] for test in results["tests"]} == {"passed"}
    first = "01_apply_tool_results: appends_the_turn_then_one_result_per_call[single_call-openai]"
    assert results["tests"][0]["name"] == first


@pytest.mark.slow
@pytest.mark.parametrize("challenge", ["3", "5", "7", "8"])
def test_the_reference_program_passes_on_anthropic(capsys: pytest.CaptureFixture[str], challenge: str) -> None:
    status, out = grade(capsys, challenge, "--wire", "anthropic", "--", *LOOP)
    assert status == 0, out


def names_rule(out: str, lesson: Lesson) -> bool:
    """The feedback names the lesson's rule (wrapped to the terminal's width, so whitespace is collapsed)."""
    return " ".join(f"Rule: {lesson.rule}".split()) in " ".join(out.split())


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mistake", "challenge", "says", "lesson"),
    [
        ("assistant_text", "2", "follow an assistant turn without tool calls", lesson_for(Rule.RESULT_WITHOUT_TURN)),
        ("unbounded", "2", "never stopped: the sandbox's budget of 20 requests ended it.", lesson_for(Rule.BUDGET)),
        ("no_sequence", "4", "- the call sequence, in order: [get_weather get_weather get_weather", REPORT),
        ("no_stream", "5", "without streaming, though SANDBOX_STREAM=1", STREAM),
        ("sequential", "8", "ran the calls of turn 1 one at a time", CONCURRENT),
        ("tool_error_exits", "7", "tool get_weather failed: weather service: no such city 'Pariss'", TOOL_FAILED),
        ("swallows_provider_errors", "7", "refused request 2 with a 400, and your program sent 3 more", PROVIDER_STOPS),
    ],
    ids=lambda value: value if isinstance(value, str) and " " not in value else "",
)
def test_a_mistake_fails_with_its_rule_named(
    capsys: pytest.CaptureFixture[str], mistake: str, challenge: str, says: str, lesson: Lesson
) -> None:
    status, out = grade(capsys, challenge, "--wire", "anthropic", "--", *LOOP, "--mistake", mistake)
    assert status == 1
    assert says in out
    assert names_rule(out, lesson), out
    assert "failing" in out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mistake", "wire", "failing", "says", "lesson"),
    [
        ("no_retry", "openai", "retries_a_503[", "after a 503 (server error) on its first attempt", RETRY),
        ("retries_only_429", "anthropic", "retries_a_rate_limit_and_an_overload[", "after a 529 (overload)", RETRY),
        ("retries_400", "openai", "never_retries_a_400[", "refused request 2 with a 400, and your program sent", RETRY),
        ("retries_all_but_400", "anthropic", "never_retries_a_401[", "refused request 2 with a 401, and your", RETRY),
        ("ignores_hint", "anthropic", "retries_a_rate_limit_and_an_overload[", "again before the 40 ms", RETRY),
        ("fixed_sleep", "openai", "retries_a_rate_limit_and_an_overload[", "again before the 300 ms", RETRY),
        ("retries_cuts_forever", "anthropic", "keeps_breaking[", "sent one request 11 times", GIVE_UP),
        (
            "counts_messages",
            "openai",
            "gives_up_with_an_error_that_says_why[",
            "as a count of them (3 attempts)",
            GIVE_UP,
        ),
        ("reraises_provider_error", "openai", "says_why[", "- the number of attempts, as a count of them", GIVE_UP),
        (
            "tool_error_exits",
            "anthropic",
            "a_failing_tool_still_gets_a_result[",
            "tool get_weather failed",
            TOOL_FAILED,
        ),
        ("unbounded_retries", "openai", "gives_up_with_an_error_that_says_why[", "sent one request 10 times", GIVE_UP),
        ("vague_give_up", "anthropic", "gives_up_with_an_error_that_says_why[", "- the number of attempts", GIVE_UP),
        ("turn_twice", "anthropic", "retries_a_rate_limit_and_an_overload[", "carried 2 more message(s)", NO_REPEAT),
        ("reruns_tools", "openai", "retries_a_rate_limit_and_an_overload[", "ran find_restaurant(", NO_REPEAT),
        ("keeps_half_turn", "anthropic", "discards_a_stream_cut_before_its_end[", "connection that broke", NO_REPEAT),
    ],
    ids=lambda value: value if isinstance(value, str) and " " not in value and "[" not in value else "",
)
def test_a_retry_mistake_fails_with_its_rule_named(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    mistake: str,
    wire: str,
    failing: str,
    says: str,
    lesson: Lesson,
) -> None:
    """Challenge 10 through `sandbox grade`: the provider fails as scripted, and each mistake of the
    program's retries is caught in the case that shows it, with the rule named."""
    report = tmp_path / "results.json"
    status, out = grade(capsys, "10", "--wire", wire, "--report", str(report), "--", *LOOP, "--mistake", mistake)
    assert status == 1
    tests = {test["name"]: test for test in json.loads(report.read_text())["tests"]}
    caught = [test for name, test in tests.items() if failing in name]
    assert caught and all(test["status"] == "failed" for test in caught), sorted(tests)
    assert says in caught[0]["output"], caught[0]["output"]
    assert names_rule(caught[0]["output"], lesson), caught[0]["output"]
    assert tests[f"10_retry_without_repeating: is_still_bounded[runaway-{wire}]"]["status"] == "passed"


@pytest.mark.slow
def test_only_the_generated_scenarios_catch_a_loop_that_answers_three_calls_a_turn(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The catalogue's turns have at most three calls; the generated ones up to eight, with any tool names."""
    report = tmp_path / "results.json"
    status, out = grade(
        capsys, "3", "--wire", "openai", "--report", str(report), "--", *LOOP, "--mistake", "caps_calls_at_three"
    )
    assert status == 1
    failed = [test["name"] for test in json.loads(report.read_text())["tests"] if test["status"] == "failed"]
    assert failed == ["03_several_calls: any_number_of_calls_in_any_turn[generated-openai]"]
    assert "on scenario 'generated_" in out
    assert names_rule(out, lesson_for(Rule.MISSING_RESULT))


@pytest.mark.slow
def test_a_generated_failure_that_does_not_happen_again_still_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Timing varies between runs: a turn run one at a time once is reported, even if its replay overlaps."""
    # The program keeps a file between its runs, which only the fallback lets it write (bubblewrap gives each run
    # a fresh /tmp), in a folder the unprivileged user it runs as (grading as root) can write, with a Python it
    # can run (the test's own may sit under /root).
    python = "/usr/bin/python3" if os.geteuid() == 0 and Path("/usr/bin/python3").is_file() else sys.executable
    folder = Path(tempfile.mkdtemp(prefix="sandbox-marker-"))
    folder.chmod(0o777)
    marker = folder / "ran-once"
    program = [python, str(HERE / "programs" / "loop.py"), "--mistake", "sequential_once", "--marker", str(marker)]
    try:
        status, out = grade(capsys, "8", "--wire", "openai", "--isolation", "process", "--", *program)
        assert status == 1
        assert marker.exists()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert "FAILED 08_async: any_task_runs_each_turn_concurrently[generated-openai]" in out
    assert "one at a time" in out


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="process groups and /proc are POSIX")
def test_a_program_that_hangs_is_killed_with_everything_it_started(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    token = f"sandbox-test-{os.getpid()}-{time.monotonic_ns()}"
    code = (
        "import subprocess, sys, time; "
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', {token!r}]); "
        "time.sleep(600)"
    )
    status, out = grade(capsys, "6", "--wire", "openai", "--timeout", "3", "--", sys.executable, "-c", code)
    assert status == 1
    assert "did not exit within 3 s, so the grader killed it (its whole process group)" in out
    assert "06_detect_the_end  failing" in out
    # Found by what they run (under bubblewrap their pids are the sandbox's, not this machine's).
    for pid in _running(token):
        assert _gone(pid), f"process {pid}, started by the program, outlived its case"


def _running(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _gone(pid: int) -> bool:
    """Dead, or a zombie waiting for an init that does not reap (as in some containers)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        status = Path(f"/proc/{pid}/status")
        if status.is_file() and "State:\tZ" in status.read_text():
            return True
        time.sleep(0.05)
    return False


def test_a_program_that_cannot_start_gets_an_honest_report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    report = tmp_path / "results.json"
    status, out = grade(capsys, "2", "--wire", "openai", "--report", str(report), "--", str(tmp_path / "missing"))
    assert status == 1
    assert "The program could not be started: No such file or directory" in out
    results = json.loads(report.read_text())
    assert results["score"] == 0 and len(results["tests"]) == len(CASES["02_bounded_loop"])
    assert all("could not be started" in test["output"] for test in results["tests"])


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="only a grader running as root changes user")
def test_a_program_its_user_cannot_reach_is_told_which_folder_and_what_to_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Graded as root, a program runs as nobody: a binary in a 0700 folder (mkdtemp's) cannot be started,
    and the failure names the folder, its mode and the fix, not only "Permission denied"."""
    folder = Path(tempfile.mkdtemp(prefix="sandbox-private-"))
    try:
        program = folder / "loop"
        program.write_text("#!/bin/sh\nexit 0\n")
        program.chmod(0o755)
        status, out = grade(capsys, "2", "--wire", "openai", "--", str(program))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert status == 1
    said = " ".join(out.split())
    assert "The program could not be started: Permission denied" in said, out
    assert f"the folder {folder} (mode 0700, owned by root) does not let it in" in said, out
    assert "`chmod a+rX` the program and its folder" in said and "--grade-as USER" in said, out


def test_a_build_that_fails_fails_every_case_with_its_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(HERE / "programs")  # under bubblewrap, the build runs in the program's folder
    report = tmp_path / "results.json"
    build = f"{sys.executable} -c \"import sys; sys.exit('main.go:3:1: syntax error: unexpected }}')\""
    status, out = grade(capsys, "1", "--wire", "openai", "--report", str(report), "--build", build, "--", *LOOP)
    assert status == 1
    results = json.loads(report.read_text())
    assert results["score"] == 0
    for test in results["tests"]:
        assert test["output"].startswith("The program did not build (exit status 1), so no case could run.")
        assert "main.go:3:1: syntax error" in test["output"]


def test_a_program_that_prints_more_than_the_answer_is_told_where_the_rest_goes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = """
import json, os, urllib.request
body = {"model": os.environ["SANDBOX_MODEL"], "messages": [{"role": "user", "content": os.environ["SANDBOX_PROMPT"]}]}
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", json.dumps(body).encode())
answer = json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"]
print("debug: got", len(answer), "characters")
print(answer)
"""
    report = tmp_path / "results.json"
    status, _ = grade(capsys, "6", "--wire", "openai", "--report", str(report), "--", sys.executable, "-c", code)
    assert status == 1
    tests = {test["name"]: test for test in json.loads(report.read_text())["tests"]}
    output = tests["06_detect_the_end: ends_when_the_call_list_is_empty[plain_text-openai]"]["output"]
    assert 'printed "debug: got 32 characters Hello! No tools needed for that." on stdout' in output
    assert "nothing else on stdout; write anything else to stderr" in output


def test_closing_the_endpoint_with_a_connection_still_open_prints_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A program's kept-alive connection can outlive it by a moment: the endpoint closes it quietly (it
    once printed an asyncio CancelledError traceback inside a passing grade)."""
    caplog.set_level(logging.DEBUG, logger="asyncio")
    endpoint = Endpoint()
    with socket.create_connection(("127.0.0.1", endpoint.port), timeout=30) as sock:
        sock.sendall(b"GET /no-such-door/tools HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += sock.recv(4096)
        assert reply.startswith(b"HTTP/1.1 404")  # answered, and now idle, waiting for the next request
        endpoint.close()
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR] == []


def test_a_program_that_never_asks_the_model_is_told_what_to_send(capsys: pytest.CaptureFixture[str]) -> None:
    status, out = grade(capsys, "6", "--wire", "openai", "--", sys.executable, "-c", "raise SystemExit('no key')")
    assert status == 1
    assert "ended with exit status 1 without asking the model anything" in out
    assert "    no key" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["grade", "2"], "sandbox grade needs the program to run after `--`"),
        (["grade", "2", "--wire", "opena", "--", "x"], "--wire opena: use one or more of openai, openai-responses"),
        (["grade", "42", "--", "x"], "No challenge '42'"),
        (["grade", "--timeout", "0", "--", "x"], "--timeout 0.0: use a number of seconds above 0."),
    ],
)
def test_bad_input_has_clear_error(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_challenge_without_program_cases_says_which_have_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = tmp_path / "challenges"
    (root / "11_new_topic").mkdir(parents=True)
    (root / "hints.toml").write_text('[[challenge]]\nname = "11_new_topic"\ntitle = "New"\n')
    assert main(["grade", "11", "--dir", str(root), "--", "x"]) == 2
    err = capsys.readouterr().err
    assert "11_new_topic grades Python code only so far. A program is graded on:" in err
    assert "- 9: 09_keep_the_whole_turn" in err and "- 10: 10_retry_without_repeating" in err


def test_the_isolation_line_is_shown_with_v_or_when_it_is_not_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    from sandbox.grading.boundary._isolation import choose

    default = choose("auto").sandboxed
    _, quiet = grade(capsys, "1", "--wire", "anthropic", "--", *LOOP)
    _, verbose = grade(capsys, "1", "--wire", "anthropic", "-v", "--", *LOOP)
    _, process = grade(capsys, "1", "--wire", "anthropic", "--isolation", "process", "--", *LOOP)
    assert ("sandbox: learner code runs" in quiet) is not default, quiet
    assert "sandbox: learner code runs" in verbose, verbose
    assert "sandbox: learner code runs in plain processes" in process, process
