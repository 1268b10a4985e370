"""The Redis backend of kept state: several machines share one Redis server.

May touch: the keys under its prefix in the Redis database the URL names, nothing else. Every method
is one Lua script, which Redis runs atomically, so the store's rules hold among all the processes
that share the server. Entries are hashes; the least recently used is the lowest score in a sorted
set that every use advances. A Redis that keeps nothing on disk forgets everything when it
restarts: a continuation then gets the provider's own "not found". Snapshots are in-process
objects: this backend keeps none, so a continuation walks its chain's history whole.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..._exceptions import UsageError
from .._repeats import REPEAT_WINDOW, Repeats
from ._store import ENTRY_OVERHEAD, HOLD_SECONDS, REMEMBER_EVICTED, Blocks, Claim, Entry, Store, StoreUnavailable, T

__all__ = ["RedisStore"]

TIMEOUT_SECONDS = 2.0
"""How long a call waits for Redis (to connect, and for an answer) before the request gets a 503."""
PREFIX = "sandbox:kept:"
MOVED_SECONDS = 600
"""How long the repeat guard remembers that a conversation moved on (forgetting only restarts a count)."""

# Lua shared by the scripts: key names, and forgetting an entry. KEYS are never passed: every key is
# the prefix (ARGV[1]) and a name, so one script serves any database.
_COMMON = """
local p = ARGV[1]
local function e(key) return p .. 'e:' .. key end
local function used() return redis.call('INCR', p .. 'used') end
local function delete(key)
    local size = redis.call('HGET', e(key), 'size')
    if size then
        redis.call('DEL', e(key))
        redis.call('ZREM', p .. 'lru', key)
        redis.call('DECRBY', p .. 'bytes', size)
    end
end
local function forget(key)
    local seq = redis.call('INCR', p .. 'evictions')
    redis.call('ZADD', p .. 'evicted', seq, key)
    redis.call('ZREMRANGEBYSCORE', p .. 'evicted', '-inf', seq - tonumber(ARGV[2]))
end
local function make_room(max_entries, max_bytes)
    local function over()
        local held = tonumber(redis.call('GET', p .. 'bytes') or '0')
        return redis.call('ZCARD', p .. 'lru') > max_entries or held > max_bytes
    end
    while over() do
        local oldest = redis.call('ZRANGE', p .. 'lru', 0, 0)[1]
        if not oldest then break end
        delete(oldest)
        forget(oldest)
    end
end
"""
# ARGV: prefix, remembered, key, owner, once, now, hold seconds -> {reason} or {'ok', fields, prefix, items...}
_CLAIM = """
local key, owner, once = ARGV[3], ARGV[4], ARGV[5] == '1'
local row = redis.call('HMGET', e(key), 'owner', 'fields', 'continued', 'in_flight')
if not row[1] or row[1] ~= owner then
    if redis.call('ZSCORE', p .. 'evicted', key) then return {'evicted'} end
    return {'missing'}
end
if once and row[3] == '1' then return {'continued'} end
if once and tonumber(ARGV[6]) - tonumber(row[4]) < tonumber(ARGV[7]) then return {'in_flight'} end
local chain = {}
local current = key
while current do
    if redis.call('EXISTS', e(current)) == 0 then return {'broken'} end
    table.insert(chain, 1, current)
    current = redis.call('HGET', e(current), 'parent')
end
for i = #chain, 1, -1 do redis.call('ZADD', p .. 'lru', used(), chain[i]) end
if once then redis.call('HSET', e(key), 'in_flight', ARGV[6]) end
local out = {'ok', row[2], redis.call('HGET', e(chain[1]), 'prefix')}
for i = 1, #chain do table.insert(out, redis.call('HGET', e(chain[i]), 'items')) end
return out
"""
# ARGV: prefix, remembered, key
_RELEASE = """
if redis.call('EXISTS', e(ARGV[3])) == 1 then redis.call('HSET', e(ARGV[3]), 'in_flight', '0') end
"""
# ARGV: prefix, remembered, key, parent or '', continued or '', once, items, fields, owner, prefix, size,
# max_entries, max_bytes
_PUT = """
local key, parent, continued = ARGV[3], ARGV[4], ARGV[5]
if continued ~= '' and redis.call('EXISTS', e(continued)) == 1 then
    redis.call('HSET', e(continued), 'in_flight', '0')
    if ARGV[6] == '1' then redis.call('HSET', e(continued), 'continued', '1') end
end
delete(key)
local size = tonumber(ARGV[11])
if size > tonumber(ARGV[13]) then forget(key) return end
redis.call('HSET', e(key), 'items', ARGV[7], 'fields', ARGV[8], 'owner', ARGV[9], 'prefix', ARGV[10],
    'size', size, 'continued', '0', 'in_flight', '0')
if parent ~= '' then redis.call('HSET', e(key), 'parent', parent) end
redis.call('ZADD', p .. 'lru', used(), key)
redis.call('INCRBY', p .. 'bytes', size)
make_room(tonumber(ARGV[12]), tonumber(ARGV[13]))
"""
# ARGV: prefix, remembered, key, owner, items or '', has items, append, fields or '', has fields,
# overhead, max_entries, max_bytes -> 1 or 0
_UPDATE = """
local key = ARGV[3]
local row = redis.call('HMGET', e(key), 'owner', 'items', 'fields', 'size')
if not row[1] or row[1] ~= ARGV[4] then return 0 end
local items, fields, old = row[2], row[3], tonumber(row[4])
local kept = old - #fields - tonumber(ARGV[10])
if ARGV[6] == '1' then items, kept = ARGV[5], #ARGV[5] end
if ARGV[7] ~= '' then
    if items == '' then items = ARGV[7] else items = items .. ',' .. ARGV[7] end
    kept = kept + #ARGV[7]
end
if ARGV[9] == '1' then fields = ARGV[8] end
local size = kept + #fields + tonumber(ARGV[10])
redis.call('HSET', e(key), 'items', items, 'fields', fields, 'size', size)
redis.call('ZADD', p .. 'lru', used(), key)
redis.call('INCRBY', p .. 'bytes', size - old)
if size > tonumber(ARGV[12]) then
    delete(key)
    forget(key)
    return 1
end
make_room(tonumber(ARGV[11]), tonumber(ARGV[12]))
return 1
"""
# ARGV: prefix, remembered, history
_MOVED_ON = """
redis.call('SET', p .. 'm:' .. ARGV[3], redis.call('INCR', p .. 'moved'), 'EX', ARGV[4])
"""
# ARGV: prefix, remembered, sender, history, now, window -> the count
_COUNT = """
local moved = redis.call('GET', p .. 'm:' .. ARGV[4]) or '0'
local key = p .. 's:' .. ARGV[3] .. ':' .. ARGV[4]
local row = redis.call('HMGET', key, 'count', 'last', 'mark')
local count = 1
if row[1] and tonumber(ARGV[5]) - tonumber(row[2]) <= tonumber(ARGV[6]) and row[3] == moved then
    count = tonumber(row[1]) + 1
end
redis.call('HSET', key, 'count', count, 'last', ARGV[5], 'mark', moved)
redis.call('PEXPIRE', key, math.ceil(tonumber(ARGV[6]) * 1000) + 1000)
return count
"""
# ARGV: prefix, remembered, key, owner -> 1 or 0
_REMOVE = """
if redis.call('HGET', e(ARGV[3]), 'owner') ~= ARGV[4] then return 0 end
delete(ARGV[3])
return 1
"""


class RedisStore(Store):
    """Kept state in the Redis server `url` names (`redis://HOST:PORT/DB`), shared by every process
    that uses it."""

    def __init__(self, url: str, max_entries: int, max_bytes: int) -> None:
        try:
            import redis
        except ImportError:
            raise UsageError(f"store={url!r} needs the Redis client: pip install 'skyl-sandbox[redis]'.") from None
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self.url = url
        self.where = (
            f"the Redis store {url} (`--store`), bounded, which forgets them all when it restarts without persistence"
        )
        try:
            self._redis = redis.Redis.from_url(
                url, socket_timeout=TIMEOUT_SECONDS, socket_connect_timeout=TIMEOUT_SECONDS
            )
        except ValueError as exc:
            raise UsageError(
                f"store={url!r}: {exc}. Write redis://HOST:PORT/DB, e.g. redis://127.0.0.1:6379/0."
            ) from None
        self._errors: tuple[type[Exception], ...] = (redis.RedisError,)
        self._key: bytes | None = None
        """The history keys' digest key, shared by every process of the store (read at first use)."""
        self._process = secrets.token_hex(8)
        """Tells this process's senders (a connection, a thread) from another's of the same name."""
        self._scripts = {
            name: self._redis.register_script(_COMMON + body)
            for name, body in (
                ("claim", _CLAIM),
                ("release", _RELEASE),
                ("put", _PUT),
                ("update", _UPDATE),
                ("remove", _REMOVE),
                ("moved_on", _MOVED_ON),
                ("count", _COUNT),
            )
        }

    def _call(self, method: str, *args: Any) -> Any:
        """`self._redis.<method>(*args)`, or `StoreUnavailable`."""
        try:
            return getattr(self._redis, method)(*args)
        except self._errors as exc:
            raise StoreUnavailable(
                f"sandbox: the kept-state store {self.url} did not answer ({type(exc).__name__}: {exc}). "
                "Retry the request; if it goes on, start the Redis server or check the address in `--store`."
            ) from None

    def _run(self, name: str, *args: bytes | str | int) -> Any:
        script = self._scripts[name]
        try:
            return script(args=[PREFIX, REMEMBER_EVICTED, *args])
        except self._errors as exc:
            raise StoreUnavailable(
                f"sandbox: the kept-state store {self.url} did not answer ({type(exc).__name__}: {exc}). "
                "Retry the request; if it goes on, start the Redis server or check the address in `--store`."
            ) from None

    def record(self, key: str, change: Callable[[bytes | None], tuple[bytes, T]], ttl: float) -> T:
        name = PREFIX + "r:" + key

        said: list[T] = []

        def attempt(pipe: Any) -> None:  # run again by redis-py if another client changed `name` meanwhile
            value, outcome = change(pipe.get(name))
            said[:] = [outcome]
            pipe.multi()
            pipe.set(name, value, px=max(1, int(ttl * 1000)))

        try:
            self._redis.transaction(attempt, name)
        except self._errors as exc:
            raise StoreUnavailable(
                f"sandbox: the kept-state store {self.url} did not answer ({type(exc).__name__}: {exc}). "
                "Retry the request; if it goes on, start the Redis server or check the address in `--store`."
            ) from None
        return said[0]

    # -- the repeat guard's view (`_repeats.Repeats`) ----------------------------------------------

    def repeats(self) -> Repeats:
        return self

    def digest(self, value: object) -> int:
        if self._key is None:
            self._call("set", PREFIX + "secret", secrets.token_hex(16), None, None, True)  # NX: the first one
            self._key = bytes.fromhex(self._call("get", PREFIX + "secret").decode())
        text = repr(value).encode("utf-8", "surrogatepass")
        return int.from_bytes(hashlib.blake2b(text, digest_size=8, key=self._key).digest(), "big", signed=True)

    def moved_on(self, history: int) -> None:
        self._run("moved_on", history, MOVED_SECONDS)

    def count(self, sender: str, history: int) -> int:
        return int(self._run("count", f"{self._process}/{sender}", history, repr(time.time()), repr(REPEAT_WINDOW)))

    # -- kept state ---------------------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self._call("zcard", PREFIX + "lru"))

    @property
    def held(self) -> int:
        return int(self._call("get", PREFIX + "bytes") or 0)

    @property
    def evictions(self) -> int:
        return int(self._call("get", PREFIX + "evictions") or 0)

    def numbers(self) -> Iterator[int]:
        return Blocks(lambda block: int(self._call("incrby", PREFIX + "answers", block)) - block + 1)

    def was_evicted(self, key: str) -> bool:
        return self._call("zscore", PREFIX + "evicted", key) is not None

    def get(self, key: str) -> Entry | None:
        row = self._call("hgetall", PREFIX + "e:" + key)
        if not row:
            return None
        parent = row.get(b"parent")
        return Entry(
            row[b"items"],
            parent.decode() if parent is not None else None,
            row[b"fields"],
            row[b"owner"].decode(),
            int(row[b"size"]),
            (),
            (row[b"prefix"],) if row[b"prefix"] else (),
            row[b"continued"] == b"1",
            row[b"in_flight"] != b"0",
        )

    def view(self, key: str, owner: str) -> tuple[bytes, tuple[bytes, ...], int, object] | None:
        entry = self.get(key)
        if entry is None or entry.owner != owner:
            return None
        return entry.items, (), entry.size - len(entry.fields) - ENTRY_OVERHEAD, None

    def claim(self, key: str, owner: str, *, once: bool) -> Claim | str:
        out = self._run("claim", key, owner, int(once), repr(time.time()), repr(HOLD_SECONDS))
        if out[0] != b"ok":
            return str(out[0].decode())
        return Claim(key, tuple(out[2:]), out[1])

    def release(self, claim: Claim) -> None:
        self._run("release", claim.key)

    def put(self, key: str, entry: Entry, continued: Claim | None, *, once: bool) -> None:
        self._run(
            "put",
            key,
            entry.parent or "",
            continued.key if continued is not None else "",
            int(once),
            b",".join(part for part in entry.parts if part),
            entry.fields,
            entry.owner,
            b",".join(part for part in entry.prefix if part),
            entry.size,
            self.max_entries,
            self.max_bytes,
        )

    def update(
        self,
        key: str,
        owner: str,
        *,
        items: bytes | None = None,
        append: bytes = b"",
        fields: bytes | None = None,
        snapshot: object = None,
        snapshot_size: int = 0,
        read: tuple[bytes, tuple[bytes, ...]] | None = None,
    ) -> bool:
        changed = self._run(
            "update",
            key,
            owner,
            items or b"",
            int(items is not None),
            append,
            fields or b"",
            int(fields is not None),
            ENTRY_OVERHEAD,
            self.max_entries,
            self.max_bytes,
        )
        return bool(changed)

    def remove(self, key: str, owner: str) -> bool:
        return bool(self._run("remove", key, owner))
