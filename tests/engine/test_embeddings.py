"""Deterministic embeddings: OpenAI's `/v1/embeddings` and Gemini's `:embedContent` and
`:batchEmbedContents` through the official SDKs, in-process and through mock(); the same text always
gets the same unit vector, texts sharing words point closer, and bad requests get the real errors."""

from __future__ import annotations

import math
from typing import Any

import httpx
import httpx2
import openai
import pytest
from google import genai
from google.genai import errors, types

import sandbox

DOCS = ["Our refund policy: refunds within 30 days.", "Shipping takes three days.", "Refund requests go to billing."]


def _openai(transport: sandbox.Httpx2Transport | None = None) -> openai.OpenAI:
    client = httpx2.Client(transport=transport) if transport is not None else None
    return openai.OpenAI(api_key="sk-test", max_retries=0, http_client=client)


def _gemini(transport: sandbox.Httpx2Transport) -> genai.Client:
    options = types.HttpOptions(httpx_client=httpx2.Client(transport=transport))
    return genai.Client(api_key="gemini-test", http_options=options)


def cosine(left: list[float], right: list[float]) -> float:
    return sum(a * b for a, b in zip(left, right, strict=True))


def test_openai_embeddings_are_deterministic_unit_vectors() -> None:
    first = _openai(sandbox.httpx2_transport()).embeddings.create(model="text-embedding-3-small", input=DOCS)
    again = _openai(sandbox.httpx2_transport()).embeddings.create(
        model="text-embedding-3-small", input=DOCS, encoding_format="float"
    )
    vectors = [row.embedding for row in first.data]
    assert [row.embedding for row in again.data] == vectors  # base64 (the SDK's default) decodes to the same
    assert [row.index for row in first.data] == [0, 1, 2] and first.model == "text-embedding-3-small"
    assert all(len(vector) == 1536 and math.isclose(cosine(vector, vector), 1.0, abs_tol=1e-5) for vector in vectors)
    query = _openai(sandbox.httpx2_transport()).embeddings.create(model="text-embedding-3-small", input="refund")
    scores = [cosine(query.data[0].embedding, vector) for vector in vectors]
    assert scores[0] > scores[1] and scores[2] > scores[1]  # the refund texts rank above shipping


@pytest.mark.parametrize(
    ("options", "size"),
    [({"model": "text-embedding-3-large"}, 3072), ({"model": "text-embedding-3-small", "dimensions": 256}, 256)],
)
def test_openai_embeddings_take_the_model_size_or_dimensions(options: dict[str, Any], size: int) -> None:
    with sandbox.mock():
        reply = _openai().embeddings.create(input=[[1, 2, 3], [4]], **options)
    assert [len(row.embedding) for row in reply.data] == [size, size]


INVALID_INPUT = "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."


@pytest.mark.parametrize(
    ("options", "status", "message"),
    [
        ({"input": ""}, 400, INVALID_INPUT),
        ({"input": ["a", ""]}, 400, INVALID_INPUT),
        ({"input": []}, 400, INVALID_INPUT),
        (
            {"model": "text-embedding-ada-002", "dimensions": 8},
            400,
            "This model does not support specifying dimensions.",
        ),
        (
            {"dimensions": 4096},
            400,
            "sandbox: dimensions=4096; text-embedding-3-small takes a whole number from 1 to 1536.",
        ),
        ({"model": "gpt-4o"}, 404, "The model `gpt-4o` does not exist or you do not have access to it."),
    ],
    ids=["empty", "empty-item", "empty-list", "ada-dimensions", "too-large", "unknown-model"],
)
def test_openai_embeddings_have_the_real_errors(options: dict[str, Any], status: int, message: str) -> None:
    with pytest.raises(openai.APIStatusError) as info:
        _openai(sandbox.httpx2_transport()).embeddings.create(
            **{"model": "text-embedding-3-small", "input": "x", **options}
        )
    assert info.value.status_code == status
    assert info.value.body["message"].startswith(message)  # type: ignore[index]


def test_gemini_embeddings_batch_and_single() -> None:
    transport = sandbox.httpx2_transport()
    config = types.EmbedContentConfig(output_dimensionality=768)
    batch = _gemini(transport).models.embed_content(model="gemini-embedding-001", contents=DOCS, config=config)
    assert transport.journal.last.path.endswith("/models/gemini-embedding-001:batchEmbedContents")
    vectors = [embedding.values for embedding in batch.embeddings or []]
    assert [len(vector or []) for vector in vectors] == [768] * 3
    with httpx.Client(transport=sandbox.transport(), base_url="http://sandbox") as client:
        single = client.post(
            "/v1beta/models/gemini-embedding-001:embedContent",
            json={"content": {"parts": [{"text": DOCS[0]}]}, "outputDimensionality": 768},
        )
    assert single.status_code == 200 and single.json()["embedding"]["values"] == vectors[0]


def test_gemini_embeddings_have_clear_errors() -> None:
    transport = sandbox.httpx2_transport()
    with pytest.raises(errors.ClientError, match=r"EmbedContentRequest.content contains an empty Part."):
        _gemini(transport).models.embed_content(model="gemini-embedding-001", contents=[""])
    with pytest.raises(errors.ClientError, match=r"models/gemini-2.5-flash is not found .* batchEmbedContents"):
        _gemini(transport).models.embed_content(model="gemini-2.5-flash", contents=["x"])
    assert transport.journal.last.status == 404


def test_embeddings_over_http(server: str) -> None:
    with openai.OpenAI(api_key="sk-test", max_retries=0, base_url=f"{server}/v1") as client:
        reply = client.embeddings.create(model="text-embedding-3-small", input="refund", dimensions=8)
    in_process = _openai(sandbox.httpx2_transport()).embeddings.create(
        model="text-embedding-3-small", input="refund", dimensions=8
    )
    assert reply.data[0].embedding == in_process.data[0].embedding
