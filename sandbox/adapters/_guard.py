"""The real-API guard: no request reaches a provider's real host while the pytest plugin is loaded.

`install()` wraps the `handle_request` of httpx's and httpx2's HTTP transports (of those already
imported; call it again to cover one imported since) so that a request to a provider host with no
`sandbox.mock()` active raises `RealAPIBlocked` before any name is resolved or socket opened.
Requests to every other host, and every request while a mount is active (the mount answers it), go
through unchanged. `uninstall()` restores what it wrapped. May touch: those four methods, nothing else.
"""

from __future__ import annotations

import functools
import re
import sys
from typing import Any

from .._exceptions import UsageError

__all__ = [
    "ALLOW_ENV",
    "ALLOW_INI",
    "cloud_host",
    "PROVIDER_HOSTS",
    "RealAPIBlocked",
    "install",
    "is_provider_host",
    "uninstall",
]

PROVIDER_HOSTS = ("api.openai.com", "api.anthropic.com", "generativelanguage.googleapis.com")
"""The providers' own API hosts. The clouds' hosts (any Azure OpenAI resource, Vertex AI's global and
regional endpoints) count too: see `sandbox.wire.clouds.CLOUD_HOSTS`."""

ALLOW_INI = "sandbox_allow_real_api"
ALLOW_ENV = "SANDBOX_ALLOW_REAL_API"


@functools.cache
def cloud_host() -> re.Pattern[str]:
    """The clouds' host patterns as one expression, compiled on the first check: the plugin loads this
    module in every pytest run, and the wire formats only when a request is checked."""
    from ..wire.clouds import CLOUD_HOSTS

    return re.compile("|".join(f"(?:{pattern})" for pattern in CLOUD_HOSTS))


def is_provider_host(host: str) -> bool:
    return host in PROVIDER_HOSTS or cloud_host().fullmatch(host) is not None


class RealAPIBlocked(UsageError):
    """A test sent a request to a real provider host with no sandbox mounted."""


def _blocked(request: Any) -> RealAPIBlocked:
    return RealAPIBlocked(
        f"sandbox: this test sent {request.method} {request.url.path} to the real {request.url.host}, with no "
        "sandbox mounted; the sandbox's pytest plugin stops requests to real providers, so nothing was sent. "
        "Mount the sandbox:\n"
        "- take the `sandbox_mock` fixture (or wrap the code in `with sandbox.mock(...):`), or\n"
        "- hand the SDK client `http_client=httpx2.Client(transport=sandbox.httpx2_transport(...))`.\n"
        f"If this test means to reach the real API, set `{ALLOW_INI} = true` in your pytest configuration, or "
        f"{ALLOW_ENV}=1 in the environment."
    )


def _mounted() -> bool:
    """A `sandbox.mock()` is active (its module is loaded only by code that mounts one)."""
    mock = sys.modules.get(__package__ + "._mock")
    return mock is not None and bool(mock._PATCH.active)


_WRAPPED: list[tuple[type, str, Any, Any]] = []
"""(class, method name, the original, our wrapper), in the order installed."""


def _wrap(owner: type, name: str, original: Any, is_async: bool) -> Any:
    if is_async:

        async def handle_async_request(transport: Any, request: Any) -> Any:
            if is_provider_host(request.url.host) and not _mounted():
                raise _blocked(request)
            return await original(transport, request)

        return handle_async_request

    def handle_request(transport: Any, request: Any) -> Any:
        if is_provider_host(request.url.host) and not _mounted():
            raise _blocked(request)
        return original(transport, request)

    return handle_request


def install() -> None:
    """Guard httpx's and httpx2's transports, of those imported by now; a second call adds the rest."""
    guarded = {(owner, name) for owner, name, _, _ in _WRAPPED}
    for module_name in ("httpx", "httpx2"):
        module = sys.modules.get(module_name)
        if module is None:
            continue
        for owner, name, is_async in (
            (module.HTTPTransport, "handle_request", False),
            (module.AsyncHTTPTransport, "handle_async_request", True),
        ):
            if (owner, name) in guarded:
                continue
            original = getattr(owner, name)
            wrapper = _wrap(owner, name, original, is_async)
            setattr(owner, name, wrapper)
            _WRAPPED.append((owner, name, original, wrapper))


def uninstall() -> None:
    """Restore what `install()` wrapped (where nothing has replaced the wrapper since)."""
    while _WRAPPED:
        owner, name, original, wrapper = _WRAPPED.pop()
        if getattr(owner, name) is wrapper:
            setattr(owner, name, original)
