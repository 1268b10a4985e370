"""Azure OpenAI and Vertex AI: the official clients' cloud modes, unmodified, against every door.

`AzureOpenAI` (openai), `genai.Client(vertexai=True)` (google-genai) and `AnthropicVertex` (anthropic)
run the catalogue in process (httpx2), over HTTP and through `sandbox.mock()` on the clouds' real host
names; the front ends' own refusals (no key, no or an unknown api-version, an unknown deployment or
publisher model) come back as the errors those clients raise. No name but the loopback's is resolved.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import httpx2
import pytest

import sandbox
from tests.sdk_drivers import anthropic_messages, gemini, openai_chat, openai_responses

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}

AZURE_ENDPOINT = "https://sandbox-test.openai.azure.com"
"""A real Azure resource's host shape: `sandbox.mock()` answers it without resolving it."""


@pytest.fixture(autouse=True)
def no_names_but_loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    asked: list[str] = []
    real = socket.getaddrinfo

    def guarded(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in _LOOPBACK:
            asked.append(name)
            raise OSError(f"these tests resolve no names but the loopback's; asked for {name!r}")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)
    yield
    assert asked == [], f"something tried to resolve {asked}"


# -- the clients, in each cloud's mode ------------------------------------------------------------------


def azure(endpoint: str = AZURE_ENDPOINT, *, api_version: str = "2024-10-21", **options: Any) -> Any:
    import openai

    return openai.AzureOpenAI(
        api_key="azure-key", api_version=api_version, azure_endpoint=endpoint, max_retries=0, **options
    )


def azure_v1(endpoint: str = AZURE_ENDPOINT, **options: Any) -> Any:
    """Azure's v1 API: the plain OpenAI client at `{endpoint}/openai/v1/`, no api-version."""
    import openai

    return openai.OpenAI(api_key="azure-key", base_url=f"{endpoint}/openai/v1/", max_retries=0, **options)


def vertex_gemini(base_url: str | None = None, **http: Any) -> Any:
    from google import genai
    from google.genai import types
    from google.oauth2.credentials import Credentials

    options = types.HttpOptions(base_url=base_url, **http)
    return genai.Client(
        vertexai=True,
        project="sandbox-proj",
        location="us-central1",
        credentials=Credentials(token="tok"),
        http_options=options,
    )


def vertex_anthropic(base_url: str | None = None, **options: Any) -> Any:
    from anthropic import AnthropicVertex

    return AnthropicVertex(
        region="us-east5", project_id="sandbox-proj", access_token="tok", base_url=base_url, max_retries=0, **options
    )


Loop = Callable[..., str]
CLOUD_LOOPS: dict[str, tuple[Loop, Callable[..., Any], str]] = {
    # name: (the SDK's own loop, the cloud client factory, the option that takes an httpx2 client)
    "azure-chat": (openai_chat, azure, "http_client"),
    "azure-responses": (openai_responses, azure, "http_client"),
    "azure-v1-chat": (openai_chat, azure_v1, "http_client"),
    "azure-v1-responses": (openai_responses, azure_v1, "http_client"),
    "vertex-gemini": (gemini, vertex_gemini, "httpx_client"),
    "vertex-anthropic": (anthropic_messages, vertex_anthropic, "http_client"),
}


def _in_process(factory: Callable[..., Any], option: str, transport: sandbox.Httpx2Transport) -> Any:
    return factory(**{option: httpx2.Client(transport=transport)})  # type: ignore[arg-type]


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
@pytest.mark.parametrize("scenario", ["single_call", "parallel_calls", "multi_step"])
@pytest.mark.parametrize("cloud", CLOUD_LOOPS)
def test_cloud_clients_run_the_catalogue_in_process(cloud: str, scenario: str, stream: bool) -> None:
    loop, factory, option = CLOUD_LOOPS[cloud]
    transport = sandbox.httpx2_transport()
    answer = loop(scenario, stream=stream, client=_in_process(factory, option, transport))
    expected = {"single_call": "18C, clear", "parallel_calls": "21:30", "multi_step": "confirmed, ref LB-2041"}
    assert expected[scenario] in answer
    assert [exchange.status for exchange in transport.journal] == [200] * len(transport.journal)
    assert all(exchange.scenario == scenario for exchange in transport.journal)


@pytest.fixture(scope="module")
def cloud_server() -> Iterator[str]:
    from tests.loopback import serving

    with serving(sandbox.Engine()) as base:
        yield base


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
@pytest.mark.parametrize("cloud", CLOUD_LOOPS)
def test_cloud_clients_run_the_catalogue_over_http(cloud: str, cloud_server: str, stream: bool) -> None:
    loop, factory, _ = CLOUD_LOOPS[cloud]
    if factory is vertex_gemini:
        client = factory(base_url=cloud_server)
    elif factory is vertex_anthropic:
        client = factory(base_url=f"{cloud_server}/v1")
    else:
        client = factory(cloud_server)
    assert "confirmed, ref LB-2041" in loop("multi_step", stream=stream, client=client)


@pytest.mark.parametrize("cloud", CLOUD_LOOPS)
def test_cloud_clients_reach_mock_on_the_clouds_real_hosts(cloud: str) -> None:
    loop, factory, _ = CLOUD_LOOPS[cloud]
    with sandbox.mock() as mounted:
        answer = loop("parallel_calls", client=factory())
    assert "24C, humid" in answer and "21:30" in answer
    assert [exchange.status for exchange in mounted.journal] == [200, 200]


# -- the front ends' own refusals -----------------------------------------------------------------------


def _post(path: str, body: Any, *, headers: dict[str, str] | None = None) -> httpx.Response:
    client = httpx.Client(transport=sandbox.transport(), base_url="https://sandbox-test.openai.azure.com")
    return client.post(path, json=body, headers=headers or {})


CHAT = {"messages": [{"role": "user", "content": "Hi"}]}


@pytest.mark.parametrize(
    ("path", "headers", "status", "error"),
    [
        (
            "/openai/deployments/plain_text/chat/completions",
            {"api-key": "k"},
            404,
            {"code": "404", "message": "Resource not found"},
        ),
        (
            "/openai/deployments/plain_text/chat/completions?api-version=2031-01-01",
            {"api-key": "k"},
            400,
            {"code": "BadRequest", "message": "API version not supported"},
        ),
        (
            "/openai/deployments/plain_text/chat/completions?api-version=2024-10-21",
            {},
            401,
            {
                "code": "401",
                "message": "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide "
                "a valid key for an active subscription and use a correct regional API endpoint for your resource.",
            },
        ),
        (
            "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
            {"api-key": "k"},
            404,
            {
                "code": "DeploymentNotFound",
                "message": "The API deployment for this resource does not exist. If you created the deployment "
                "within the last 5 minutes, please wait a moment and try again.",
            },
        ),
        ("/openai/deployments/plain_text/embeddings?api-version=2024-10-21", {"api-key": "k"}, 404, None),
    ],
    ids=["no-api-version", "unknown-api-version", "no-key", "unknown-deployment", "unserved-path"],
)
def test_azure_front_end_refuses_as_azure_does(
    path: str, headers: dict[str, str], status: int, error: dict[str, str] | None
) -> None:
    response = _post(path, CHAT, headers=headers)
    assert response.status_code == status
    expected = error or {"code": "404", "message": "Resource not found"}
    assert response.json() == {"error": expected}


def test_azure_sdk_raises_its_own_errors_for_the_front_ends_refusals() -> None:
    import openai

    transport = sandbox.httpx2_transport()
    client = azure(http_client=httpx2.Client(transport=transport))  # type: ignore[arg-type]
    with pytest.raises(openai.NotFoundError, match="The API deployment for this resource does not exist") as missing:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hi"}])
    assert missing.value.code == "DeploymentNotFound"
    stale = azure(api_version="2019-01-01", http_client=httpx2.Client(transport=transport))  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError, match="API version not supported"):
        stale.chat.completions.create(model="plain_text", messages=[{"role": "user", "content": "Hi"}])


def test_azure_deployment_names_the_scenario_whatever_the_body_says() -> None:
    body = {**CHAT, "model": "gpt-4o"}
    response = _post(
        "/openai/deployments/plain_text/chat/completions?api-version=2024-10-21", body, headers={"api-key": "k"}
    )
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "Hello! No tools needed for that."


def test_azure_passes_openai_rule_errors_through_unchanged() -> None:
    """Past the front end Azure answers with OpenAI's own bodies: the ordering mistake reads the same."""
    body = {
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        ]
    }
    azure_answer = _post(
        "/openai/deployments/single_call/chat/completions?api-version=2024-10-21", body, headers={"api-key": "k"}
    )
    own = httpx.Client(transport=sandbox.transport()).post(
        "https://api.openai.com/v1/chat/completions", json={**body, "model": "single_call"}
    )
    assert azure_answer.status_code == own.status_code == 400
    assert azure_answer.json()["error"]["message"] == own.json()["error"]["message"]


VERTEX_GEMINI = "/v1beta1/projects/p/locations/us-central1/publishers/google/models/{model}:generateContent"
VERTEX_ANTHROPIC = "/v1/projects/p/locations/us-east5/publishers/anthropic/models/{model}:rawPredict"
GEMINI_BODY = {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}
ANTHROPIC_BODY = {
    "anthropic_version": "vertex-2023-10-16",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "Hi"}],
}


def test_vertex_refuses_a_request_without_credentials() -> None:
    for path, body in ((VERTEX_GEMINI, GEMINI_BODY), (VERTEX_ANTHROPIC, ANTHROPIC_BODY)):
        response = _post(path.format(model="plain_text"), body)
        assert response.status_code == 401
        error = response.json()["error"]
        assert error["status"] == "UNAUTHENTICATED" and error["code"] == 401
        assert error["message"].startswith("Request is missing required authentication credential.")


def test_vertex_names_the_publisher_model_it_does_not_have() -> None:
    bearer = {"authorization": "Bearer tok"}
    gemini_answer = _post(VERTEX_GEMINI.format(model="gemini-9"), GEMINI_BODY, headers=bearer)
    assert gemini_answer.status_code == 404
    assert gemini_answer.json()["error"]["status"] == "NOT_FOUND"
    assert gemini_answer.json()["error"]["message"].startswith(
        "Publisher Model `projects/p/locations/us-central1/publishers/google/models/gemini-9` was not found or your "
        "project does not have access to it."
    )
    claude = _post(VERTEX_ANTHROPIC.format(model="claude-9"), ANTHROPIC_BODY, headers=bearer)
    assert claude.status_code == 404
    assert "publishers/anthropic/models/claude-9" in claude.json()["error"]["message"]


def test_vertex_express_mode_takes_an_api_key() -> None:
    path = "/v1beta1/publishers/google/models/plain_text:generateContent"
    assert _post(path, GEMINI_BODY).status_code == 401
    answered = _post(path, GEMINI_BODY, headers={"x-goog-api-key": "key"})
    assert answered.status_code == 200
    assert answered.json()["candidates"][0]["content"]["parts"][0]["text"] == "Hello! No tools needed for that."


def test_anthropic_on_vertex_needs_anthropic_version_and_takes_the_model_from_the_path() -> None:
    bearer = {"authorization": "Bearer tok"}
    without = {key: value for key, value in ANTHROPIC_BODY.items() if key != "anthropic_version"}
    refused = _post(VERTEX_ANTHROPIC.format(model="plain_text"), without, headers=bearer)
    assert refused.status_code == 400
    assert refused.json()["error"] == {"type": "invalid_request_error", "message": "anthropic_version: Field required"}
    answered = _post(VERTEX_ANTHROPIC.format(model="plain_text"), ANTHROPIC_BODY, headers=bearer)
    assert answered.status_code == 200
    assert answered.json()["content"][0]["text"] == "Hello! No tools needed for that."


def test_anthropic_vertex_sdk_surfaces_the_publisher_model_404() -> None:
    import anthropic

    client = vertex_anthropic(http_client=httpx2.Client(transport=sandbox.httpx2_transport()))  # type: ignore[arg-type]
    with pytest.raises(anthropic.NotFoundError, match="Publisher Model"):
        client.messages.create(model="claude-9", max_tokens=64, messages=[{"role": "user", "content": "Hi"}])


def test_a_cloud_request_is_journaled_at_the_path_the_client_sent() -> None:
    transport = sandbox.transport()
    path = "/openai/deployments/plain_text/chat/completions"
    httpx.Client(transport=transport).post(
        f"{AZURE_ENDPOINT}{path}?api-version=2024-10-21", json=CHAT, headers={"api-key": "k"}
    )
    (exchange,) = transport.journal
    assert (exchange.path, exchange.status, exchange.provider, exchange.scenario) == (path, 200, "openai", "plain_text")
    assert json.loads(exchange.request_body)["model"] == "plain_text"


@pytest.mark.parametrize(
    ("mangle", "vertex_says", "gemini_says"),
    [
        (
            lambda part: part.pop("thoughtSignature"),
            "Unable to submit request because function call `default_api:get_weather` in the 2. content block is "
            "missing a `thought_signature`. Learn more: "
            "https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures",
            "Function call is missing a thought_signature in functionCall parts.",
        ),
        (
            lambda part: part.update(thoughtSignature="c2lnbmVkIGJ5IGhhbmQ="),
            "Unable to submit request because Thought signature is not valid.. Learn more: "
            "https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini",
            "Corrupted thought signature.",
        ),
    ],
    ids=["missing-signature", "forged-signature"],
)
def test_vertex_words_the_thought_signature_rules_its_own_way(
    mangle: Callable[[dict[str, Any]], object], vertex_says: str, gemini_says: str
) -> None:
    scenario = sandbox.get_scenario("single_call_reasoning")
    tools = [
        {
            "functionDeclarations": [
                {"name": t.name, "description": t.description, "parameters": t.parameters} for t in scenario.tools
            ]
        }
    ]
    first = {"contents": [{"role": "user", "parts": [{"text": scenario.prompt}]}], "tools": tools}
    path = VERTEX_GEMINI.format(model=scenario.name)
    bearer = {"authorization": "Bearer tok"}
    turn = _post(path, first, headers=bearer).json()["candidates"][0]["content"]
    call = next(part for part in turn["parts"] if "functionCall" in part)
    mangle(call)
    result = {"functionResponse": {"name": "get_weather", "response": {"result": "18C, clear"}}}
    second = {**first, "contents": [*first["contents"], turn, {"role": "user", "parts": [result]}]}
    through_vertex = _post(path, second, headers=bearer)
    assert through_vertex.status_code == 400
    assert through_vertex.json()["error"]["message"] == vertex_says
    direct = httpx.Client(transport=sandbox.transport()).post(
        f"https://generativelanguage.googleapis.com/v1beta/models/{scenario.name}:generateContent", json=second
    )
    assert direct.json()["error"]["message"].startswith(gemini_says)
