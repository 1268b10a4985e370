"""The ids of one Responses answer, shaped as the real ones are: 48 hex digits after the prefix, the
first 8 `created_at` in hex, and the response (`resp_`) and its items (`rs_`, `msg_`, `fc_`) sharing
digits 13-16 and their last 16 (pydantic-ai cassette
`test_openai_responses/test_openai_responses_model_thinking_part.yaml`: `resp_68c42c90...07460311b0c8d3de`
with `rs_68c42c90...07460311b0c8d3de`). Touches nothing but the seeds it is given.

The shared digits come from the turn's step, so an item id can be recomputed to check an echo; the
response's own digits come from the request as well, so that no two requests share a response id.
"""

from __future__ import annotations

import functools

from .._base import CREATED_AT, HEX, seeded_token, unique_token

__all__ = ["item_id_for", "response_id"]

_TIME = f"{CREATED_AT:08x}"


def _shaped(prefix: str, own: str, seed: str) -> str:
    head, tail = _shared(seed)
    return f"{prefix}_{_TIME}{own[:4]}{head}{own[4:]}{tail}"


@functools.lru_cache(maxsize=4096)
def _shared(seed: str) -> tuple[str, str]:
    """The digits the ids of turn `seed` share, in the two places they go: every answer at a step asks."""
    shared = seeded_token(f"{seed}:shared", 20, HEX)
    return shared[:4], shared[4:]


@functools.lru_cache(maxsize=4096)
def item_id_for(prefix: str, seed: str, what: str) -> str:
    """The id of the item `what` (`reasoning`, `message:0`, `call:1`) of turn `seed`: memoised, as every
    answer at one step has the same items' ids."""
    return _shaped(prefix, seeded_token(f"{seed}:{what}", 20, HEX), seed)


def response_id(response_seed: str, seed: str) -> str:
    """The `resp_` id of the answer to one request (`response_seed`) at the turn `seed`."""
    return _shaped("resp", unique_token(f"{response_seed}:response", 20, HEX), seed)
