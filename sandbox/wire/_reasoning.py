"""Reasoning signatures: deterministic, and verifiable by the sandbox alone.

A real provider signs the reasoning it sends (an Anthropic thinking block's `signature`, an OpenAI
Responses item's `encrypted_content`, a Gemini `thoughtSignature`) and refuses a history whose
reasoning it did not issue for that turn. The sandbox keeps no state, so it signs with a keyed hash
of (scenario, step, index, content): the same turn always gets the same signature, a signature
from another turn or another scenario never matches, and an edited thinking text breaks its own.
The key is not a secret (learner code could read it); it only makes an accidental match impossible.
Each provider wraps those bytes in the outer structure and the size its real blobs have (a Fernet
token, a length-prefixed protobuf), so a client that stores, logs or measures them meets real sizes.
"""

from __future__ import annotations

import hashlib
import hmac

from .._exceptions import UsageError
from ..messages._types import Message, Reasoning

__all__ = ["check_provider", "length_prefixed", "opaque_bytes", "reasoning_tokens", "same_base64", "varint"]

_KEY = b"skyl-sandbox reasoning signature v1"


def reasoning_tokens(thought: str) -> int:
    """The tokens a turn spent thinking `thought`: one per 4 characters, rounded up, as every other
    count of the sandbox (the rule is written down in the README's "Usage figures")."""
    return max(1, (len(thought) + 3) // 4)


def opaque_bytes(seed: str, index: int, content: str, size: int) -> bytes:
    """`size` bytes that only reasoning part `index` of the turn `seed` ("scenario/step") with this
    `content` gets: a keyed hash, stretched to the size the provider's own blobs have."""
    message = f"{seed}\x1f{index}\x1f{content}".encode("utf-8", "surrogatepass")
    digest = hmac.new(_KEY, message, hashlib.sha512).digest()
    return hashlib.shake_256(digest).digest(size)


def varint(number: int) -> bytes:
    """A protobuf varint: the length prefix of the Anthropic and Gemini signatures' fields."""
    out = bytearray()
    while True:
        low, number = number & 0x7F, number >> 7
        out.append(low | (0x80 if number else 0))
        if not number:
            return bytes(out)


def length_prefixed(field: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (`field` number, wire type 2)."""
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def same_base64(got: str, want: str) -> bool:
    """Whether two base64 texts carry the same bytes, whichever alphabet and padding each uses:
    google-genai decodes a signature to bytes and sends it back in the URL-safe alphabet."""

    def normal(text: str) -> str:
        return text.replace("-", "+").replace("_", "/").rstrip("=")

    return hmac.compare_digest(normal(got), normal(want))


def check_provider(message: Message, provider: str) -> None:
    """A reasoning part goes back only to the provider that made it: say so before sending."""
    for part in message.content:
        if isinstance(part, Reasoning) and part.provider != provider:
            raise UsageError(
                f"This conversation holds reasoning from provider={part.provider!r}, and it is being sent to "
                f"provider={provider!r}, which cannot read it. Reasoning goes back only to the provider that "
                "made it: keep one provider for the whole conversation."
            )
