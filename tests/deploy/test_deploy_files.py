"""deploy/: the container file, the compose file, the nginx site and the Kubernetes manifest hold
together. No container runs here: each file is parsed, the sandbox options it passes are parsed by
the real `sandbox serve`, the names one file gives another agree, and nginx checks its site."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import yaml

from sandbox.adapters._serve import forwarded_ips_of
from sandbox.cli._main import _parser
from tests.site import nginx_conf, proxy_binary

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
ROOT = DEPLOY.parent


def _serve_args(entrypoint: list[str], command: list[str]) -> argparse.Namespace:
    """What `sandbox serve` makes of a container's entrypoint and command (exits 2 on anything it refuses)."""
    assert entrypoint[:2] == ["sandbox", "serve"], entrypoint
    args = _parser().parse_args([*entrypoint[1:], *command])
    assert forwarded_ips_of(args.forwarded_allow_ips) is not None, "the sandbox sits behind a proxy"
    return args


def _dockerfile() -> dict[str, list[str]]:
    """Each instruction of deploy/Dockerfile (continuation lines joined), its arguments."""
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            instruction, _, rest = line.strip().partition(" ")
            found.setdefault(instruction, []).append(rest.strip())
    return found


def _exec_form(value: str) -> list[str]:
    words = json.loads(value)
    assert isinstance(words, list) and all(isinstance(word, str) for word in words), value
    return words


def test_the_container_runs_sandbox_serve_on_all_its_interfaces_with_a_shared_store() -> None:
    docker = _dockerfile()
    assert docker["FROM"][0].startswith("python:3.")
    for copied in docker["COPY"]:
        for source in shlex.split(copied)[:-1]:
            assert (ROOT / source).exists(), f"COPY {source}: no such path in the repository"
    assert docker["USER"] == ["sandbox"]
    args = _serve_args(_exec_form(docker["ENTRYPOINT"][0]), _exec_form(docker["CMD"][0]))
    assert (args.host, args.port) == ("0.0.0.0", 8765)
    assert args.workers > 1 and args.store.startswith("redis://")


def _compose() -> dict[str, Any]:
    compose: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return compose


def test_compose_puts_nginx_in_front_of_the_sandbox_and_redis_behind_it() -> None:
    compose = _compose()
    services = compose["services"]
    assert set(services) == {"proxy", "sandbox", "redis"}
    published = [name for name, service in services.items() if service.get("ports")]
    assert published == ["proxy"], "learners reach the sandbox through the proxy alone"
    docker = _dockerfile()
    sandbox = services["sandbox"]
    context = (DEPLOY / sandbox["build"]["context"]).resolve()
    assert context == ROOT and (context / sandbox["build"]["dockerfile"]) == DEPLOY / "Dockerfile"
    args = _serve_args(_exec_form(docker["ENTRYPOINT"][0]), sandbox["command"])
    assert args.store == "redis://redis:6379/0" and "redis" in services
    subnet = compose["networks"]["backend"]["ipam"]["config"][0]["subnet"]
    assert args.forwarded_allow_ips == subnet, "the sandbox believes X-Forwarded-For from the proxy's network only"
    mounted = services["proxy"]["volumes"][0].split(":")
    assert (DEPLOY / mounted[0]).resolve() == DEPLOY / "nginx.conf"
    assert mounted[1] == "/etc/nginx/conf.d/default.conf"
    redis = services["redis"]["command"]
    assert redis[:5] == ["redis-server", "--save", "", "--appendonly", "no"]
    assert redis[redis.index("--maxmemory-policy") + 1] == "noeviction", "only the sandbox evicts its keys"


def _manifest() -> dict[tuple[str, str], dict[str, Any]]:
    documents = list(yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text()))
    return {(document["kind"], document["metadata"]["name"]): document for document in documents}


def test_the_kubernetes_manifest_has_redis_the_sandbox_and_their_services() -> None:
    manifest = _manifest()
    needed = {("Deployment", "sandbox"), ("Service", "sandbox"), ("Deployment", "sandbox-redis"), ("Service", "redis")}
    assert needed <= set(manifest)
    for kind, name in manifest:
        if kind == "Deployment":
            spec = manifest[kind, name]["spec"]
            assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    deployment = manifest["Deployment", "sandbox"]["spec"]
    assert deployment["replicas"] >= 2
    container = deployment["template"]["spec"]["containers"][0]
    docker = _dockerfile()
    args = _serve_args(_exec_form(docker["ENTRYPOINT"][0]), container["args"])
    redis_service = manifest["Service", "redis"]
    assert args.store == f"redis://{redis_service['metadata']['name']}:{redis_service['spec']['ports'][0]['port']}/0"
    redis = manifest["Deployment", "sandbox-redis"]["spec"]
    assert redis_service["spec"]["selector"] == redis["selector"]["matchLabels"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    assert container["ports"][0]["containerPort"] == args.port == 8765
    service = manifest["Service", "sandbox"]["spec"]
    assert service["selector"] == deployment["selector"]["matchLabels"]
    assert service["ports"][0]["targetPort"] == container["ports"][0]["name"]
    grace = deployment["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace > 5, "Kubernetes must give the sandbox's 5 s shutdown grace time to run"


def test_nginx_accepts_the_deployed_site(tmp_path: Path) -> None:
    nginx = proxy_binary("nginx")
    conf = tmp_path / "nginx.conf"
    conf.write_text(nginx_conf(tmp_path, 8080, ["127.0.0.1:8765", "127.0.0.1:8766"]))
    checked = subprocess.run(
        [nginx, "-t", "-p", str(tmp_path), "-c", str(conf), "-e", str(tmp_path / "error.log")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stderr
    site = (DEPLOY / "nginx.conf").read_text()
    assert 'proxy_set_header X-Forwarded-For "$remote_addr:$remote_port";' in site
    assert "proxy_buffering off;" in site and "client_max_body_size 4m;" in site


def test_haproxy_accepts_the_documented_config_without_a_warning(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "deploy" / "proxy.md").read_text()
    blocks = re.findall(r"^```\n(defaults\n.*?)^```", page, re.DOTALL | re.MULTILINE)
    assert len(blocks) == 1, "docs/deploy/proxy.md shows one HAProxy configuration"
    haproxy = proxy_binary("haproxy")
    config = tmp_path / "haproxy.cfg"
    config.write_text(blocks[0])
    checked = subprocess.run([haproxy, "-c", "-f", str(config)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and "WARNING" not in checked.stderr + checked.stdout, checked.stderr
    assert "http-request set-header X-Forwarded-For %[src]:%[src_port]" in blocks[0]
