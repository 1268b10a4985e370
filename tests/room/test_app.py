"""The room's doors against hostile learners: what is refused before it is stored, the instructor's
key kept off the screen, and who counts as the same learner."""

from __future__ import annotations

import io
import json
import sqlite3
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sandbox.room import RoomDatabase, RoomService
from sandbox.room._export import folder_name
from sandbox.room._guard import RateLimit
from tests.room_server import APPEND_ONCE, TITLES, Learner, Served, run, serving_room


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with serving_room(tmp_path / "room.db") as room:
        yield room


def _post_raw(learner: Learner, body: str) -> httpx.Response:
    headers = {"authorization": f"Bearer {learner.token}", "content-type": "application/json"}
    return httpx.post(f"{learner.room}/api/runs", content=body.encode(), headers=headers, timeout=10)


def _everything_answers(served: Served) -> None:
    for path in ("/api/state", "/export.csv", "/export/results.zip", "/"):
        assert served.instructor(path).status_code == 200, path
    assert served.update().startswith(b"data: ")


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("x \\ud800", "not valid Unicode"),
        ("x \\u001b[31m red", "control character U+001B"),
        ("x \\u202e reversed", "control character U+202E"),
    ],
    ids=["lone-surrogate", "escape", "bidi-override"],
)
def test_room_refuses_bad_text_and_stays_up(served: Served, rule: str, message: str) -> None:
    ada = Learner.join(served.room, "ada")
    body = (
        '{"challenges": {"01_apply_tool_results": {"failed": 1}}, '
        f'"failures": [{{"challenge": "01_apply_tool_results", "rule": "{rule}"}}]}}'
    )
    response = _post_raw(ada, body)
    assert response.status_code == 400 and message in response.json()["error"]["message"]
    _everything_answers(served)


def test_room_keeps_a_loops_lone_surrogate_as_a_replacement_character(served: Served) -> None:
    ada = Learner.join(served.room, "ada")
    body = '{"model": "single_call", "messages": [{"role": "user", "content": "Paris \\ud800?"}]}'
    headers = {"authorization": f"Bearer {ada.api_key}", "content-type": "application/json"}
    httpx.post(f"{served.base}/v1/chat/completions", content=body.encode(), headers=headers, timeout=10)
    (conversation,) = served.instructor("/api/learners/ada").json()["conversations"]
    assert "Paris \ufffd" in conversation["entries"][0]["text"]
    _everything_answers(served)


def test_room_failed_store_write_changes_nothing(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    ada = Learner.join(served.room, "ada")

    def broken(*args: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(served.service.store, "update_progress", broken)
    response = ada.post(run(**{"01_apply_tool_results": (1, 1, APPEND_ONCE)}))
    assert response.status_code == 503 and "changed nothing" in response.json()["error"]["message"]
    (row,) = served.instructor("/api/state").json()["learners"]
    assert row["cells"] == {} and served.instructor("/api/state").json()["rules"] == []
    monkeypatch.undo()
    assert ada.post(run(**{"01_apply_tool_results": (1, 1, APPEND_ONCE)})).status_code == 202


def test_room_columns_come_only_from_its_catalogue(served: Served, tmp_path: Path) -> None:
    ada = Learner.join(served.room, "ada")
    invented = {f"{number:02}_invented": {"passed": 1} for number in range(60)}
    response = ada.post({"challenges": {**invented, "01_apply_tool_results": {"passed": 1}}})
    assert response.status_code == 400 and "not one of this room's challenges" in response.json()["error"]["message"]
    assert [item["name"] for item in served.instructor("/api/state").json()["challenges"]] == list(TITLES)
    outside = RoomService(RoomDatabase(tmp_path / "outside.db"))  # started outside a checkout: the package's catalogue
    names = [item["name"] for item in outside.room.snapshot(0)["challenges"]]
    assert names[:2] == ["01_apply_tool_results", "02_bounded_loop"] and len(names) == 10


def test_room_one_learners_share_of_a_live_update_is_small(served: Served) -> None:
    Learner.join(served.room, "ordinary").post(run(**{"01_apply_tool_results": (1, 1, APPEND_ONCE)}))
    before = len(served.update())
    greedy = Learner.join(served.room, "G" * 40)
    failures = [
        {"challenge": challenge, "test": f"t{number}", "rule": f"{number:03} " + "r" * 236, "headline": "h" * 600}
        for challenge in TITLES
        for number in range(60)
    ]
    tallies = {challenge: {"passed": 0, "failed": 60} for challenge in TITLES}
    assert greedy.post({"challenges": tallies, "failures": failures}).status_code == 202
    grown = len(served.update()) - before
    assert grown < 12_000, f"one learner added {grown} bytes to every live update"


def test_room_429_says_when_to_come_back(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    ada = Learner.join(served.room, "ada")
    monkeypatch.setattr(RateLimit, "wait", lambda self, key: 0.3)  # a post allowed again in 0.3 s
    limited = ada.post(run(**{"02_bounded_loop": (1, 0)}))
    assert limited.status_code == 429 and limited.headers["retry-after"] == "1"


def test_room_key_in_the_url_is_exchanged_for_a_cookie(served: Served) -> None:
    first = httpx.get(served.page, timeout=10)
    assert first.status_code == 303 and first.headers["location"] == "/room/"
    cookie = first.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    with httpx.Client(base_url=served.base, timeout=10, follow_redirects=True) as browser:
        page = browser.get(f"/room/?key={served.service.key}")
        assert page.status_code == 200 and str(page.url) == f"{served.base}/room/"
        assert served.service.key not in page.text
        projector = browser.get("/room/projector")
        assert projector.status_code == 200 and 'id="board"' in projector.text
        assert "export.csv" not in projector.text and 'id="learner"' not in projector.text


def test_room_key_can_be_rotated(tmp_path: Path) -> None:
    db = tmp_path / "room.db"
    with serving_room(db) as served:
        old = served.service.key
        rotated = served.instructor("/api/key", "POST")
        new = rotated.json()["key"]
        assert rotated.status_code == 200 and new != old and rotated.json()["page"].endswith(f"?key={new}")
        assert httpx.get(f"{served.room}/api/state", params={"key": old}, timeout=10).status_code == 401
        assert served.instructor("/api/state").status_code == 200
    with serving_room(db) as again:
        assert again.service.key == new, "the new key survives a restart"


@pytest.mark.parametrize(
    "name", ["bob", "BOB", "B\u043eb", "B0b", "\uff22ob"], ids=["lower", "upper", "cyrillic-o", "zero", "fullwidth"]
)
def test_room_one_name_in_any_spelling_is_one_learner(served: Served, name: str) -> None:
    Learner.join(served.room, "Bob")
    response = httpx.post(f"{served.room}/api/join", json={"name": name}, timeout=10)
    assert response.status_code == 409 and "already joined" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "name", ["Bob\u2800", "Bob\u3164", "Bo\u200bb", "Bob\u00ad"], ids=["braille", "filler", "zwsp", "soft-hyphen"]
)
def test_room_invisible_characters_in_a_name_have_clear_error(served: Served, name: str) -> None:
    response = httpx.post(f"{served.room}/api/join", json={"name": name}, timeout=10)
    assert response.status_code == 400 and "draws nothing" in response.json()["error"]["message"]


def test_room_a_burst_of_joins_from_one_address_is_held(tmp_path: Path) -> None:
    with serving_room(tmp_path / "room.db", join_rate=0.01) as served:
        statuses = [httpx.post(f"{served.room}/api/join", json={"name": f"n{i}"}, timeout=10) for i in range(40)]
        assert [response.status_code for response in statuses[:30]] == [200] * 30, "a table of laptops joins at once"
        refused = statuses[30:]
        assert all(response.status_code == 429 for response in refused), "a script minting names is held"
        assert int(refused[0].headers["retry-after"]) >= 1


def test_room_roster_rename_merge_and_remove(served: Served) -> None:
    roster = served.instructor("/api/roster", "PUT", json={"names": ["Ada Lovelace", "Alan Turing", "Grace Hopper"]})
    assert roster.status_code == 200
    stranger = httpx.post(f"{served.room}/api/join", json={"name": "Mallory"}, timeout=10)
    assert stranger.status_code == 403 and "roster" in stranger.json()["error"]["message"]
    ada = Learner.join(served.room, "ada lovelace")
    assert ada.name == "Ada Lovelace", "a rostered learner gets the roster's spelling"
    assert served.instructor("/api/state").json()["waiting"] == ["Alan Turing", "Grace Hopper"]
    ada.post(run(**{"01_apply_tool_results": (4, 0)}))
    renamed = served.instructor("/api/learners/Ada%20Lovelace/rename", "POST", json={"name": "Ada L."})
    assert renamed.json() == {"name": "Ada L."}
    assert ada.post(run(**{"02_bounded_loop": (1, 1, APPEND_ONCE)})).json()["name"] == "Ada L.", "her token still works"
    served.instructor("/api/roster", "PUT", json={"names": []})
    twice = Learner.join(served.room, "Ada second laptop")
    twice.post(run(**{"03_several_calls": (2, 0)}))
    merged = served.instructor("/api/learners/Ada%20second%20laptop/merge", "POST", json={"into": "Ada L."})
    assert merged.status_code == 200
    (row,) = served.instructor("/api/state").json()["learners"]
    assert row["name"] == "Ada L." and sorted(row["cells"]) == list(TITLES)
    assert served.instructor("/api/learners/Ada%20L.", "DELETE").json()["removed"] is True
    assert served.instructor("/api/state").json()["learners"] == []


def test_room_export_folders_are_unique_per_learner(served: Served) -> None:
    names = ["Ada Lovelace", "_Ada Lovelace", "Ada_Lovelace", "ada lovelacé"]
    for name in names:
        Learner.join(served.room, name)
    archive = zipfile.ZipFile(io.BytesIO(served.instructor("/export/results.zip").content))
    folders = {entry.split("/")[0].casefold() for entry in archive.namelist()}
    assert len(folders) == len(names) and folders == {folder_name(name).casefold() for name in names}
    for name in names:
        assert json.loads(archive.read(f"{folder_name(name)}/results.json"))["extra_data"]["learner"] == name
