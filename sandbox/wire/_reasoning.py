"""Reasoning signatures: deterministic, and verifiable by the sandbox alone.

A real provider signs the reasoning it sends (an Anthropic thinking block's `signature`, an OpenAI
Responses item's `encrypted_content`, a Gemini `thoughtSignature`) and refuses a history whose
reasoning it did not issue for that turn. The sandbox keeps no state, so it signs with a keyed hash
of (scenario, step, index, content): the same turn always gets the same signature, a signature
from another turn or another scenario never matches, and an edited thinking text breaks its own.
The key is not a secret (learner code could read it); it only makes an accidental match impossible.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from .._exceptions import UsageError
from .._types import Message, Reasoning

__all__ = ["check_provider", "same_base64", "signature"]

_KEY = b"skyl-sandbox reasoning signature v1"


def signature(seed: str, index: int, content: str, *, prefix: bytes = b"", urlsafe: bool = False) -> str:
    """The base64 signature of reasoning part `index` of the turn `seed` ("scenario/step")."""
    message = f"{seed}\x1f{index}\x1f{content}".encode("utf-8", "surrogatepass")
    digest = hmac.new(_KEY, message, hashlib.sha512).digest()
    raw = prefix + digest + hashlib.sha256(digest).digest()
    encoded = base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)
    return encoded.decode("ascii")


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
