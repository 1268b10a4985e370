"""A grader's link to a workshop room: join once, post each run, and never hold grading up.

May touch: the room's URL (HTTP, short timeouts, no proxy) and the token cache file
(`SANDBOX_ROOM_CACHE`, or `~/.cache/skyl-sandbox/rooms.json`): one token and API key per room URL,
so the next run posts under the same name without joining again. Runs in the judge's process
(pytest's, or `sandbox grade`'s), never in learner code. Everything here happens on a background
thread; a room that is down, slow or refusing costs the grader at most a few `timeout`s at the end
of the run, and one line saying so.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from ._options import ROOM_ENV, ROOM_NAME_ENV

__all__ = ["ROOM_ENV", "ROOM_NAME_ENV", "RoomLink", "cache_path", "room_url"]

TIMEOUT = 2.0


def cache_path() -> Path:
    override = os.environ.get("SANDBOX_ROOM_CACHE")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "skyl-sandbox" / "rooms.json"


def _read_cache() -> dict[str, Any]:
    try:
        data = json.loads(cache_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(url: str, entry: dict[str, Any]) -> None:
    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {**_read_cache(), url: entry}
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(json.dumps(data, indent=2), encoding="utf-8")
        os.chmod(temporary, 0o600)  # a token is a password for one name in one room
        os.replace(temporary, path)
    except OSError:
        pass  # the next run joins again


def room_url(url: str) -> str:
    """The room's URL as the banner prints it: `http://HOST:PORT` alone means its `/room`."""
    url = url.strip().rstrip("/")
    parts = urllib.parse.urlsplit(url)
    return url + "/room" if parts.scheme and not parts.path else url


class _Refused(Exception):
    """The room answered, and said no: its message is what the learner reads."""


class RoomLink:
    """Joins `url` as `name` in the background; `post(run)` sends a run; `finish()` reports in one line."""

    def __init__(self, url: str, name: str, *, timeout: float = TIMEOUT) -> None:
        self.url = room_url(url)
        self.name = name
        self.timeout = timeout
        self.lines: list[str] = []
        self._joined: dict[str, Any] | None = None
        self._problem: str | None = None
        # Made here, on the grader's main thread: a client made on the first request would import its
        # transport there, and on CPython 3.11 an import pytest rewrites, on a thread, while the main
        # thread rewrites another, ends in "SystemError: AST constructor recursion depth mismatch".
        self._client = httpx.Client(timeout=timeout, trust_env=False)
        self._joiner = threading.Thread(target=self._join, name="sandbox-room-join", daemon=True)
        self._joiner.start()
        self._thread = self._joiner

    def _request(self, method: str, path: str, body: dict[str, Any], token: str | None = None) -> dict[str, Any]:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        response = self._client.request(method, self.url + path, json=body, headers=headers)
        try:
            data = response.json()
        except ValueError:
            data = {}
        if response.status_code >= 400:
            message = data.get("error", {}).get("message") if isinstance(data, dict) else None
            raise _Refused(f"{response.status_code}: {message or response.text[:200]}")
        return data if isinstance(data, dict) else {}

    def _join(self) -> None:
        """The cached token, when this machine has joined this room as this name before (no request:
        a token the room no longer knows is renewed when a post meets it); else a join."""
        cached = _read_cache().get(self.url)
        if isinstance(cached, dict) and cached.get("name") == self.name and cached.get("token"):
            self._joined = cached
            return
        self._join_now(None, None)

    def _join_now(self, old: str | None, api_key: str | None) -> None:
        try:
            try:
                joined = self._request("POST", "/api/join", {"name": self.name, "token": old, "api_key": api_key})
            except _Refused as refusal:
                if old is None or not str(refusal).startswith("409"):
                    raise
                joined = self._request("POST", "/api/join", {"name": self.name})  # the room forgot us
            self._joined = joined
            _write_cache(self.url, {"name": joined["name"], "token": joined["token"], "api_key": joined["api_key"]})
        except _Refused as refusal:
            self._problem = f"the room at {self.url} refused the join ({refusal})"
        except (httpx.HTTPError, KeyError, OSError) as error:
            self._problem = f"cannot reach the room at {self.url} ({_reason(error)})"

    def post(self, run: dict[str, Any]) -> threading.Thread:
        """Send `run` once the join is done, on a thread of its own; `finish()` waits for it, bounded."""
        thread = threading.Thread(target=self._post, args=(run,), name="sandbox-room-post", daemon=True)
        thread.start()
        self._thread = thread
        return thread

    def _post(self, run: dict[str, Any]) -> None:
        self._joiner.join(self.timeout * 2)
        if self._joined is None:
            return
        try:
            try:
                self._request("POST", "/api/runs", run, token=self._joined["token"])
            except _Refused as refusal:
                if not str(refusal).startswith("401"):  # an unknown or expired token: join again, once
                    raise
                old, self._joined = self._joined, None
                self._join_now(old.get("token"), old.get("api_key"))
                if self._joined is None:
                    return
                self._request("POST", "/api/runs", run, token=self._joined["token"])
            self.lines.append(
                f"room: this run is on the room's page as {self._joined['name']!r}. Your own loop joins it with "
                f"api_key={self._joined['api_key']} at base_url={self.url.rsplit('/room', 1)[0]}/v1"
            )
        except _Refused as refusal:
            self._problem = f"the room at {self.url} refused this run ({refusal})"
        except (httpx.HTTPError, OSError) as error:
            self._problem = f"cannot reach the room at {self.url} ({_reason(error)})"

    def finish(self, say: Callable[[str], None]) -> None:
        """Wait for the post, then say how it went in one line. A post that meets a forgotten token joins
        again and posts again: up to four requests after the first join, each bounded by `timeout`."""
        self._thread.join(self.timeout * 4 + 0.5)
        if self._thread.is_alive():
            self._problem = self._problem or f"the room at {self.url} did not answer within {self.timeout:g} s"
        else:
            self._client.close()
        if self._problem:
            say(f"room: {self._problem}; grading went on without it.")
        for line in self.lines:
            say(line)


def _reason(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    if "Connection refused" in text or "[Errno 111]" in text:
        return "connection refused: is `sandbox room` running, and the URL right?"
    return text[:200]
