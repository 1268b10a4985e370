"""Deterministic embeddings: OpenAI's `POST /v1/embeddings`, Gemini's `:embedContent` and
`:batchEmbedContents`, answered from the request's text.

A text's vector is a function of the model, the text and the size asked for: each word (lower-cased,
`\\w+`) adds a few signed unit entries at positions its hash picks, and the whole text a small dense
part of its own hash, so the same text always gets the same vector, texts that share words point
closer together than texts that share none, and no two texts share a vector by chance. The vector is
scaled to unit length and held to float32, so OpenAI's `encoding_format: "base64"` (the openai SDK's
default) decodes to the same numbers as the JSON floats.

Requests are validated as the real APIs validate them: the model (the embedding models each
provider lists), the input's types, an empty input, `dimensions` on a model that takes none.

May touch: the request it is handed; it keeps no state.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import re
from array import array
from collections.abc import Mapping, Sequence
from typing import Any

from ..wire import ErrorResponse, Rule, WireFormat, get_wire_format
from ..wire._json import loads
from ._exchange import Exchange, error_exchange
from ._refusals import internal, model_not_found, printable, too_large

__all__ = ["EMBEDDINGS", "embeddings_exchange", "is_embeddings", "vector"]

EMBEDDINGS = "/v1/embeddings"
_GEMINI = re.compile(r"^/(?:v1|v1beta|v1alpha)/models/(?P<model>[^/:]+):(?P<method>embedContent|batchEmbedContents)$")

OPENAI_MODELS: Mapping[str, tuple[int, bool]] = {
    "text-embedding-3-small": (1536, True),
    "text-embedding-3-large": (3072, True),
    "text-embedding-ada-002": (1536, False),
}
"""OpenAI's embedding models: their default size, and whether they take `dimensions`."""
GEMINI_MODELS: Mapping[str, int] = {"gemini-embedding-001": 3072, "text-embedding-004": 768}
"""Gemini's embedding models and their default size (`outputDimensionality` picks a smaller one)."""
_MAX_INPUTS = 2048
"""Inputs one OpenAI request may carry (its API reference)."""
_MAX_BATCH = 100
"""Requests one Gemini `batchEmbedContents` may carry."""
_WORD = re.compile(r"\w+")
_SPREAD = 8
"""Entries each word sets."""
_INVALID_INPUT = "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."
"""OpenAI's words for an input it cannot embed: an empty string, an empty list, a list holding one
(openai/openai-python#576, aryn-ai/sycamore#943, lightdash/lightdash#18938), param and code null.
That a wrong type gets it too is [INF]."""


def is_embeddings(path: str) -> bool:
    return path == EMBEDDINGS or path == "/embeddings" or _GEMINI.match(path) is not None


def embeddings_exchange(method: str, path: str, body: bytes, digest: str, max_body_bytes: int) -> Exchange:
    """The exchange for an embeddings request: the answer, or the provider's error (never a raise)."""
    wire = get_wire_format("openai" if _GEMINI.match(path) is None else "gemini")
    try:
        if len(body) > max_body_bytes:
            raise too_large(wire, max_body_bytes, len(body))
        answer = _answer(path, body)
    except ErrorResponse as error:
        return error_exchange(method, path, body, wire, error, None, digest)
    except Exception as exc:  # noqa: BLE001 - a door must never crash; tests assert this never happens
        return error_exchange(method, path, body, wire, internal(wire, exc), None, digest)
    headers = {"content-type": wire.media_type, **wire.request_headers(digest)}
    chunk = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
    return Exchange(method, path, 200, headers, (chunk,), body, wire.name)


def _answer(path: str, body: bytes) -> dict[str, Any]:
    """The JSON answer to an embeddings request; raises the provider's `ErrorResponse` for one the
    real API refuses."""
    match = _GEMINI.match(path)
    if match is None:
        return _openai(body)
    return _gemini(match["model"], match["method"], body)


def vector(text: str | Sequence[int], model: str, size: int) -> list[float]:
    """The unit vector of `size` floats (float32 values) for `text` (or token ids) under `model`."""
    key = text if isinstance(text, str) else " ".join(map(str, text))
    return list(_vector(key, model, size))


@functools.lru_cache(maxsize=1024)
def _vector(text: str, model: str, size: int) -> tuple[float, ...]:
    seed = hashlib.shake_256(f"{model}\0{size}\0{text}".encode("utf-8", "surrogatepass")).digest(4 * size)
    scale = 1.0 / math.sqrt(size)  # the text's own part: small beside one word's entries
    values = [(value / 2**31 - 1.0) * scale for value in array("I", seed)]
    for word in _WORD.findall(text.lower()):
        for position, sign in _positions(word, model, size):
            values[position] += sign
    norm = math.sqrt(sum(value * value for value in values)) or 1.0
    return tuple(array("f", [value / norm for value in values]))


@functools.lru_cache(maxsize=4096)
def _positions(word: str, model: str, size: int) -> tuple[tuple[int, float], ...]:
    digest = hashlib.blake2b(f"{model}\0{word}".encode("utf-8", "surrogatepass"), digest_size=4 * _SPREAD).digest()
    return tuple(
        (int.from_bytes(digest[at : at + 4], "little") % size, 1.0 if digest[at] & 1 else -1.0)
        for at in range(0, len(digest), 4)
    )


def _openai(body: bytes) -> dict[str, Any]:
    wire = get_wire_format("openai")
    data = _json(wire, body)
    model = data.get("model")
    if model in (None, ""):
        raise _openai_error(wire, "you must provide a model parameter")  # as Chat Completions words it
    if not isinstance(model, str) or model not in OPENAI_MODELS:
        raise wire.error(
            404,
            printable(
                f"{model_not_found('openai', str(model))}\n\nsandbox: the embedding models are "
                f"{', '.join(OPENAI_MODELS)}."
            ),
            rule=Rule.UNKNOWN_SCENARIO,
            param="model",
            code="model_not_found",
        )
    default, sized = OPENAI_MODELS[model]
    size = default
    if data.get("dimensions") is not None:
        if not sized:
            # Verbatim, param and code null: SciPhi-AI/R2R#768, sbintuitions/JMTEB#14.
            raise _openai_error(wire, "This model does not support specifying dimensions.")
        size = data["dimensions"]
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= default:
            raise _openai_error(  # [INF] the real text for a size out of range is not captured
                wire,
                f"sandbox: dimensions={size!r}; {model} takes a whole number from 1 to {default}.",
                "dimensions",
            )
    # openai 3.63 sends base64 unless told otherwise, and decodes it as little-endian float32
    # (`openai/lib/_parsing/_embeddings.py`, `prepare_embedding_request`).
    encoding = data.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        raise _openai_error(  # [INF] wording
            wire, f"sandbox: encoding_format={encoding!r}; use 'float' or 'base64'.", "encoding_format"
        )
    inputs = _openai_inputs(wire, data.get("input"))
    rows = []
    tokens = 0
    for index, item in enumerate(inputs):
        values = vector(item, model, size)
        tokens += len(item) if not isinstance(item, str) else max(1, len(item) // 4)
        embedding: Any = base64.b64encode(array("f", values).tobytes()).decode() if encoding == "base64" else values
        rows.append({"object": "embedding", "index": index, "embedding": embedding})
    return {"object": "list", "data": rows, "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def _openai_inputs(wire: WireFormat, raw: Any) -> list[str | list[int]]:
    """The inputs one by one: a string, or token ids; a list of either."""
    if isinstance(raw, str) and raw:
        return [raw]
    if isinstance(raw, list) and 0 < len(raw) <= _MAX_INPUTS:
        if all(isinstance(item, str) and item for item in raw):
            return list(raw)
        if all(_is_tokens(item) for item in raw):
            return [list(item) for item in raw]
        if _is_tokens(raw):
            return [list(raw)]
    raise _openai_error(wire, _INVALID_INPUT)


def _is_tokens(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, int) and not isinstance(item, bool) and item >= 0 for item in value)
    )


def _openai_error(wire: WireFormat, message: str, param: str | None = None) -> ErrorResponse:
    return wire.error(400, printable(message), rule=Rule.MALFORMED, param=param)


def _gemini(model: str, method: str, body: bytes) -> dict[str, Any]:
    """google-genai 3.6's `models.embed_content` sends the Gemini API `:batchEmbedContents`, one request
    per content, each naming `models/{model}` (`google/genai/models.py`,
    `_EmbedContentParametersPrivate_to_mldev`); `:embedContent` takes one content."""
    wire = get_wire_format("gemini")
    if model not in GEMINI_MODELS:
        raise wire.error(
            404,
            printable(
                f"models/{model} is not found for API version v1beta, or is not supported for {method}. Call "
                f"ListModels to see the list of available models and their supported methods.\n\nsandbox: the "
                f"embedding models are {', '.join(GEMINI_MODELS)}."
            ),
            rule=Rule.UNKNOWN_SCENARIO,
        )
    data = _json(wire, body)
    if method == "embedContent":
        return {"embedding": {"values": _gemini_one(wire, model, data, "")}}
    requests = data.get("requests")
    if not isinstance(requests, list) or not requests:
        raise _gemini_error(wire, "* BatchEmbedContentsRequest.requests: at least one request is required.", "requests")
    if len(requests) > _MAX_BATCH:  # [INF] wording; the limit is the API reference's
        raise _gemini_error(
            wire, f"* BatchEmbedContentsRequest.requests: at most {_MAX_BATCH} requests are allowed.", "requests"
        )
    embeddings = []
    for index, request in enumerate(requests):
        where = f"requests[{index}]"
        if not isinstance(request, Mapping):
            raise _gemini_error(wire, f"Invalid value at '{where}', must be an object.", where)
        named = request.get("model")
        if named is not None and named not in (model, f"models/{model}"):
            raise _gemini_error(  # [INF] wording
                wire, f"* BatchEmbedContentsRequest.{where}.model: {named!r} differs from models/{model}.", where
            )
        embeddings.append({"values": _gemini_one(wire, model, request, f"{where}.")})
    return {"embeddings": embeddings}


def _gemini_one(wire: WireFormat, model: str, request: Mapping[str, Any], where: str) -> list[float]:
    content = request.get("content")
    if not isinstance(content, Mapping) or not isinstance(content.get("parts"), list) or not content["parts"]:
        message = f"* EmbedContentRequest.{where}content: content must not be empty."  # [INF] wording
        raise _gemini_error(wire, message, f"{where}content")
    texts = []
    for index, part in enumerate(content["parts"]):
        text = part.get("text") if isinstance(part, Mapping) else None
        if not isinstance(text, str) or not text:
            # The real words for an empty part (lingfengQAQ/webnovel-writer#51); [INF] for a part without text.
            raise _gemini_error(
                wire, "EmbedContentRequest.content contains an empty Part.", f"{where}content.parts[{index}]"
            )
        texts.append(text)
    size = GEMINI_MODELS[model]
    asked = request.get("outputDimensionality", request.get("output_dimensionality"))
    if asked is not None:
        if isinstance(asked, bool) or not isinstance(asked, int) or not 1 <= asked <= size:
            raise _gemini_error(  # [INF] wording
                wire,
                f"sandbox: outputDimensionality={asked!r}; {model} takes a whole number from 1 to {size}.",
                f"{where}outputDimensionality",
            )
        size = asked
    return vector(" ".join(texts), model, size)


def _gemini_error(wire: WireFormat, message: str, field: str) -> ErrorResponse:
    return wire.error(400, printable(message), rule=Rule.MALFORMED, param=field)


def _json(wire: WireFormat, body: bytes) -> dict[str, Any]:
    try:
        data = loads(body)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        if wire.name == "gemini":
            raise _gemini_error(wire, "Invalid JSON payload received. Expected an object.", "")
        raise _openai_error(
            wire,
            "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your "
            "HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid "
            "JSON. If you have trouble figuring out how to fix this, please contact us through our help "
            "center at help.openai.com.)",
        )
    return data
