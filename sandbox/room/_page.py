"""The instructor's page, rendered on the server: the whole page once, then the fragments that changed.

May touch: nothing (pure functions of the room's snapshot to HTML). Every value a learner sent (a
name, a rule, a failure, a transcript) goes through `html.escape` here and nowhere else, so markup in
a name is text on the page; the page's script only swaps in these server-rendered fragments (the
page's parts by id, the board's rows by learner) and never builds markup from data. The assets
(`static/room.css`, `static/room.js`) ship in the package.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

__all__ = ["fragments", "learner_panel", "page"]

_LABELS = {
    "passed": "passed",
    "failing": "failing",
    "not started": "not started",
    "in progress": "in progress",
    "incomplete": "incomplete",
    "not graded": "not graded",
}


SHOWN_NAMES = 40
"""Names listed under a rule; past that the list says how many more (the board shows them all)."""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _short(name: str) -> str:
    """`03_append_once` -> `03`: column heads stay narrow; the title is the tooltip."""
    return name[:2] if name[:2].isdigit() else name[:16]


def _cell(challenge: str, cell: dict[str, Any] | None, verified: dict[str, Any] | None = None) -> str:
    if verified is not None:  # the instructor's own grading outranks what the learner's grader said
        tip = f"{challenge}: verified by the instructor's grading: {verified['passed']}/{verified['total']} tests"
        mark = "✓" if verified["status"] == "passed" else f"{verified['passed']}/{verified['total']}"
        return (
            f'<td class="cell verified {_e(str(verified["status"]).replace(" ", "-"))}" '
            f'data-challenge="{_e(challenge)}" '
            f'data-status="{_e(verified["status"])}" title="{_e(tip)}">{_e(mark)}<span class="vf">V</span></td>'
        )
    if cell is None:
        return f'<td class="cell none" data-challenge="{_e(challenge)}"></td>'
    status = str(cell["status"])
    classes = ["cell", status.replace(" ", "-")]
    if cell["stuck"]:
        classes.append("stuck")
    mark = "✓" if status == "passed" else f"{cell['passed']}/{cell['total']}"
    rules = "; ".join(cell["rules"])
    tip = f"{challenge}: {_LABELS.get(status, status)}, {cell['passed']}/{cell['total']} tests"
    if cell["stuck"]:
        tip += f", the same failure {cell['streak']} runs in a row"
    if rules:
        tip += f". Rule: {rules}"
    badge = f'<span class="streak">×{cell["streak"]}</span>' if cell["stuck"] else ""
    return (
        f'<td class="{" ".join(classes)}" data-challenge="{_e(challenge)}" data-status="{_e(status)}" '
        f'title="{_e(tip)}">{_e(mark)}{badge}</td>'
    )


def _ago(seconds: float) -> str:
    minutes = int(seconds // 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02} min"


def row(snapshot: dict[str, Any], learner: dict[str, Any]) -> str:
    """One learner's row of the board."""
    cells = "".join(
        _cell(item["name"], learner["cells"].get(item["name"]), learner["verified"].get(item["name"]))
        for item in snapshot["challenges"]
    )
    flags = []
    if learner["idle"]:
        flags.append(f'<span class="flag idle">no run for {snapshot["stuck_minutes"]:g}+ min</span>')
    if any(cell["stuck"] for cell in learner["cells"].values()):
        flags.append('<span class="flag stuck">stuck</span>')
    if learner["rejected"]:
        flags.append(f'<span class="flag loop" title="their own loop was refused">loop ✗{learner["rejected"]}</span>')
    last = learner["last_run"]
    since = f'<time data-t="{last}">—</time>' if last is not None else '<span class="never">no run yet</span>'
    row_class = "learner stuck" if learner["stuck"] else "learner"
    revision = f"{last}:{learner['conversations']}:{learner['rejected']}"
    return (
        f'<tr class="{row_class}" data-name="{_e(learner["name"])}" data-rev="{_e(revision)}">'
        f'<th class="name" scope="row"><button type="button" class="who" data-name="{_e(learner["name"])}">'
        f"{_e(learner['name'])}</button> {''.join(flags)}</th>"
        f'{cells}<td class="since">{since}</td></tr>'
    )


def column_summary(snapshot: dict[str, Any]) -> str:
    """The row under the heads: per challenge, how many passed, fail, and are stuck."""
    cells = "".join(
        f'<td class="colsum" data-challenge="{_e(item["name"])}" title="{_e(item["name"])}: {item["passed"]} passed, '
        f'{item["failing"]} failing, {item["stuck"]} stuck, of {item["started"]} who ran it">'
        f'<span class="ok">{item["passed"]}✓</span>'
        + (f'<span class="bad">{item["failing"]}✗</span>' if item["failing"] else "")
        + (f'<span class="stk">{item["stuck"]}!</span>' if item["stuck"] else "")
        + "</td>"
        for item in snapshot["challenges"]
    )
    return f'<th class="name">all {len(snapshot["learners"])}</th>{cells}<td></td>'


def heads(snapshot: dict[str, Any]) -> str:
    """The board's column heads: one per challenge of the catalogue."""
    head = "".join(
        f'<th class="challenge" title="{_e(item["name"])}: {_e(item["title"])}">{_e(_short(item["name"]))}'
        f'<span class="title">{_e(item["title"] or item["name"])}</span></th>'
        for item in snapshot["challenges"]
    )
    return f'<th class="name">Learner</th>{head}<th>last run</th>'


def _board(snapshot: dict[str, Any], rows: dict[str, str]) -> str:
    return (
        f'<table class="board"><thead><tr id="heads">{heads(snapshot)}</tr>'
        f'<tr id="colsum" class="colsum">{column_summary(snapshot)}</tr></thead>'
        f'<tbody id="rows">{"".join(rows.values()) or _EMPTY}</tbody></table>'
    )


_EMPTY = '<tr><td class="empty" colspan="99">No learner has joined yet.</td></tr>'


def queue(snapshot: dict[str, Any]) -> str:
    """Who needs help now: stuck learners, the longest stuck first, with what they are stuck on."""
    if not snapshot["queue"]:
        return '<p class="quiet">Nobody is stuck right now.</p>'
    items = []
    for entry in snapshot["queue"]:
        reasons = "; ".join(
            f"{reason['what']}" + (f" on {_short(reason['challenge'])}" if reason["challenge"] else "")
            for reason in entry["why"]
        )
        items.append(
            f'<li data-name="{_e(entry["name"])}"><button type="button" class="who" data-name="{_e(entry["name"])}">'
            f'{_e(entry["name"])}</button> <span class="for">{_ago(snapshot["now"] - entry["since"])}</span>'
            f'<div class="why">{_e(reasons)}</div></li>'
        )
    return f'<ol class="queue">{"".join(items)}</ol>'


def waiting(snapshot: dict[str, Any]) -> str:
    """The roster's names nobody has joined as yet."""
    if not snapshot["waiting"]:
        return ""
    names = ", ".join(_e(name) for name in snapshot["waiting"])
    return f'<h2>Never started ({len(snapshot["waiting"])})</h2><p class="waiting">{names}</p>'


def rules(snapshot: dict[str, Any]) -> str:
    """The rules broken right now, by how many learners break them."""
    if not snapshot["rules"]:
        return '<p class="quiet">No rule is broken right now.</p>'
    most = max(int(item["learners"]) for item in snapshot["rules"]) or 1
    items = []
    for item in snapshot["rules"]:
        width = round(100 * int(item["learners"]) / most)
        shown = item["names"][:SHOWN_NAMES]
        more = f" and {len(item['names']) - len(shown)} more" if len(item["names"]) > len(shown) else ""
        names = ", ".join(shown) + more
        items.append(
            f'<li class="rule"><div class="count">{item["learners"]}</div>'
            f'<div class="what"><div class="text">{_e(item["rule"])}</div>'
            f'<div class="where" title="{_e(", ".join(item["challenges"]))}">'
            f"in {_e(', '.join(_short(name) for name in item['challenges']))}</div>"
            f'<div class="names">{_e(names)}</div>'
            f'<div class="bar"><span class="w{width // 10}"></span></div></div></li>'
        )
    return f'<ol class="rules">{"".join(items)}</ol>'


def summary(snapshot: dict[str, Any]) -> str:
    learners = snapshot["learners"]
    total = len(snapshot["challenges"])
    stuck = sum(1 for learner in learners if learner["stuck"])
    finished = sum(1 for learner in learners if total and learner["passed"] == total)
    waited = (
        f'<span class="stat"><b data-stat="waiting">{len(snapshot["waiting"])}</b> not joined</span>'
        if snapshot["waiting"]
        else ""
    )
    return (
        f'<span class="stat"><b data-stat="learners">{len(learners)}</b> learners</span>'
        f'<span class="stat stuck"><b data-stat="stuck">{stuck}</b> stuck</span>'
        f'<span class="stat done"><b data-stat="finished">{finished}</b> finished</span>{waited}'
    )


def fragments(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The page's live parts: `parts` by element id, `rows` by learner, and the rows' `order`."""
    rows = {learner["name"]: row(snapshot, learner) for learner in snapshot["learners"]}
    return {
        "parts": {
            "summary": summary(snapshot),
            "queue": queue(snapshot),
            "waiting": waiting(snapshot),
            "rules": rules(snapshot),
            "heads": heads(snapshot),
            "colsum": column_summary(snapshot),
        },
        "rows": rows,
        "order": list(rows),
    }


def learner_panel(detail: dict[str, Any]) -> str:
    """One learner: what the instructor can do about them, the latest failure as they saw it, then each
    conversation as a chat."""
    name = _e(detail["name"])
    parts = [
        f"<h2>{name}</h2>"
        f'<div class="manage" data-name="{name}"><button type="button" data-act="rename">Rename</button>'
        '<button type="button" data-act="merge">Merge into…</button>'
        '<button type="button" data-act="remove">Remove</button></div>'
    ]
    failure = detail["latest_failure"]
    if failure:
        parts.append(
            f'<section class="failure"><h3>Latest failure: {_e(failure["challenge"])}</h3>'
            f'<p class="test">{_e(failure["test"])}</p>'
            + (f'<p class="rule-line">Rule: {_e(failure["rule"])}</p>' if failure["rule"] else "")
            + f"<pre>{_e(failure['text'] or failure['headline'])}</pre></section>"
        )
    else:
        parts.append('<p class="quiet">No failure reported.</p>')
    conversations = detail["conversations"]
    if conversations:
        parts.append(f"<h3>Their loops' conversations ({len(conversations)})</h3>")
    for conversation in conversations:
        parts.append(_chat(conversation))
    return "".join(parts)


def _chat(conversation: dict[str, Any]) -> str:
    outcome = conversation["outcome"]
    title = (
        f"{conversation['provider']} · {conversation['model'] or 'no model'} · {conversation['requests']} request(s)"
    )
    bubbles = []
    for entry in conversation["entries"]:
        mark = entry.get("mark")
        classes = f"bubble {_e(entry['role'])}" + (" rejected" if mark else "")
        flag = f'<div class="flag-rule">refused here: {_e(mark)}</div>' if mark else ""
        role = f'<div class="role">{_e(entry["role"])}</div>'
        bubbles.append(f'<div class="{classes}">{role}{flag}<pre>{_e(entry["text"])}</pre></div>')
    if outcome:
        bubbles.append(
            f'<div class="bubble refusal"><div class="role">provider {outcome["status"]}</div>'
            f'<div class="flag-rule">rule: {_e(outcome["rule"])} ({_e(outcome.get("kind", ""))})</div>'
            f"<pre>{_e(outcome['message'])}</pre></div>"
        )
    state = "rejected" if outcome else "ok"
    return f'<details class="chat {state}" open><summary>{_e(title)}</summary>{"".join(bubbles)}</details>'


_EXPORTS = '· <a href="export.csv">CSV</a> · <a href="export/results.zip">results.json per learner</a>'


def page(snapshot: dict[str, Any], *, join_line: str, loop_line: str, projector: bool = False) -> str:
    """The whole page; the script then keeps its parts fresh over server-sent events. The projector's
    page shows the board and the rules only: no learner's panel, exports or controls."""
    config = _e(json.dumps({"events": "api/events", "learner": "fragment/learner/", "api": "api/"}))
    live = fragments(snapshot)
    manage = (
        ""
        if projector
        else '<details class="admin"><summary>Manage the room</summary><label>Roster, one name a line (only these '
        'join; empty lets anyone): <textarea id="roster" rows="6"></textarea></label>'
        '<button type="button" data-act="roster">Load roster</button> '
        '<button type="button" data-act="rotate">New instructor key</button> <span id="admin-said"></span></details>'
    )
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Workshop room</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="static/room.css">
<script src="static/room.js" defer></script>
</head>
<body data-room="{config}" class="{"projector" if projector else "instructor"}">
<header>
  <h1>Workshop room</h1>
  <div id="summary" class="summary">{live["parts"]["summary"]}</div>
  <div id="live" class="live" title="live updates">connecting…</div>
</header>
<section class="join"><div>Join: <code id="join-line">{_e(join_line)}</code></div>
  <div class="loops">Your own loop: <code>{_e(loop_line)}</code></div></section>
<main>
  <section class="help"><h2>Needs help now</h2><div id="queue">{live["parts"]["queue"]}</div>
    <div id="waiting">{live["parts"]["waiting"]}</div>{manage}</section>
  <section class="left"><div id="board">{_board(snapshot, live["rows"])}</div>
    <p class="legend"><span class="cell passed">✓</span> passed <span class="cell failing">1/4</span> failing
    <span class="cell in-progress">2/4</span> in progress <span class="cell not-started">0/4</span> not started
    <span class="cell failing stuck">1/4</span> stuck: the same failure {snapshot["stuck_runs"]} runs in a row
    · <span class="cell passed verified">✓<span class="vf">V</span></span> verified by your grading; every
    other cell is what the learner's own grader reported
    · a learner is stuck after {snapshot["stuck_minutes"]:g} minutes without a run
    {"" if projector else _EXPORTS}</p>
  </section>
  <aside><h2>Rules broken right now</h2><div id="rules">{live["parts"]["rules"]}</div></aside>
</main>
{"" if projector else '<section id="learner" class="learner-panel" hidden></section>'}
</body>
</html>
"""
