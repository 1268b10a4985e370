"""Request bodies with a Content-Encoding: gzip, deflate and br (br where the `brotli` module is
installed) decoded, each bounded by the body limit *after* decoding, so a small zip bomb is a 413,
not gigabytes of memory. No sockets, no engine: bytes in, bytes or a `TooLarge` / `ValueError` out.

OpenAI's backend accepts compressed request bodies (the Codex CLI sends zstd and gzip to
/v1/responses: zyycn/codex-proxy-rs#66); any other encoding is refused by the door with a 415 that
names it (`unsupported`).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence

__all__ = ["DECODERS", "TooLarge", "decode", "encodings", "unsupported"]

try:  # pragma: no cover - which branch runs depends on what is installed
    import brotli as _brotli  # type: ignore[import-untyped,import-not-found,unused-ignore]
except ImportError:  # pragma: no cover
    _brotli = None


class TooLarge(Exception):
    """The decoded body passed the limit (its `args[0]` names the encoding)."""


def encodings(headers: Mapping[str, str]) -> Sequence[str]:
    """The request's content codings in the order they were applied, identity left out."""
    value = headers.get("content-encoding")
    if value is None:
        return ()
    return [name for name in (part.strip().lower() for part in value.split(",")) if name and name != "identity"]


def decode(body: bytes, names: Sequence[str], limit: int) -> bytes:
    """`body` with its encodings undone (the last applied first), never more than `limit` bytes.
    Raises `TooLarge` past the limit, `ValueError` (naming the encoding) for data that is not what
    the header says."""
    for name in reversed(names):
        try:
            body = DECODERS[name](body, limit)
        except TooLarge:
            raise TooLarge(name) from None
        except (zlib.error, OSError, ValueError, EOFError) as exc:
            raise ValueError(name, str(exc)) from None
    return body


def unsupported(name: str) -> str:
    """The 415's message for an encoding the sandbox does not decode."""
    known = ", ".join(sorted(DECODERS))
    hint = " (br needs the brotli package: pip install brotli)" if name == "br" else ""
    return (
        f"sandbox: the request body is encoded with Content-Encoding: {name[:100]}, which the sandbox "
        f"does not decode{hint}. Send it uncompressed, or encoded with one of: {known}."
    )


def _inflate(body: bytes, limit: int, wbits: int) -> bytes:
    decoder = zlib.decompressobj(wbits)
    out = decoder.decompress(body, limit + 1)
    if len(out) > limit or decoder.unconsumed_tail:
        raise TooLarge
    out += decoder.flush()
    if len(out) > limit:
        raise TooLarge
    if not decoder.eof:
        raise ValueError("the compressed data ends early")
    return out


def _gzip(body: bytes, limit: int) -> bytes:
    return _inflate(body, limit, 16 + zlib.MAX_WBITS)


def _deflate(body: bytes, limit: int) -> bytes:
    """HTTP's "deflate" is the zlib format; some clients send raw deflate, which is accepted too."""
    try:
        return _inflate(body, limit, zlib.MAX_WBITS)
    except zlib.error:
        return _inflate(body, limit, -zlib.MAX_WBITS)


def _br(body: bytes, limit: int) -> bytes:
    assert _brotli is not None
    decoder = _brotli.Decompressor()
    try:
        out: bytes = decoder.process(body, output_buffer_limit=limit + 1)
    except TypeError:  # pragma: no cover - brotli before 1.2 has no output limit: feed it a little at a time
        out = b""
        for start in range(0, len(body), 1024):
            out += decoder.process(body[start : start + 1024])
            if len(out) > limit:
                raise TooLarge from None
    except _brotli.error as exc:
        raise ValueError(str(exc) or "not brotli data") from None
    if len(out) > limit:
        raise TooLarge
    if not decoder.is_finished():
        raise ValueError("the compressed data ends early")
    return out


DECODERS = {"gzip": _gzip, "x-gzip": _gzip, "deflate": _deflate, **({"br": _br} if _brotli is not None else {})}
