"""The contract between `sandbox grade` and a program in any language, one graded case at a time.

The environment tells the program everything it needs:

    SANDBOX_WIRE            openai | openai-responses | anthropic | gemini: the wire format to speak
    SANDBOX_BASE_URL        the private sandbox of this case, e.g. http://127.0.0.1:41234/k3Qx...:
                            append paths to it as they are (no trailing slash; it carries a secret path)
    OPENAI_BASE_URL         SANDBOX_BASE_URL + "/v1"   (read by the official OpenAI SDKs)
    ANTHROPIC_BASE_URL      SANDBOX_BASE_URL           (read by the official Anthropic SDKs)
    GOOGLE_GEMINI_BASE_URL  SANDBOX_BASE_URL           (read by the official google-genai SDKs)
    OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY   placeholders: the sandbox needs no key
    SANDBOX_MODEL           the model to ask for: in the sandbox it names the scenario
    SANDBOX_PROMPT          the user's message that starts the conversation
    SANDBOX_STREAM          1: stream every model request; 0: do not
    SANDBOX_REASONING       1: ask the model to show its reasoning (Anthropic thinking, Responses
                            reasoning summaries, Gemini thoughts); 0: do not (challenge 09 sets it)

The sandbox describes the scenario's tools and runs them:

    GET  $SANDBOX_BASE_URL/tools        [{"name", "description", "parameters"}, ...]
                                        (parameters is a JSON schema)
    POST $SANDBOX_BASE_URL/tools/run    {"name": "get_weather", "arguments": {"city": "Paris"}}
                                        answers {"output": "<the tool's output>"} when the tool ran,
                                        {"error": "<why not>"} when it failed

The program ends in one of three ways:

    the model answered     print the answer's text on stdout (nothing else there), exit 0
    the bound was hit      exit non-zero, with the report on stderr (the bound, the calls in order,
                           what to check)
    the provider refused   a 400, or errors that outlast the retries: exit non-zero, with the error on
                           stderr; giving up after retries names the status, the attempts and what to
                           check (`gave up after 3 attempts: the provider kept answering 529 ...;
                           check the provider's status page and your rate limits`)

Challenge 10 plays the provider's faults: an error status with its body and retry hint (the
retry-after-ms and retry-after headers; a Gemini error's google.rpc.RetryInfo retryDelay), or an
answer whose connection closes before its end. A 429, 503, 529 or a cut answer is retried after the
hint, at most 3 attempts, with the same request; a 400 never.

Anything else (debug output, logs) goes to stderr.
"""

from __future__ import annotations

__all__ = ["API_KEY", "environment"]

API_KEY = "sandbox-needs-no-key"
"""What the key variables hold: SDKs that refuse to start without a key get one."""


def environment(
    provider: str, base_url: str, *, model: str, prompt: str, stream: bool, reasoning: bool = False
) -> dict[str, str]:
    """The variables of one case, to lay over the grader's own environment."""
    return {
        "SANDBOX_WIRE": provider,
        "SANDBOX_BASE_URL": base_url,
        "OPENAI_BASE_URL": f"{base_url}/v1",
        "ANTHROPIC_BASE_URL": base_url,
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "OPENAI_API_KEY": API_KEY,
        "ANTHROPIC_API_KEY": API_KEY,
        "GEMINI_API_KEY": API_KEY,
        "SANDBOX_MODEL": model,
        "SANDBOX_PROMPT": prompt,
        "SANDBOX_STREAM": "1" if stream else "0",
        "SANDBOX_REASONING": "1" if reasoning else "0",
        # A proxy configured for the outside world must not sit between the program and its sandbox.
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
