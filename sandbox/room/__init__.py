"""The workshop room: the sandbox server plus a live page of who ran what, and which rule broke.

    sandbox room [--room-db FILE]          the sandbox and the room (`sandbox serve --room` too)
    pytest challenges/ --room URL --name NAME      a learner's grader joins and posts each run

Trust zones: the room's server side (`_store`, `_model`, `_service`, `_app`, `_page`, `_export`,
`_convo`, `_guard`) runs in the instructor's `sandbox room` process; the grader's side (`_link`,
`_plugin`) runs in each learner's judge process, never in their code, and never blocks grading.
It never receives learners' code: only tallies, rules, headlines and feedback with the code taken out.
"""

from __future__ import annotations

from ._app import RoomApp
from ._service import RecordingEngine, RoomService
from ._store import RoomDatabase

__all__ = ["RecordingEngine", "RoomApp", "RoomService", "RoomDatabase"]
