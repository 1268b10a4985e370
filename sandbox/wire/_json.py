"""Reading a request's JSON with a decoder made once: what `json.loads(body, parse_constant=...)`
does, without building a new decoder and scanner on every call (`json.loads` only reuses its own
decoder when called with no options). Touches nothing but the text it is handed.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["decode"]


def decode(data: bytes | bytearray | str, decoder: json.JSONDecoder) -> Any:
    """`json.loads(data, ...)` with `decoder`'s options: `json.loads`'s own steps (a BOM refused in text,
    bytes decoded in the encoding they announce), then `decoder.decode`; same values, same errors."""
    if isinstance(data, str):
        if data.startswith("\ufeff"):
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", data, 0)
    else:
        data = data.decode(json.detect_encoding(data), "surrogatepass")
    return decoder.decode(data)
