"""The instructor's page in a real browser: Debian's Chromium, driven by Playwright for Python.

Never `playwright install`: the browser is the system's (`/usr/bin/chromium`). Without it these
tests skip on a developer's machine and FAIL on CI (`CI` or `SANDBOX_REQUIRE_CHROMIUM` set), where
`.ci/run` installs it first. One screenshot per run is kept under pytest's base temp folder.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.grading.judge._meta import load_challenges
from sandbox.room import RoomDatabase
from tests.room_server import APPEND_ONCE, SCREENSHOTS, TURN_FIRST, Learner, Served, run, serving_room

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "<img src=x onerror=window.pwned=1><script>window.pwned=2</script>"
WAIT = 15_000
"""Milliseconds a page has to show a change: generous, for a busy 2-core machine; never a timing claim."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).is_file():
        message = f"Chromium is not installed at {CHROMIUM} (Debian: apt-get install chromium)"
        if os.environ.get("CI") or os.environ.get("SANDBOX_REQUIRE_CHROMIUM"):
            pytest.fail(f"{message}: the room's page tests need it on CI.", pytrace=False)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with serving_room(tmp_path / "room.db", heartbeat=0.2) as room:
        yield room


@pytest.fixture
def page(browser: Any, served: Served) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    opened.goto(served.page)
    opened.wait_for_selector("#live.on", timeout=WAIT)
    opened.evaluate("window.loadedOnce = true")
    yield opened
    assert opened.evaluate("window.loadedOnce === true"), "the page reloaded"
    assert errors == [], f"the page logged errors (a CSP violation?): {errors}"
    context.close()


def _count(page: Any, selector: str, expected: int) -> None:
    page.wait_for_function(
        "([selector, expected]) => document.querySelectorAll(selector).length === expected",
        arg=[selector, expected],
        timeout=WAIT,
    )


@pytest.mark.slow
def test_page_table_fills_and_updates_while_learners_post(page: Any, served: Served) -> None:
    assert page.locator("td.empty").inner_text() == "No learner has joined yet."
    learners = [Learner.join(served.room, f"learner {number:02}") for number in range(6)]
    _count(page, "tr.learner", 6)
    for learner in learners:
        learner.post(run(**{"01_apply_tool_results": (2, 2, APPEND_ONCE)}))
    _count(page, 'td.cell.failing[data-challenge="01_apply_tool_results"]', 6)
    learners[0].post(run(**{"01_apply_tool_results": (4, 0), "02_bounded_loop": (1, 3, TURN_FIRST)}))
    cell = 'tr[data-name="learner 00"] td[data-challenge="01_apply_tool_results"].passed'
    page.wait_for_selector(cell, timeout=WAIT)
    assert page.locator(cell).inner_text() == "✓"
    assert page.locator('tr[data-name="learner 00"] td[data-challenge="02_bounded_loop"]').inner_text() == "1/4"
    assert page.locator('[data-stat="learners"]').inner_text() == "6"
    since = page.locator('tr[data-name="learner 00"] td.since').inner_text()
    assert since.endswith("s ago"), since


@pytest.mark.slow
def test_page_marks_a_stuck_learner(browser: Any, tmp_path: Path) -> None:
    with serving_room(tmp_path / "room.db", heartbeat=0.2, stuck_minutes=0.05) as served:
        context = browser.new_context(viewport={"width": 1400, "height": 800})
        page = context.new_page()
        page.goto(served.page)
        page.wait_for_selector("#live.on", timeout=WAIT)
        ada, bob = Learner.join(served.room, "ada"), Learner.join(served.room, "bob")
        for _ in range(2):
            ada.post(run(**{"01_apply_tool_results": (1, 1, APPEND_ONCE)}))
        bob.post(run(**{"01_apply_tool_results": (1, 1, APPEND_ONCE)}))
        page.wait_for_selector('tr[data-name="ada"] td.cell.failing', timeout=WAIT)
        assert page.locator("td.cell.stuck").count() == 0, "two runs of one failure are not stuck yet"
        ada.post(run(**{"01_apply_tool_results": (1, 1, APPEND_ONCE)}))
        stuck = 'tr[data-name="ada"] td.cell.stuck[data-challenge="01_apply_tool_results"]'
        page.wait_for_selector(stuck, timeout=WAIT)
        assert page.locator(f"{stuck} .streak").inner_text() == "×3"
        assert "stuck" in page.locator('tr[data-name="ada"] .flag').first.inner_text()
        # bob posts nothing more: after stuck_minutes (3 s here) the page marks him on its own
        page.wait_for_selector('tr[data-name="bob"] .flag.idle', timeout=WAIT)
        assert "no run for" in page.locator('tr[data-name="bob"] .flag.idle').inner_text()
        context.close()


@pytest.mark.slow
def test_page_counts_the_rules_broken_right_now(page: Any, served: Served) -> None:
    for name in ("a", "b", "c"):
        Learner.join(served.room, name).post(run(**{"01_apply_tool_results": (0, 3, APPEND_ONCE)}))
    Learner.join(served.room, "d").post(run(**{"02_bounded_loop": (2, 1, TURN_FIRST)}))
    fixed = Learner.join(served.room, "e")
    fixed.post(run(**{"02_bounded_loop": (2, 1, TURN_FIRST)}))
    _count(page, "li.rule", 2)
    # Functions, not expressions: Playwright evaluates an expression with eval(), which the page's CSP refuses.
    page.wait_for_function("() => document.querySelector('li.rule .count').textContent === '3'", timeout=WAIT)
    fixed.post(run(**{"02_bounded_loop": (3, 0)}))
    page.wait_for_function("() => document.querySelectorAll('li.rule .count')[1]?.textContent === '1'", timeout=WAIT)
    shown = [
        (item.locator(".count").inner_text(), item.locator(".text").inner_text())
        for item in page.locator("li.rule").all()
    ]
    assert shown == [("3", APPEND_ONCE), ("1", TURN_FIRST)]


@pytest.mark.slow
def test_page_shows_a_hostile_name_and_failure_as_text(page: Any, served: Served) -> None:
    hostile = Learner.join(served.room, HOSTILE[:40])
    hostile.post(run(**{"01_apply_tool_results": (0, 1, HOSTILE)}))
    _count(page, "tr.learner", 1)
    assert page.locator("button.who").inner_text() == HOSTILE[:40]
    assert page.locator("li.rule .text").inner_text() == HOSTILE
    page.locator("button.who").click()
    page.wait_for_selector("#learner:not([hidden]) h2", timeout=WAIT)
    assert page.locator("#learner h2").inner_text() == HOSTILE[:40]
    assert page.locator("#board img, #rules img, #learner img, #board script, #learner script").count() == 0
    page.wait_for_timeout(200)  # an onerror handler, had one got in, would have run by now
    assert page.evaluate("window.pwned") is None


def test_page_learner_token_cannot_read_the_instructors_api(browser: Any, served: Served) -> None:
    ada = Learner.join(served.room, "ada")
    ada.post(run(**{"01_apply_tool_results": (0, 1, APPEND_ONCE)}))
    context = browser.new_context()
    page = context.new_page()
    response = page.goto(f"{served.room}/")
    assert response is not None and response.status == 401
    assert "?key=" in page.inner_text("body") and "ada" not in page.inner_text("body")
    statuses = page.evaluate(
        """async (token) => {
            const out = {};
            for (const path of ["api/state", "api/learners/ada", "fragment/learner/ada", "export.csv", "api/events"]) {
                const asLearner = await fetch(path, {headers: {authorization: `Bearer ${token}`}});
                const asNobody = await fetch(path);
                out[path] = [asLearner.status, asNobody.status];
            }
            return out;
        }""",
        ada.token,
    )
    assert statuses == {
        path: [403, 401]
        for path in ("api/state", "api/learners/ada", "fragment/learner/ada", "export.csv", "api/events")
    }
    context.close()


def _workshop(served: Served) -> None:
    """A plausible room mid-workshop: 14 learners over the nine challenges."""
    names = [
        "Ada Lovelace", "Alan Turing", "Barbara Liskov", "Claude Shannon", "Dennis Ritchie", "Edsger Dijkstra",
        "Frances Allen", "Grace Hopper", "John Backus", "Katherine Johnson", "Ken Thompson", "Leslie Lamport",
        "Margaret Hamilton", "Radia Perlman",
    ]  # fmt: skip
    challenges = [info.name for info in load_challenges(ROOT / "challenges")]
    for index, name in enumerate(names):
        learner = Learner.join(served.room, name)
        done = (index * 5) % 8
        cells: dict[str, Any] = {challenge: (4, 0) for challenge in challenges[:done]}
        if done < len(challenges):
            rule = APPEND_ONCE if index % 3 else TURN_FIRST
            cells[challenges[done]] = (index % 4, 2 + index % 3, rule)
        posts = 3 if index in (2, 7, 11) else 1
        for _ in range(posts):
            learner.post(run(**cells))
        if name == "Grace Hopper":
            _loop_with_a_repeated_turn(served, learner)


def _loop_with_a_repeated_turn(served: Served, learner: Learner) -> None:
    import httpx

    headers = {"authorization": f"Bearer {learner.api_key}"}
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    body: dict[str, Any] = {"model": "single_call", "messages": [{"role": "user", "content": "Weather in Paris?"}]}
    body["tools"] = tools
    first = httpx.post(f"{served.base}/v1/chat/completions", json=body, headers=headers, timeout=10).json()
    turn = first["choices"][0]["message"]
    result = {"role": "tool", "tool_call_id": turn["tool_calls"][0]["id"], "content": "18C, clear"}
    body["messages"] += [turn, turn, result]
    httpx.post(f"{served.base}/v1/chat/completions", json=body, headers=headers, timeout=10)


@pytest.mark.slow
def test_page_screenshot_for_the_projector(page: Any, served: Served, tmp_path_factory: pytest.TempPathFactory) -> None:
    served.service.room.titles.update({info.name: info.title for info in load_challenges(ROOT / "challenges")})
    _workshop(served)
    _count(page, "tr.learner", 14)
    page.wait_for_selector("td.cell.stuck", timeout=WAIT)
    page.locator('#rows button.who[data-name="Grace Hopper"]').click()
    page.wait_for_selector("#learner .bubble.rejected", timeout=WAIT)
    assert "Latest failure" in page.locator("#learner .failure h3").inner_text()
    assert page.locator("#learner .bubble.refusal .flag-rule").inner_text().startswith("rule: ")
    shot = tmp_path_factory.getbasetemp() / "room.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    SCREENSHOTS.append(shot)


def test_page_takes_the_key_off_the_address_bar(page: Any, served: Served) -> None:
    assert page.url == f"{served.room}/", "the key is in the cookie now, not on the projector"
    assert served.service.key not in page.content()


def _in_view(page: Any, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + 20 <= 1000 and box["x"] + 20 <= 1600


def test_page_says_who_needs_help_now(browser: Any, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    with serving_room(tmp_path / "room.db", heartbeat=0.2) as served:
        served.instructor("/api/roster", "PUT", json={"names": ["Ada", "Bob", "Carol", "Dan", "Never Came"]})
        ada, bob, carol = (Learner.join(served.room, name) for name in ("Ada", "Bob", "Carol"))
        for _ in range(3):
            ada.post(run(**{"01_apply_tool_results": (1, 1, APPEND_ONCE)}))
        for _ in range(3):
            bob.post(run(**{"02_bounded_loop": (1, 1, APPEND_ONCE)}))
        carol.post(run(**{"01_apply_tool_results": (2, 0)}))
        context = browser.new_context(viewport={"width": 1600, "height": 1000})
        page = context.new_page()
        page.goto(served.page)
        page.wait_for_selector("#live.on", timeout=WAIT)
        queue = [item.get_attribute("data-name") for item in page.locator("#queue li").all()]
        assert queue == ["Ada", "Bob"], "stuck longest first"
        assert "same failure 3 runs in a row on 01" in page.locator('#queue li[data-name="Ada"] .why').inner_text()
        assert page.locator("li.rule .names").inner_text() == "Ada, Bob", "names shown, not only on hover"
        assert page.locator("#waiting").inner_text().endswith("Dan, Never Came")
        summary = page.locator('td.colsum[data-challenge="01_apply_tool_results"]').inner_text()
        assert summary.split() == ["1✓", "1✗", "1!"], summary
        page.locator('#queue button.who[data-name="Ada"]').click()
        page.wait_for_selector("#learner:not([hidden]) .failure", timeout=WAIT)
        assert _in_view(page, "#learner h2")
        context.close()


def test_page_redraws_only_what_changed(page: Any, served: Served) -> None:
    learners = [Learner.join(served.room, f"learner {number:02}") for number in range(5)]
    _count(page, "tr.learner", 5)
    page.evaluate("() => { document.querySelector('tr[data-name=\"learner 01\"]').dataset.kept = 'yes'; }")
    version = int(page.evaluate("() => document.body.dataset.version"))
    learners[3].post(run(**{"01_apply_tool_results": (2, 2, APPEND_ONCE)}))
    page.wait_for_selector('tr[data-name="learner 03"] td.cell.failing', timeout=WAIT)
    assert int(page.evaluate("() => document.body.dataset.version")) > version
    assert page.locator('tr[data-name="learner 01"]').get_attribute("data-kept") == "yes", "an unchanged row is kept"


def test_page_with_a_full_room(browser: Any, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The largest room the docs promise: 300 learners on one page."""
    learners = 300
    challenges = [info.name for info in load_challenges(ROOT / "challenges")]
    titles = {info.name: info.title for info in load_challenges(ROOT / "challenges")}
    # Seated in the room's file before it opens (joins are tested elsewhere); their runs are posted.
    database = RoomDatabase(tmp_path / "room.db")
    now = time.time()
    for index in range(learners):
        database.add_learner(f"Learner {index:03}", f"rt-{index}", f"sk-room-{index}", now, now + 86400)
    database.close()
    with serving_room(tmp_path / "room.db", heartbeat=0.2, titles=titles, post_rate=100.0) as served:
        for index in range(learners):
            learner = Learner(served.room, f"Learner {index:03}", f"rt-{index}", f"sk-room-{index}")
            done = index % 9
            cells: dict[str, Any] = {challenge: (4, 0) for challenge in challenges[:done]}
            cells[challenges[done]] = (1, 2, APPEND_ONCE if index % 2 else TURN_FIRST)
            for _ in range(3 if index % 7 == 0 else 1):
                learner.post(run(**cells))
        context = browser.new_context(viewport={"width": 1600, "height": 1000})
        page = context.new_page()
        page.goto(served.page)
        page.wait_for_selector("#live.on", timeout=WAIT)
        _count(page, "tr.learner", learners)
        assert page.locator("#queue li").count() == len(range(0, learners, 7))
        assert _in_view(page, "#queue li:first-child") and _in_view(page, "li.rule:first-child")
        board = tmp_path_factory.getbasetemp() / f"room-{learners}-board.png"
        page.screenshot(path=str(board))
        SCREENSHOTS.append(board)
        page.locator('tr[data-name="Learner 090"] button.who').scroll_into_view_if_needed()
        page.locator('tr[data-name="Learner 090"] button.who').click()
        page.wait_for_selector("#learner:not([hidden]) h2", timeout=WAIT)
        assert _in_view(page, "#learner h2"), "the panel opens where the instructor is looking"
        shot = tmp_path_factory.getbasetemp() / f"room-{learners}.png"
        page.screenshot(path=str(shot))
        SCREENSHOTS.append(shot)
        context.close()
