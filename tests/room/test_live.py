"""The page's live stream: after the first update, only what changed; a slow page misses nothing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from sandbox.room._live import Page, changes
from tests.room_server import APPEND_ONCE, Learner, run, serving_room


def test_live_update_sends_only_the_rows_that_changed(tmp_path: Path) -> None:
    with serving_room(tmp_path / "room.db", heartbeat=0.2) as served:
        learners = [Learner.join(served.room, f"learner {number:02}") for number in range(20)]
        headers = {"authorization": f"Bearer {served.service.key}"}
        with httpx.stream("GET", f"{served.room}/api/events", headers=headers, timeout=10) as stream:
            lines = (line for line in stream.iter_lines() if line.startswith("data: "))
            first = json.loads(next(lines)[6:])
            assert first["full"] and len(first["rows"]) == 20
            learners[3].post(run(**{"01_apply_tool_results": (2, 2, APPEND_ONCE)}))
            update = next(update for update in (json.loads(line[6:]) for line in lines) if update["rows"])
        assert list(update["rows"]) == ["learner 03"] and "order" not in update
        assert "heads" not in update["parts"], "an unchanged part is not sent again"
        assert len(json.dumps(update)) < len(json.dumps(first)) / 5


def _fragments(rows: dict[str, str], version: int) -> dict[str, object]:
    return {"now": 0.0, "version": version, "parts": {"rules": f"v{version}"}, "rows": rows, "order": list(rows)}


def test_live_slow_page_gets_the_updates_it_missed_merged() -> None:
    one = _fragments({"a": "a1", "b": "b1", "c": "c1"}, 1)
    two = _fragments({"a": "a2", "b": "b1"}, 2)
    three = _fragments({"a": "a2", "b": "b1", "c": "c3", "d": "d3"}, 3)
    page = Page()
    page.add(changes(one, two))
    page.add(changes(two, three))
    merged = json.loads(asyncio.run(page.next()))
    assert merged["rows"] == {"a": "a2", "c": "c3", "d": "d3"} and merged["removed"] == []
    assert merged["order"] == ["a", "b", "c", "d"] and merged["parts"] == {"rules": "v3"}
