"""The engineer's docs (docs/engineer/*.md): every Python example is a test module, and each passes.

The examples run with name resolution and connecting refused for every address but the loopback's (a
conftest), so an example that would reach a real host fails here instead of sending anything, while
one that serves the sandbox on 127.0.0.1 reaches it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.slow

DOCS = Path(__file__).resolve().parents[2] / "docs" / "engineer"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
NO_NETWORK = """
import ipaddress
import socket

import pytest


def loopback(host):
    try:
        return ipaddress.ip_address(host.decode() if isinstance(host, bytes) else host).is_loopback
    except (ValueError, AttributeError):
        return False


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    resolve, connect = socket.getaddrinfo, socket.socket.connect

    def guarded_resolve(host, *args, **kwargs):
        if not loopback(host):
            raise OSError("an example tried to reach the network")
        return resolve(host, *args, **kwargs)

    def guarded_connect(sock, address):
        if not (isinstance(address, tuple) and loopback(address[0])):
            raise OSError("an example tried to reach the network")
        return connect(sock, address)

    monkeypatch.setattr(socket, "getaddrinfo", guarded_resolve)
    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
"""
EXAMPLES = [
    (page, index, code)
    for page in sorted(DOCS.glob("*.md"))
    for index, code in enumerate(BLOCK.findall(page.read_text()))
]


def test_every_page_has_examples() -> None:
    assert {page.name for page, _, _ in EXAMPLES} == {page.name for page in DOCS.glob("*.md")}


@pytest.mark.parametrize(
    ("page", "index", "code"), EXAMPLES, ids=[f"{page.stem}-{index}" for page, index, _ in EXAMPLES]
)
def test_example_passes(pytester: pytest.Pytester, page: Path, index: int, code: str) -> None:
    pytester.makeconftest(NO_NETWORK)
    pytester.makepyfile(**{f"test_{page.stem.replace('-', '_')}_{index}": code})
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(re.findall(r"^def test_", code, re.MULTILINE)))
