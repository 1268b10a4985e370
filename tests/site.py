"""A lesson site on one machine, standing in for several: `sandbox serve` processes on their own
loopback ports sharing one `redis-server`, behind Debian's nginx running deploy/nginx.conf (its
upstream pointed at those ports). Every process is started here and stopped by its pid."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.stores import _free_port, redis_server

ROOT = Path(__file__).resolve().parent.parent
NGINX_CONF = ROOT / "deploy" / "nginx.conf"


@dataclass
class Site:
    base: str
    """The proxy's URL: what learners' SDKs are given."""
    servers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    """Each `sandbox serve` by its upstream address (127.0.0.1:PORT)."""
    access_log: Path = Path()
    """nginx's log: one `STATUS UPSTREAM_ADDRESSES` line per answer."""
    store: str = ""
    """The Redis URL the servers share."""
    proxy_pid: int = 0
    """nginx's master process (its worker is its child)."""

    def kill(self, address: str) -> None:
        """End one server at once (SIGKILL), as a machine that fails does: no goodbye to anyone."""
        process = self.servers[address]
        process.send_signal(signal.SIGKILL)
        process.wait(30)

    def answers(self) -> list[tuple[int, str]]:
        lines = self.access_log.read_text().splitlines() if self.access_log.exists() else []
        return [(int(status), upstream) for status, upstream in (line.split(" ", 1) for line in lines)]


def nginx_conf(folder: Path, listen: int, upstreams: list[str]) -> str:
    """deploy/nginx.conf in a whole nginx configuration of `folder`'s own, on 127.0.0.1:`listen`, its
    upstream the given addresses."""
    site = NGINX_CONF.read_text()
    servers = "".join(f"    server {address} max_fails=1 fail_timeout=30s;\n" for address in upstreams)
    assert "    server sandbox:8765;" in site and "listen 80;" in site, "deploy/nginx.conf changed shape"
    site = "\n".join(
        servers.rstrip("\n") if line.strip().startswith("server sandbox:8765;") else line for line in site.splitlines()
    )
    site = site.replace("listen 80;", f"listen 127.0.0.1:{listen};")
    kinds = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    temp = "".join(f"    {kind}_temp_path {folder / kind};\n" for kind in kinds)
    return (
        f"worker_processes 1;\npid {folder / 'nginx.pid'};\nerror_log {folder / 'error.log'} warn;\n"
        "events { worker_connections 4096; }\n"
        "http {\n"
        "    log_format upstreams '$status $upstream_addr';\n"
        f"    access_log {folder / 'access.log'} upstreams;\n{temp}{site}\n}}\n"
    )


def proxy_binary(name: str) -> str:
    """The path of `nginx` or `haproxy`; skip the test without it, or fail under SANDBOX_REQUIRE_PROXIES=1
    (set by `.ci/run`, which installs both)."""
    found = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
    if found is None:
        if os.environ.get("SANDBOX_REQUIRE_PROXIES") == "1":
            pytest.fail(f"SANDBOX_REQUIRE_PROXIES=1 but {name} is missing: apt-get install nginx haproxy.")
        pytest.skip(f"{name} is not installed")
    return found


def _up(url: str, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{what} exited with status {process.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.05)
    pytest.fail(f"{what} did not answer {url} within 60 s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process that ignores SIGTERM
            process.kill()
            process.wait(30)


@contextmanager
def lesson_site(folder: Path, *, machines: int = 2, options: tuple[str, ...] = ()) -> Iterator[Site]:
    """`machines` sandbox servers sharing one Redis behind nginx, until the block ends."""
    nginx = proxy_binary("nginx")
    with ExitStack() as stack:
        store = stack.enter_context(redis_server(folder))
        site = Site(base="", store=store)
        for _ in range(machines):
            port = _free_port()
            command = [sys.executable, "-m", "sandbox", "serve", "--port", str(port), "--store", store]
            process = subprocess.Popen(
                [*command, "--forwarded-allow-ips", "127.0.0.1", *options], stdout=subprocess.DEVNULL
            )
            stack.callback(_stop, process)
            site.servers[f"127.0.0.1:{port}"] = process
        for address, process in site.servers.items():
            _up(f"http://{address}/health", process, f"sandbox serve on {address}")
        listen = _free_port()
        conf = folder / "nginx.conf"
        conf.write_text(nginx_conf(folder, listen, list(site.servers)))
        command = [nginx, "-p", str(folder), "-c", str(conf), "-e", str(folder / "error.log"), "-g", "daemon off;"]
        proxy = subprocess.Popen(command)
        stack.callback(_stop, proxy)
        site.proxy_pid = proxy.pid
        site.base = f"http://127.0.0.1:{listen}"
        site.access_log = folder / "access.log"
        _up(f"{site.base}/health", proxy, "nginx")
        yield site
