"""The instructor's page, rendered on the server: the whole page once, then its parts for each update.

May touch: nothing (pure functions of the room's snapshot to HTML). Every value a learner sent (a
name, a rule, a failure, a transcript) goes through `html.escape` here and nowhere else, so markup in
a name is text on the page; the page's script only swaps in these server-rendered fragments and never
builds markup from data. The assets (`static/room.css`, `static/room.js`) ship in the package.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

__all__ = ["board", "learner_panel", "page", "rules", "summary"]

_LABELS = {
    "passed": "passed",
    "failing": "failing",
    "not started": "not started",
    "in progress": "in progress",
    "incomplete": "incomplete",
    "not graded": "not graded",
}


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _short(name: str) -> str:
    """`03_append_once` -> `03`: column heads stay narrow; the title is the tooltip."""
    return name[:2] if name[:2].isdigit() else name[:16]


def _cell(challenge: str, cell: dict[str, Any] | None) -> str:
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


def board(snapshot: dict[str, Any]) -> str:
    """The learners x challenges table."""
    challenges = [item["name"] for item in snapshot["challenges"]]
    head = "".join(
        f'<th class="challenge" title="{_e(item["name"])}: {_e(item["title"])}">{_e(_short(item["name"]))}'
        f'<span class="title">{_e(item["title"] or item["name"])}</span></th>'
        for item in snapshot["challenges"]
    )
    rows = []
    for learner in snapshot["learners"]:
        cells = "".join(_cell(challenge, learner["cells"].get(challenge)) for challenge in challenges)
        flags = []
        if learner["idle"]:
            flags.append(f'<span class="flag idle">no run for {snapshot["stuck_minutes"]:g}+ min</span>')
        elif learner["stuck"]:
            flags.append('<span class="flag stuck">stuck</span>')
        if learner["rejected"]:
            flags.append(
                f'<span class="flag loop" title="their own loop was refused">loop ✗{learner["rejected"]}</span>'
            )
        last = learner["last_run"]
        since = f'<time data-t="{last}">—</time>' if last is not None else '<span class="never">no run yet</span>'
        row_class = "learner stuck" if learner["stuck"] else "learner"
        rows.append(
            f'<tr class="{row_class}" data-name="{_e(learner["name"])}">'
            f'<th class="name" scope="row"><button type="button" class="who" data-name="{_e(learner["name"])}">'
            f"{_e(learner['name'])}</button> {''.join(flags)}</th>"
            f"{cells}"
            f'<td class="since">{since}</td></tr>'
        )
    if not rows:
        rows.append(f'<tr><td class="empty" colspan="{len(challenges) + 2}">No learner has joined yet.</td></tr>')
    return (
        '<table class="board"><thead><tr><th class="name">Learner</th>'
        f"{head}<th>last run</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def rules(snapshot: dict[str, Any]) -> str:
    """The rules broken right now, by how many learners break them."""
    if not snapshot["rules"]:
        return '<p class="quiet">No rule is broken right now.</p>'
    most = max(int(item["learners"]) for item in snapshot["rules"]) or 1
    items = []
    for item in snapshot["rules"]:
        width = round(100 * int(item["learners"]) / most)
        names = ", ".join(item["names"])
        items.append(
            f'<li class="rule" title="{_e(names)}"><div class="count">{item["learners"]}</div>'
            f'<div class="what"><div class="text">{_e(item["rule"])}</div>'
            f'<div class="where" title="{_e(", ".join(item["challenges"]))}">'
            f"in {_e(', '.join(_short(name) for name in item['challenges']))}</div>"
            f'<div class="bar"><span class="w{width // 10}"></span></div></div></li>'
        )
    return f'<ol class="rules">{"".join(items)}</ol>'


def summary(snapshot: dict[str, Any]) -> str:
    learners = snapshot["learners"]
    total = len(snapshot["challenges"])
    stuck = sum(1 for learner in learners if learner["stuck"])
    finished = sum(1 for learner in learners if total and learner["passed"] == total)
    return (
        f'<span class="stat"><b data-stat="learners">{len(learners)}</b> learners</span>'
        f'<span class="stat stuck"><b data-stat="stuck">{stuck}</b> stuck</span>'
        f'<span class="stat done"><b data-stat="finished">{finished}</b> finished</span>'
    )


def learner_panel(detail: dict[str, Any]) -> str:
    """One learner: the latest failure as they saw it, then each conversation as a chat."""
    parts = [f"<h2>{_e(detail['name'])}</h2>"]
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
    config = _e(json.dumps({"events": "api/events", "learner": "fragment/learner/"}))
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
  <div id="summary" class="summary">{summary(snapshot)}</div>
  <div id="live" class="live" title="live updates">connecting…</div>
</header>
<section class="join"><div>Join: <code id="join-line">{_e(join_line)}</code></div>
  <div class="loops">Your own loop: <code>{_e(loop_line)}</code></div></section>
<main>
  <section class="left"><div id="board">{board(snapshot)}</div>
    <p class="legend"><span class="cell passed">✓</span> passed <span class="cell failing">1/4</span> failing
    <span class="cell in-progress">2/4</span> in progress <span class="cell not-started">0/4</span> not started
    <span class="cell failing stuck">1/4</span> stuck: the same failure {snapshot["stuck_runs"]} runs in a row
    · a learner is stuck after {snapshot["stuck_minutes"]:g} minutes without a run
    {"" if projector else _EXPORTS}</p>
  </section>
  <aside><h2>Rules broken right now</h2><div id="rules">{rules(snapshot)}</div></aside>
</main>
{"" if projector else '<section id="learner" class="learner-panel" hidden></section>'}
</body>
</html>
"""
