"""The one engine behind every adapter: request bytes in, provider-exact response bytes out.

    path -> wire format -> parse and validate (the provider's own rules)
         -> scenario (pinned, or named by the model field) -> replay the history (ours?)
         -> budget -> render the next turn -> response JSON or SSE frames

Every failure is a provider-shaped error; nothing here raises to the adapter. This module is the
dispatch; the `Exchange` type and the error exchanges live in `_exchange`, the errors the engine
words itself in `_refusals`, the history's replay in `_replay`, the next turn rendered and encoded
in `_answer`, kept state in `kept/`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from .._exceptions import ScenarioError, UsageError
from ..wire import Conversation, ErrorResponse, Rule, WireFormat, clouds, get_wire_format, route
from ..wire.clouds import CloudRefusal, CloudRoute
from ._answer import answer_at
from ._catalogue import catalogue
from ._count_tokens import COUNT_TOKENS, count_tokens
from ._embeddings import embeddings_exchange, is_embeddings
from ._exchange import Exchange, answer_identity, as_json_array, error_exchange, request_digest
from ._limits import COUNT_ABOVE, MAX_CALLS_PER_TURN, MAX_MESSAGES, check_items, check_size
from ._refusals import budget_error, check_tools, gemini_alt, internal, store_unavailable, too_large, unknown_scenario
from ._repeats import Digested, Repeats, history_keys, repeat_error
from ._replay import replay
from ._scenario import Scenario, Step
from ._senders import caller_key, owner_key
from ._tolerance import ECHO_MODES, Echo, plays_serially, undeclared_answer
from ._wrong_path import wrong_path
from .faults import Applied, Fault, FaultPlan, fault_error, parse_faults
from .kept import CONVERSATIONS, DEFAULT_MAX_KEPT, DEFAULT_MAX_KEPT_BYTES, KeptState, Replayed, Resume, StoreUnavailable

__all__ = [
    "DEFAULT_BUDGET",
    "ECHO_MODES",
    "MAX_CALLS_PER_TURN",
    "MAX_MESSAGES",
    "Echo",
    "Engine",
    "Exchange",
    "caller_key",
    "owner_key",
]

DEFAULT_BUDGET = 50
"""Model requests one conversation may make before the sandbox stops it as a runaway."""
DEFAULT_MAX_BODY = 4 * 1024 * 1024


class Engine:
    """Answers requests for a scenario.

    `scenario` pins one scenario (a `Scenario` or a catalogue name); without it the request's model
    field names the scenario. `scenarios` adds scenarios to the catalogue by name. `store` names where
    kept state lives: `memory` (this engine alone), `sqlite:///PATH` or `redis://HOST:PORT/DB` (shared
    with every engine, in any process, that names the same store). `echo` is `faithful` or
    `strict` (see `ECHO_MODES`).
    """

    def __init__(
        self,
        scenario: Scenario | str | None = None,
        *,
        scenarios: Mapping[str, Scenario] | None = None,
        budget: int = DEFAULT_BUDGET,
        max_body_bytes: int = DEFAULT_MAX_BODY,
        faults: Sequence[Fault] | str | None = None,
        kept: int = DEFAULT_MAX_KEPT,
        kept_mib: float = DEFAULT_MAX_KEPT_BYTES / (1024 * 1024),
        store: str = "memory",
        echo: Echo = "faithful",
    ) -> None:
        if echo not in ECHO_MODES:
            raise UsageError(
                f"echo={echo!r}: use 'faithful' (the default: answer what the real provider answers) or "
                "'strict' (also refuse a rebuilt model turn or undeclared tools, as the graders do)."
            )
        self.echo: Echo = echo
        self.strict = echo == "strict"
        if not isinstance(budget, int) or budget < 1:
            raise UsageError(f"budget={budget!r}: use a whole number of requests, at least 1.")
        if not isinstance(kept, int) or kept < 0:
            raise UsageError(f"kept={kept!r}: use a whole number of stored responses and thread turns, 0 or more.")
        if not isinstance(kept_mib, (int, float)) or not 0 <= kept_mib < 1024 * 1024:
            raise UsageError(f"kept_mib={kept_mib!r}: use a number of MiB, 0 or more (64 by default).")
        self.scenarios: dict[str, Scenario] = {**catalogue(), **(scenarios or {})}
        self.kept = KeptState(kept, int(kept_mib * 1024 * 1024), store)
        """Threads, stored responses (`previous_response_id`) and conversations: the one state the engine
        keeps, for the clients of providers that keep it (see `_kept`)."""
        planned = parse_faults(faults) if isinstance(faults, str) else tuple(faults or ())
        self.faults = FaultPlan(planned, budget=budget, records=self.kept.store)
        """Ad-hoc faults (`transport(faults=...)`), and the attempt counts of every fault that plays."""
        if isinstance(scenario, str):
            if scenario not in self.scenarios:
                known = ", ".join(sorted(self.scenarios))
                raise ScenarioError(f"No scenario named {scenario!r}. Known: {known}.")
            scenario = self.scenarios[scenario]
        elif scenario is not None and not isinstance(scenario, Scenario):
            raise UsageError(f"scenario= takes a Scenario or a scenario name, got {type(scenario).__name__}.")
        self.pinned: Scenario | None = scenario
        for playing in (*self.scenarios.values(), *([self.pinned] if self.pinned is not None else [])):
            for fault in playing.faults:
                self.faults.check_request(fault, where=f"scenario {playing.name!r}:")
        self.budget = budget
        self.max_body_bytes = max_body_bytes
        self._repeats: Repeats = self.kept.store.repeats()
        self._answers = self.kept.store.numbers()
        """Numbers every request this engine answers: the ids an answer issues for itself carry it. A
        shared store hands them out, so no two engines sharing it issue the same id."""

    def handle(
        self,
        method: str,
        path: str,
        body: bytes,
        *,
        client: str = "",
        query: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Exchange:
        """Answer one request. `path` excludes the query string; `client` keys the repeat guard.

        `query` is the URL's query string, as the HTTP adapters pass it: a Gemini stream is SSE with
        `alt=sse` (what the SDKs send) and a JSON array without it, as the real API answers. None
        (a direct call, no URL) streams SSE. `headers` (lower-case names) are read at the clouds' paths
        (Azure OpenAI, Vertex AI), whose front ends check a key, and for the credential that owns kept
        state (`owner_key`). A shared store that cannot be reached gets a 503 in the provider's envelope.
        """
        try:
            return self._handle(method, path, body, client=client, query=query, headers=headers)
        except StoreUnavailable as exc:
            return self._unavailable(method, path, body, exc)

    def _handle(
        self,
        method: str,
        path: str,
        body: bytes,
        *,
        client: str,
        query: str | None,
        headers: Mapping[str, str] | None,
    ) -> Exchange:
        found = route(path)
        digest = self._identity(body)
        owner = owner_key(headers or {})
        if path == CONVERSATIONS or path.startswith(_CONVERSATIONS_UNDER):
            return self._conversations(method, path, body, query or "", owner, digest)
        if path == COUNT_TOKENS and method.upper() == "POST":
            return self._count_tokens(method, path, body, digest)
        cloud: CloudRoute | None = None
        if found is None and method.upper() == "POST":
            if is_embeddings(path):
                return embeddings_exchange(method, path, body, digest, self.max_body_bytes)
            translated = clouds.translate(path, query or "", headers or {}, body)
            if isinstance(translated, CloudRefusal):
                wire = get_wire_format(translated.provider)
                return error_exchange(method, path, body, wire, translated.error, None, digest)
            if translated is not None:
                cloud, found, body = translated, route(translated.path), translated.body
        if found is None or method.upper() != "POST":
            wire, not_found = wrong_path(method, path)
            return error_exchange(method, path, body, wire, not_found, None, digest)
        wire = found.wire
        conversation: Conversation | None = None
        try:
            array = found.stream and query is not None and gemini_alt(wire, query) == "json"
            if len(body) > self.max_body_bytes:
                raise self._too_large(wire, len(body))
            if len(body) > COUNT_ABOVE:
                check_items(wire, body)
            expanded = self.kept.expand(wire, body, owner)
        except ErrorResponse as error:
            return error_exchange(method, path, body, wire, error, conversation, digest)
        except StoreUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - an adapter must never crash; tests assert this never happens
            return error_exchange(method, path, body, wire, internal(wire, exc), conversation, digest)
        try:
            conversation = self.kept.parse(wire, expanded, path_model=found.model, path_stream=found.stream)
            conversation = expanded.restore(conversation)
            check_size(wire, conversation, expanded.resume.checked if expanded.resume is not None else 0)
            if cloud is not None:
                if self.pinned is None and conversation.model not in self.scenarios:
                    raise clouds.not_found(cloud)
                conversation = dataclasses.replace(conversation, cloud=cloud.cloud)
            exchange, response = self._answer(method, path, body, wire, conversation, client, digest, expanded.resume)
            if exchange.turn is not None and exchange.delivers_turn:
                self.kept.keep(expanded, wire, conversation, exchange.turn, owner, response)
            else:
                self.kept.release(expanded)
            return as_json_array(exchange) if array else exchange
        except ErrorResponse as error:
            self.kept.release(expanded)
            error = self.kept.explain(error, expanded)
            return error_exchange(method, path, body, wire, error, conversation, digest)
        except StoreUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - an adapter must never crash; tests assert this never happens
            self.kept.release(expanded)
            return error_exchange(method, path, body, wire, internal(wire, exc), conversation, digest)

    def _conversations(self, method: str, path: str, body: bytes, query: str, owner: str, digest: str) -> Exchange:
        """OpenAI's Conversations endpoints: kept state, answered by `_kept`."""
        wire = self.kept.conversations.wire
        try:
            if len(body) > self.max_body_bytes:
                raise self._too_large(wire, len(body))
            status, answer = self.kept.conversations.handle(method, path, query, body, owner, digest)
        except ErrorResponse as error:
            return error_exchange(method, path, body, wire, error, None, digest)
        except StoreUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - an adapter must never crash; tests assert this never happens
            return error_exchange(method, path, body, wire, internal(wire, exc), None, digest)
        headers = {"content-type": wire.media_type, **wire.request_headers(digest)}
        return Exchange(method, path, status, headers, (answer,), body, wire.name)

    def _count_tokens(self, method: str, path: str, body: bytes, digest: str) -> Exchange:
        """Anthropic's token count (`_count_tokens`), for a model that names a scenario."""
        wire = get_wire_format("anthropic")
        try:
            if len(body) > self.max_body_bytes:
                raise self._too_large(wire, len(body))
            exchange, model = count_tokens(method, path, body, digest)
            if self.pinned is None:
                self._scenario_for(wire, model)
        except ErrorResponse as error:
            return error_exchange(method, path, body, wire, error, None, digest)
        except Exception as exc:  # noqa: BLE001 - a door must never crash; tests assert this never happens
            return error_exchange(method, path, body, wire, internal(wire, exc), None, digest)
        return exchange

    def runs_inline(self, path: str, body: bytes, inline_bytes: int) -> bool:
        """Whether an event-loop adapter may answer `body`, sent to `path`, on the loop: a small request
        that continues no kept state (a continuation's history is its chain's, whatever its own size)."""
        if len(body) > inline_bytes:
            return False
        found = route(path)
        return not self.kept.may_continue(body, found.provider if found is not None else None)

    def _unavailable(self, method: str, path: str, body: bytes, exc: StoreUnavailable) -> Exchange:
        """The 503 for a request the store could not serve; its ids are not the store's to number."""
        found = route(path)
        wire = found.wire if found else wrong_path(method, path)[0]
        return error_exchange(
            method, path, body, wire, store_unavailable(wire, str(exc)), None, answer_identity(0, body)
        )

    def _identity(self, body: bytes) -> str:
        """What every id an answer issues for itself derives from (its response id, its request id): the
        request and this engine's number for it, so two senders of the same request never share an id
        (a thread, a stored response, a conversation), and a fresh engine answers the same requests, in
        the same order, with the same ids on every run."""
        return answer_identity(next(self._answers), body)

    def _refusal_identity(self, body: bytes) -> str:
        """A door's refusal's identity: the store's number when it answers (the refusal names no state)."""
        try:
            return self._identity(body)
        except StoreUnavailable:
            return answer_identity(0, body)

    def refuse_oversized(self, method: str, path: str, size: int) -> Exchange:
        """The provider-shaped 413 for a body an adapter stopped reading at `size` bytes."""
        found = route(path)
        wire = found.wire if found else wrong_path(method, path)[0]
        digest = self._refusal_identity(f"oversized:{size}".encode())
        return error_exchange(method, path, b"", wire, self._too_large(wire, size), None, digest)

    def refuse_slow(self, method: str, path: str, seconds: float) -> Exchange:
        """The error for a body an adapter stopped waiting for after `seconds`."""
        return self.refuse(
            method,
            path,
            408,
            f"sandbox: the request body did not arrive within {seconds:g} s, so the sandbox stopped "
            "waiting for it. Send the whole body at once (any HTTP client or SDK does).",
        )

    def refuse(self, method: str, path: str, status: int, message: str) -> Exchange:
        """An adapter's own refusal (a slow body, an unknown Content-Encoding, ...) in the envelope of the
        provider that `path` belongs to, as the engine's errors are."""
        found = route(path)
        wire = found.wire if found else wrong_path(method, path)[0]
        digest = self._refusal_identity(f"refused:{status}:{message}".encode())
        return error_exchange(method, path, b"", wire, wire.error(status, message, rule=Rule.MALFORMED), None, digest)

    def _too_large(self, wire: WireFormat, size: int) -> ErrorResponse:
        return too_large(wire, self.max_body_bytes, size)

    def _answer(
        self,
        method: str,
        path: str,
        body: bytes,
        wire: WireFormat,
        conversation: Conversation,
        client: str,
        digest: str,
        resume: Resume | None = None,
    ) -> tuple[Exchange, Mapping[str, Any] | None]:
        """The answer to a parsed request, and its JSON object when it has one (a plain answer, a
        Responses stream: see `WireFormat.encode_stream_answer`)."""
        scenario = self.pinned or self._scenario_for(wire, conversation.model)
        if self.strict:
            check_tools(wire, scenario, conversation)
        serial = plays_serially(conversation)
        key: tuple[str, ...] = ()
        done: Replayed | None = None
        if resume is not None:
            key = resume.key(path, scenario, conversation)
            done = resume.replayed_for(key)
            if done is None and resume.tail_only and resume.full is not None:
                conversation = dataclasses.replace(resume.full(), cloud=conversation.cloud)  # replayed from the start
                resume.parser = resume.full = None
        turns = 0 if done is None else done.turns
        for message in conversation.messages[done.messages :] if done is not None else conversation.messages:
            if message.role == "assistant":
                turns += 1
        if turns >= self.budget:  # counted before the replay, so a runaway history costs a count, not a replay
            raise budget_error(wire, scenario, self.budget, turns)
        strict = self.strict
        try:
            start = None if done is None else (done.messages, done.position)
            position = replay(wire, scenario, conversation, start, strict=strict, serial=serial)
        except ErrorResponse:
            if resume is None or resume.full is None:
                raise
            # walked the whole way, for the whole request's exact error
            conversation = dataclasses.replace(resume.full(), cloud=conversation.cloud)
            resume.parser = resume.full = None
            position = replay(wire, scenario, conversation, strict=strict, serial=serial)
            done = None
        playing = position.playing
        assert playing is not None  # the replay names the step it stands at
        if not strict and playing.calls:
            position = undeclared_answer(wire, scenario, conversation, position)
            playing = position.playing
            assert playing is not None
        scope = f"{path}\0{scenario.name}"
        resumed = done.digested if done is not None else None
        history, continued = history_keys(scope, conversation.messages, resumed, self._repeats.digest)
        if resume is not None and not position.played:  # a step partly played is replayed whole
            digested = Digested(scope, len(conversation.messages), history, continued)
            resume.out = Replayed(key, len(conversation.messages), position, digested, turns)
        if continued is not None:
            self._repeats.moved_on(continued)
        if playing.calls:  # a final answer ends its conversation: never a loop
            repeats = self._repeats.count(client, history)
            if repeats > self.budget:
                raise repeat_error(wire, scenario, self.budget, repeats)
        applied = None
        if scenario.plays_faults or self.faults.faults:  # the common case costs nothing: no attempt counted
            applied = self._fault_for(wire, scenario, playing, turns + 1, client, (method, path, body))
            plain_stream = applied is not None and applied.fault.kind == "stream_error" and not conversation.stream
            if applied is not None and (applied.fault.is_error or plain_stream):
                raise fault_error(applied, wire.name, conversation.model, digest)
        return answer_at((method, path, body), wire, scenario, conversation, position, digest, applied, serial=serial)

    def _fault_for(
        self,
        wire: WireFormat,
        scenario: Scenario,
        step: Step,
        request: int,
        client: str,
        attempt: tuple[str, str, bytes],
    ) -> Applied | None:
        """The fault playing on this attempt of the conversation's `request`-th model request, if any.
        `attempt` is the request (method, path, body): a retry is the same request, and faults count
        attempts by its digest."""
        own = scenario.faults_at(step)
        if not own and not self.faults.faults:
            return None  # no attempt is counted, no digest taken
        return self.faults.pick(wire.name, request, own, client, request_digest(*attempt))

    def _scenario_for(self, wire: WireFormat, model: str) -> Scenario:
        scenario = self.scenarios.get(model)
        if scenario is not None:
            return scenario
        raise unknown_scenario(wire, model, ", ".join(sorted(self.scenarios)))


_CONVERSATIONS_UNDER = CONVERSATIONS + "/"
