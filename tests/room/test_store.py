"""The room's file, as several worker processes write it: in whatever order their writes land."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from sandbox.room import RoomDatabase


@contextmanager
def _two(db: Path) -> Iterator[tuple[RoomDatabase, RoomDatabase]]:
    """Two connections to one room file: what two worker processes hold."""
    with closing(RoomDatabase(db)) as one, closing(RoomDatabase(db)) as two:
        yield one, two


def _chats(store: RoomDatabase, name: str) -> list[dict[str, object]]:
    loaded = store.load({}, {})
    return [body for _, _, body in loaded.conversations[name] if body is not None]


def test_store_a_request_recorded_after_a_later_one_of_its_conversation_only_counts(tmp_path: Path) -> None:
    with _two(tmp_path / "room.db") as (one, two):
        assert one.add_learner("ada", "rt-ada", "sk-room-ada", 0.0, 1e12)
        assert two.record_chat("sk-room-ada", "thread", 3, 20.0, {"entries": ["second"]}) == "ada"
        assert one.record_chat("sk-room-ada", "thread", 1, 10.0, {"entries": ["first"]}) == "ada"
        (chat,) = _chats(two, "ada")
        assert (chat["entries"], chat["requests"]) == (["second"], 2), "the later request's chat, both requests"
        assert one.record_chat("sk-room-ada", "thread", 1, 30.0, {"entries": ["again"]}) == "ada"
        assert [chat["entries"] for chat in _chats(one, "ada")] == [["second"], ["again"]], "the loop ran again"


def test_store_a_key_nobody_holds_records_nothing(tmp_path: Path) -> None:
    with closing(RoomDatabase(tmp_path / "room.db")) as store:
        assert store.add_learner("ada", "rt-ada", "sk-room-ada", 0.0, 1e12)
        assert store.remove_learner("ada")
        assert store.record_chat("sk-room-ada", "thread", 1, 10.0, {"entries": []}) is None
        assert store.load({}, {}).learners == {}


def test_store_a_name_is_taken_in_every_spelling_whichever_process_joins_or_renames(tmp_path: Path) -> None:
    with _two(tmp_path / "room.db") as (one, two):
        assert one.add_learner("Bob", "rt-1", "sk-room-1", 0.0, 1e12)
        assert not two.add_learner("BOB", "rt-2", "sk-room-2", 0.0, 1e12)
        assert not two.add_learner("B\u043eb", "rt-3", "sk-room-3", 0.0, 1e12), "a Cyrillic o is the same name"
        assert two.add_learner("Ada", "rt-4", "sk-room-4", 0.0, 1e12)
        assert one.rename_learner("Ada", "bob") == "Bob", "renamed into someone else's name: refused"
        assert set(two.load({}, {}).learners) == {"Ada", "Bob"}
        assert one.rename_learner("Ada", "ADA") is None, "a learner may respell their own name"


def test_store_a_merge_keeps_the_newest_conversations_of_both_and_the_earlier_join(tmp_path: Path) -> None:
    with _two(tmp_path / "room.db") as (one, two):
        assert one.add_learner("ada", "rt-1", "sk-room-1", 5.0, 1e12)
        assert two.add_learner("ada 2", "rt-2", "sk-room-2", 1.0, 1e12)
        for at in range(10):  # a new conversation each: a first turn of its own
            one.record_chat("sk-room-1", f"ada-{at}", 1, 10.0 + 2 * at, {"at": 10 + 2 * at})
            two.record_chat("sk-room-2", f"two-{at}", 1, 11.0 + 2 * at, {"at": 11 + 2 * at})
        assert two.merge_learners("ada 2", "ada", lambda taken, kept: {"cells": {}})
        loaded = one.load({}, {})
        assert loaded.learners["ada"][0] == 1.0 and "ada 2" not in loaded.learners
        assert [chat["at"] for _, _, chat in loaded.conversations["ada"] if chat] == list(range(18, 30))
        assert not one.merge_learners("ada 2", "ada", lambda taken, kept: {}), "gone already: nothing to merge"
