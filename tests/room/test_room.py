"""The workshop room's server: join, post, what the instructor sees, what a learner may not, and a restart."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import sqlite3
import zipfile
from pathlib import Path

import httpx
import pytest

from sandbox.grading.judge._lessons import lesson_for_diagnosis
from sandbox.room import RoomDatabase, RoomService
from sandbox.room._export import folder_name
from sandbox.room._model import Room, parse_run
from tests.room_server import APPEND_ONCE, TITLES, TURN_FIRST, Learner, run, serving_room

HOSTILE = "<script>window.pwned=1</script><img src=x onerror=alert(1)>"


@pytest.fixture
def served(tmp_path: Path):  # type: ignore[no-untyped-def]
    with serving_room(tmp_path / "room.db") as room:
        yield room


def test_room_join_post_and_state(served) -> None:  # type: ignore[no-untyped-def]
    ada = Learner.join(served.room, "Ada Lovelace")
    assert ada.post(run(**{"01_apply_tool_results": (3, 1, APPEND_ONCE)})).status_code == 202
    state = served.instructor("/api/state").json()
    (row,) = state["learners"]
    assert row["name"] == "Ada Lovelace"
    cell = row["cells"]["01_apply_tool_results"]
    assert (cell["status"], cell["passed"], cell["total"], cell["rules"]) == ("failing", 3, 4, [APPEND_ONCE])
    assert [item["name"] for item in state["challenges"]][:3] == [
        "01_apply_tool_results",
        "02_bounded_loop",
        "03_several_calls",
    ]
    detail = served.instructor("/api/learners/Ada%20Lovelace").json()
    assert detail["latest_failure"]["rule"] == APPEND_ONCE
    assert detail["latest_failure"]["text"].startswith("The conversation as sent")


@pytest.mark.slow
def test_room_counts_rules_across_learners(served) -> None:  # type: ignore[no-untyped-def]
    for name in ("a", "b", "c"):
        Learner.join(served.room, name).post(run(**{"01_apply_tool_results": (0, 2, APPEND_ONCE)}))
    for name in ("d", "e"):
        Learner.join(served.room, name).post(run(**{"02_bounded_loop": (1, 1, TURN_FIRST)}))
    fixed = Learner.join(served.room, "f")
    fixed.post(run(**{"01_apply_tool_results": (0, 1, APPEND_ONCE)}))
    fixed.post(run(**{"01_apply_tool_results": (1, 0)}))  # fixed it: no longer counted
    rules = {
        item["rule"]: (item["learners"], item["names"]) for item in served.instructor("/api/state").json()["rules"]
    }
    assert rules == {APPEND_ONCE: (3, ["a", "b", "c"]), TURN_FIRST: (2, ["d", "e"])}


def test_room_marks_the_same_failure_three_runs_in_a_row_as_stuck(served) -> None:  # type: ignore[no-untyped-def]
    ada = Learner.join(served.room, "ada")
    for number in range(3):
        ada.post(run(**{"01_apply_tool_results": (1, 1, APPEND_ONCE)}))
        cell = served.instructor("/api/state").json()["learners"][0]["cells"]["01_apply_tool_results"]
        assert (cell["streak"], cell["stuck"]) == (number + 1, number == 2)
    ada.post(run(**{"01_apply_tool_results": (1, 1, TURN_FIRST)}))  # a new failure: moving again
    row = served.instructor("/api/state").json()["learners"][0]
    assert (row["cells"]["01_apply_tool_results"]["stuck"], row["stuck"]) == (False, False)


def test_room_marks_a_learner_without_a_run_for_n_minutes_as_stuck() -> None:
    room = Room(titles=TITLES, stuck_minutes=10)
    room.apply_run("ada", 1000.0, parse_run(run(**{"01_apply_tool_results": (1, 1, APPEND_ONCE)}), TITLES))
    room.apply_run("finished", 1000.0, parse_run(run(**{"01_apply_tool_results": (2, 0)}), TITLES))
    rows = {row["name"]: row for row in room.snapshot(1000.0 + 9 * 60)["learners"]}
    assert not rows["ada"]["idle"]
    rows = {row["name"]: row for row in room.snapshot(1000.0 + 10 * 60)["learners"]}
    assert (rows["ada"]["idle"], rows["ada"]["stuck"]) == (True, True)
    assert not rows["finished"]["idle"], "a learner who passed everything is done, not stuck"


@pytest.mark.slow
def test_room_restart_keeps_learners_progress_and_key(tmp_path: Path) -> None:
    db = tmp_path / "room.db"
    with serving_room(db) as first:
        key = first.service.key
        ada = Learner.join(first.room, "ada")
        for _ in range(2):
            ada.post(run(**{"01_apply_tool_results": (1, 1, APPEND_ONCE)}))
    with serving_room(db) as second:
        assert second.service.key == key, "the instructor's URL survives a restart of the same --room-db"
        row = second.instructor("/api/state").json()["learners"][0]
        assert (row["name"], row["cells"]["01_apply_tool_results"]["rules"]) == ("ada", [APPEND_ONCE])
        assert second.instructor("/api/learners/ada").json()["latest_failure"]["rule"] == APPEND_ONCE
        ada.room = second.room
        assert ada.post(run(**{"01_apply_tool_results": (1, 1, APPEND_ONCE)})).status_code == 202
        cell = second.instructor("/api/state").json()["learners"][0]["cells"]["01_apply_tool_results"]
        assert (cell["streak"], cell["stuck"]) == (3, True), "the streak goes on across the restart"
        for _ in range(5):
            ada.post(run(**{"01_apply_tool_results": (2, 0)}))
    with contextlib.closing(sqlite3.connect(db)) as raw:
        assert raw.execute("SELECT count(*) FROM progress").fetchone() == (1,), "one row per learner, however many runs"


@pytest.mark.slow
def test_room_learner_token_cannot_read_the_instructors_api(served) -> None:  # type: ignore[no-untyped-def]
    ada = Learner.join(served.room, "ada")
    Learner.join(served.room, "bob").post(run(**{"01_apply_tool_results": (0, 1, APPEND_ONCE)}))
    bearer = {"authorization": f"Bearer {ada.token}"}
    for path in ("/api/state", "/api/learners/bob", "/fragment/learner/bob", "/export.csv", "/export/results.zip"):
        response = httpx.get(f"{served.room}{path}", headers=bearer, timeout=10)
        assert response.status_code == 403, path
        assert "only the instructor's key" in response.json()["error"]["message"]
        assert "bob" not in response.text
        as_query = httpx.get(f"{served.room}{path}", params={"key": ada.token}, timeout=10)
        assert as_query.status_code == 403, path
    events = httpx.get(f"{served.room}/api/events", headers=bearer, timeout=10)
    assert events.status_code == 403
    assert httpx.delete(f"{served.room}/api/learners/bob", headers=bearer, timeout=10).status_code == 403
    me = httpx.get(f"{served.room}/api/me", headers=bearer, timeout=10).json()
    assert me["name"] == "ada" and "bob" not in json.dumps(me), "a learner reads their own row only"
    nobody = httpx.get(f"{served.room}/api/state", timeout=10)
    assert nobody.status_code == 401 and "need the room's key" in nobody.json()["error"]["message"]
    wrong = httpx.get(f"{served.room}/api/state", params={"key": "room-guess"}, timeout=10)
    assert wrong.status_code == 401 and "not this room's key" in wrong.json()["error"]["message"]
    page = httpx.get(f"{served.room}/", timeout=10)
    assert page.status_code == 401 and "?key=" in page.text and "bob" not in page.text


def test_room_learner_posts_only_under_their_own_name(served) -> None:  # type: ignore[no-untyped-def]
    ada = Learner.join(served.room, "ada")
    Learner.join(served.room, "bob")
    posted = run(**{"01_apply_tool_results": (0, 1, APPEND_ONCE)})
    assert ada.post({**posted, "name": "bob", "learner": "bob"}).json()["name"] == "ada"
    rows = {row["name"]: row for row in served.instructor("/api/state").json()["learners"]}
    assert rows["ada"]["cells"] and not rows["bob"]["cells"]
    taken = httpx.post(f"{served.room}/api/join", json={"name": "bob"}, timeout=10)
    assert taken.status_code == 409 and "already joined" in taken.json()["error"]["message"]
    stolen = httpx.post(f"{served.room}/api/join", json={"name": "bob", "token": ada.token}, timeout=10)
    assert stolen.status_code == 409, "a token renews only its own name"


@pytest.mark.parametrize(
    ("token", "status", "message"),
    [
        (None, 401, "join first with --room URL --name NAME"),
        ("rt-nobody-knows-this", 401, "does not know that token"),
    ],
    ids=["no-token", "unknown-token"],
)
def test_room_bad_token_has_clear_error(served, token: str | None, status: int, message: str) -> None:  # type: ignore[no-untyped-def]
    headers = {"authorization": f"Bearer {token}"} if token else {}
    response = httpx.post(
        f"{served.room}/api/runs", json=run(**{"01_apply_tool_results": (1, 0)}), headers=headers, timeout=10
    )
    assert response.status_code == status
    assert message in response.json()["error"]["message"]


def test_room_expired_token_has_clear_error_and_rejoins_with_it(tmp_path: Path) -> None:
    with serving_room(tmp_path / "room.db", token_hours=-1) as served:
        ada = Learner.join(served.room, "ada")
        response = ada.post(run(**{"01_apply_tool_results": (1, 0)}))
        assert response.status_code == 401
        assert "expired" in response.json()["error"]["message"]
        again = httpx.post(
            f"{served.room}/api/join", json={"name": "ada", "token": ada.token, "api_key": ada.api_key}, timeout=10
        )
        assert again.status_code == 200 and again.json()["token"] != ada.token
        assert again.json()["api_key"] == ada.api_key, "their own loop keeps working with the key it has"
        stranger = Learner.join(served.room, "bob")
        taken = httpx.post(
            f"{served.room}/api/join", json={"name": "bob", "token": stranger.token, "api_key": ada.api_key}, timeout=10
        )
        assert taken.json()["api_key"] != ada.api_key, "a key stays with the learner it was issued to"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([1, 2], "JSON object"),
        ({"challenges": {}}, "`challenges` must be an object"),
        ({"challenges": {"01_apply_tool_results": {"passed": -1}}}, "whole number from 0"),
        ({"challenges": {"../../etc": {"passed": 1}}}, "use the folder's name"),
        (
            {"challenges": {"01_apply_tool_results": {"passed": 1}}, "failures": [{"challenge": "02_y"}]},
            "not one of the run's",
        ),
        (
            {
                "challenges": {"01_apply_tool_results": {"passed": 1}},
                "failures": [{"challenge": "01_apply_tool_results", "rule": 5}],
            },
            "must be a string",
        ),
    ],
    ids=["not-object", "no-challenges", "negative", "bad-name", "stray-failure", "rule-type"],
)
def test_room_bad_run_has_clear_error(served, body: object, message: str) -> None:  # type: ignore[no-untyped-def]
    ada = Learner.join(served.room, "ada")
    response = httpx.post(
        f"{served.room}/api/runs", json=body, headers={"authorization": f"Bearer {ada.token}"}, timeout=10
    )
    assert response.status_code == 400
    assert message in response.json()["error"]["message"]


@pytest.mark.slow
def test_room_bounds_posts_in_size_and_rate(tmp_path: Path) -> None:
    with serving_room(tmp_path / "room.db", post_rate=0.01) as served:
        ada = Learner.join(served.room, "ada")
        huge = {"challenges": {"01_apply_tool_results": {"passed": 1}}, "padding": "x" * 300_000}
        assert ada.post(huge).status_code == 413
        statuses = [ada.post(run(**{"01_apply_tool_results": (1, 0)})).status_code for _ in range(12)]
        assert statuses[:9] == [202] * 9, statuses  # the burst (10, one spent on the 413)
        assert statuses[-1] == 429
        limited = ada.post(run(**{"01_apply_tool_results": (1, 0)}))
        assert int(limited.headers["retry-after"]) > 0 and "wait a moment" in limited.json()["error"]["message"]


def test_room_bad_names_have_clear_error(served) -> None:  # type: ignore[no-untyped-def]
    for name in ("", "   ", "x" * 41, "bell\x07", "right\u202eto-left", 7):
        response = httpx.post(f"{served.room}/api/join", json={"name": name}, timeout=10)
        assert response.status_code == 400, name
        assert "visible characters" in response.json()["error"]["message"]


def test_room_escapes_everything_a_learner_sends(served) -> None:  # type: ignore[no-untyped-def]
    hostile = Learner.join(served.room, HOSTILE[:40])
    hostile.post(run(**{"01_apply_tool_results": (0, 1, HOSTILE)}))
    page = httpx.get(served.page, timeout=10, follow_redirects=True)
    assert page.status_code == 200
    assert "<script>window" not in page.text and "&lt;script&gt;window.pwned" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    fragment = served.instructor(f"/fragment/learner/{httpx.URL(path=HOSTILE[:40]).raw_path.decode()}")
    assert fragment.status_code == 200 and "<script>" not in fragment.text and "<img" not in fragment.text


def test_room_export_csv_and_one_results_json_per_learner(served) -> None:  # type: ignore[no-untyped-def]
    Learner.join(served.room, "ada").post(
        run(**{"01_apply_tool_results": (4, 0), "02_bounded_loop": (1, 1, TURN_FIRST)})
    )
    hostile = "=cmd|' /C calc'!A0"
    Learner.join(served.room, hostile).post(run(**{"01_apply_tool_results": (0, 1, APPEND_ONCE)}))
    rows = list(csv.DictReader(io.StringIO(served.instructor("/export.csv").text)))
    ada = {row["challenge"]: row for row in rows if row["learner"] == "ada"}
    assert (ada["01_apply_tool_results"]["status"], ada["02_bounded_loop"]["rules"]) == ("passed", TURN_FIRST)
    assert ada["03_several_calls"]["status"] == "no run"
    assert {row["learner"] for row in rows} == {"ada", "'=cmd|' /C calc'!A0"}, "no formula reaches a spreadsheet"
    archive = zipfile.ZipFile(io.BytesIO(served.instructor("/export/results.zip").content))
    assert sorted(archive.namelist()) == [f"{folder_name('ada')}/results.json", f"{folder_name(hostile)}/results.json"]
    assert folder_name(hostile).startswith("cmd_C_calc_A0-")
    results = json.loads(archive.read(f"{folder_name('ada')}/results.json"))
    assert len(results["tests"]) == 3
    assert (results["score"], [test["max_score"] for test in results["tests"]]) == (5.0, [4.0, 2.0, 0.0]), (
        "one point per test passed, as --report scores"
    )
    assert "self-reported, not verified" in results["output"] and results["extra_data"]["verified"] is False
    assert [test["status"] for test in results["tests"]] == ["passed", "failed", "failed"]


def test_room_store_keeps_only_digests_of_secrets(tmp_path: Path) -> None:
    store = RoomDatabase(tmp_path / "room.db")
    service = RoomService(store)
    assert store.add_learner("ada", "rt-secret-token", "sk-room-secret-key", 0.0, 1e12)
    store.close()
    raw = (tmp_path / "room.db").read_bytes()
    assert b"rt-secret-token" not in raw and b"sk-room-secret-key" not in raw
    assert service.key.startswith("room-")


@pytest.mark.parametrize(
    "where",
    ["authorization", "x-api-key", "x-goog-api-key", "query"],
)
def test_room_knows_a_learners_loop_by_its_api_key(served, where: str) -> None:  # type: ignore[no-untyped-def]
    ada = Learner.join(served.room, "ada")
    headers = {"authorization": f"Bearer {ada.api_key}"} if where == "authorization" else {}
    if where in ("x-api-key", "x-goog-api-key"):
        headers[where] = ada.api_key
    params = {"key": ada.api_key} if where == "query" else {}
    body = {
        "model": "single_call",
        "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
    }
    first = httpx.post(f"{served.base}/v1/chat/completions", json=body, headers=headers, params=params, timeout=10)
    assert first.status_code == 200
    turn = first.json()["choices"][0]["message"]
    body["messages"] += [turn, turn]  # the turn appended twice: the provider refuses
    second = httpx.post(f"{served.base}/v1/chat/completions", json=body, headers=headers, params=params, timeout=10)
    assert second.status_code == 400
    stranger = httpx.post(
        f"{served.base}/v1/chat/completions", json=body, headers={"authorization": "Bearer sk-someone"}, timeout=10
    )
    assert stranger.status_code == 400
    (conversation,) = served.instructor("/api/learners/ada").json()["conversations"]
    assert conversation["requests"] == 2 and conversation["model"] == "single_call"
    assert conversation["outcome"]["status"] == 400 and conversation["outcome"]["kind"] == "missing_result"
    marked = [entry for entry in conversation["entries"] if entry["mark"]]
    assert marked and marked[0]["role"] == "assistant", conversation["entries"]
    assert served.instructor("/api/state").json()["learners"][0]["rejected"] == 1
    lesson = lesson_for_diagnosis("turn_once").rule  # the turn appended twice: the grader's own diagnosis
    assert conversation["outcome"]["rule"] == marked[0]["mark"] == lesson, "marked with the lesson's own words"
    rules = served.instructor("/api/state").json()["rules"]
    assert rules == [{"rule": lesson, "learners": 1, "names": ["ada"], "challenges": ["their own loop"]}]
