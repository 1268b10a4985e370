"""vcrpy and pytest-recording cassettes read as `Recording`s, for `sandbox import`.

A cassette is `{"interactions": [{"request": ..., "response": ...}], "version": 1}`, in YAML (vcrpy's
default serializer) or JSON (its `json` serializer). Bodies come in the forms the field writes them:
a string or bytes; `{"string": ...}` (vcrpy's answers); `{"type": "json"|"text", "content": ...}` and
`parsed_body` (pydantic-ai's serializer); `content` (vcrpy's httpx answers). Headers and the query
string are read for nothing but the answer's content type: no credential reaches a `Recording`.

YAML needs PyYAML (`pip install 'skyl-sandbox[import]'`); JSON cassettes need nothing more.
Touches nothing but the file it reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .._exceptions import UsageError
from ._recorded import Recording

__all__ = ["read_cassette", "scenario_name"]


def scenario_name(path: Path) -> str:
    """A scenario name from a cassette's file name: `test_x[auto-openai].yaml` -> `test_x_auto-openai`."""
    name = re.sub(r"[^a-zA-Z0-9_-]+", "_", path.stem).strip("_")[:64]
    return name or "imported"


def read_cassette(path: Path) -> list[Recording]:
    """Every interaction of the cassette at `path`, oldest first."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it as a text cassette ({exc}).") from None
    data = _load(path, text)
    interactions = data.get("interactions") if isinstance(data, Mapping) else None
    if not isinstance(interactions, list):
        raise UsageError(
            f"{path}: not a vcrpy cassette: it has no `interactions` list. Give a cassette that vcrpy or "
            "pytest-recording wrote (YAML, or JSON with serializer='json')."
        )
    recordings = []
    for index, interaction in enumerate(interactions):
        where = f"{path}: interaction {index}"
        if not isinstance(interaction, Mapping):
            raise UsageError(f"{where} is not a table with `request` and `response`.")
        recordings.append(_recording(interaction, where))
    return recordings


def _load(path: Path, text: str) -> Any:
    if path.suffix == ".json" or text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise UsageError(f"{path}: not valid JSON ({exc}).") from None
    try:
        import yaml
    except ImportError:
        raise UsageError(f"{path}: reading a YAML cassette needs PyYAML: pip install 'skyl-sandbox[import]'.") from None
    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not valid YAML ({exc}).") from None


def _recording(interaction: Mapping[str, Any], where: str) -> Recording:
    request = interaction.get("request")
    response = interaction.get("response")
    if not isinstance(request, Mapping) or not isinstance(response, Mapping):
        raise UsageError(f"{where} needs a `request` and a `response` table.")
    uri = request.get("uri")
    if not isinstance(uri, str):
        raise UsageError(f"{where}: its request has no `uri`.")
    status = response.get("status")
    code = status.get("code") if isinstance(status, Mapping) else status
    if not isinstance(code, int):
        raise UsageError(f"{where}: its response has no status code.")
    parts = urlsplit(uri)
    return Recording(
        method=str(request.get("method", "POST")).upper(),
        path=parts.path,
        status=code,
        request_body=_body(request, where),
        response_body=_body(response, where),
        content_type=_header(response.get("headers"), "content-type"),
    )


def _body(side: Mapping[str, Any], where: str) -> bytes:
    if "parsed_body" in side:
        return json.dumps(side["parsed_body"]).encode()
    body = side.get("body", side.get("content"))
    if isinstance(body, Mapping):
        if "string" in body:
            body = body["string"]
        elif "content" in body:
            content = body["content"]
            body = content if isinstance(content, (str, bytes)) else json.dumps(content)
        else:
            raise UsageError(f"{where}: a body table of an unknown form (keys {sorted(body)}).")
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, bytes):
        return body
    return json.dumps(body).encode()


def _header(headers: Any, name: str) -> str:
    if not isinstance(headers, Mapping):
        return ""
    for key, value in headers.items():
        if str(key).lower() == name:
            if isinstance(value, list):
                return str(value[0]) if value else ""
            return str(value)
    return ""
