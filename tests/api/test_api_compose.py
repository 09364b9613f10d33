"""docker-compose.yml against the compose specification's JSON schema (vendored beside
this file), plus what the service needs from it: volumes, memory limit, healthcheck,
migrations before the server, the WRDS profile; the Dockerfile installs the wheel it builds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = Path(__file__).with_name("compose-spec.json")


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_file_matches_the_specification() -> None:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(_compose()), key=str)
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_the_schema_rejects_a_broken_file() -> None:
    """The vendored schema is strict enough to catch mistakes (it can fail)."""
    schema = json.loads(SCHEMA.read_text())
    broken = _compose()
    broken["services"]["proforma"]["healthcheck"]["intervall"] = "5s"
    broken["services"]["proforma"]["ports"] = "8000:8000"
    errors = list(jsonschema.Draft7Validator(schema).iter_errors(broken))
    assert len(errors) >= 2


def test_demo_service_essentials() -> None:
    svc = _compose()["services"]["proforma"]
    mounts = {v.split(":")[1] for v in svc["volumes"]}
    assert mounts == {"/data", "/duckdb-tmp", "/backups"}
    assert svc["mem_limit"] and svc["healthcheck"]["test"][0] == "CMD"
    assert "/api/v1/health" in " ".join(svc["healthcheck"]["test"])
    command = " ".join(svc["command"])
    assert command.index("proforma migrate") < command.index("proforma demo")
    assert svc["ports"] == ["127.0.0.1:${PROFORMA_PORT:-8000}:8000"]  # loopback only
    assert "profiles" not in svc


def test_wrds_profile() -> None:
    services = _compose()["services"]
    ingest, serve = services["wrds-ingest"], services["wrds-serve"]
    assert ingest["profiles"] == ["wrds"] and serve["profiles"] == ["wrds"]
    assert "proforma ingest wrds" in " ".join(ingest["command"])
    assert serve["depends_on"]["wrds-ingest"]["condition"] == "service_completed_successfully"
    # the WRDS warehouse never shares a volume with the synthetic demo
    assert {v.split(":")[0] for v in ingest["volumes"]}.isdisjoint(
        {v.split(":")[0] for v in services["proforma"]["volumes"]}
    )


def test_dockerfile_installs_the_wheel_it_builds_from_the_context() -> None:
    """No list of folders to keep in step: the whole context goes to the wheel stage, and
    the service is the installed wheel (tests/packaging checks the context itself)."""
    text = (ROOT / "Dockerfile").read_text()
    copies = re.findall(r"(?m)^COPY\s+(?!--from)(.+)$", text)
    assert copies == [". ."], copies
    assert "pip wheel" in text and "COPY --from=wheel" in text and "proforma migrate" in text
    assert (
        "VOLUME" in text and "/duckdb-tmp" in text and "PROFORMA_TEMP_DIRECTORY=/duckdb-tmp" in text
    )


def _compose_check():
    import importlib.util

    spec = importlib.util.spec_from_file_location("compose_check", ROOT / "bench/compose_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_compose_check_is_skipped_with_its_reason_without_a_daemon() -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench/compose_check.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("skipped: ") and "docker" in result.stdout


def test_compose_check_finds_the_debian_mirror_in_either_source_format(tmp_path) -> None:
    deb822 = tmp_path / "debian.sources"
    deb822.write_text(
        "Types: deb\nURIs: http://security.example/debian-security\n\n"
        "Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm\n"
    )
    classic = tmp_path / "sources.list"
    classic.write_text("# comment\ndeb [arch=amd64] http://old.example/debian bookworm main\n")
    check = _compose_check()
    assert check.debian_mirror([deb822]) == "http://mirror.example/debian"
    assert check.debian_mirror([classic]) == "http://old.example/debian"


def test_the_deployment_around_the_service() -> None:
    """Everything that must survive lies in a named volume; the proxy terminates TLS
    (Debian's nginx, configured in deploy/proxy) in front of the service; every service
    has resource limits; the backup service asks the server, verifies and prunes."""
    compose = _compose()
    services, named = compose["services"], set(compose["volumes"])
    for name in ("proforma", "proxy", "backup"):
        svc = services[name]
        assert svc["mem_limit"] and svc["cpus"] and svc["pids_limit"], name
        for volume in svc["volumes"]:
            assert volume.split(":")[0] in named, (name, volume)  # no bind mount
    proxy = services["proxy"]
    assert proxy["build"]["context"] == "deploy/proxy"
    assert {p.split(":")[-1] for p in proxy["ports"]} == {"443", "80"}
    assert proxy["volumes"] == ["tls:/etc/proforma/tls"]
    assert "https://" in " ".join(proxy["healthcheck"]["test"])
    conf = (ROOT / "deploy/proxy/nginx.conf.in").read_text()
    assert "listen 443 ssl" in conf and "proxy_pass http://proforma;" in conf
    assert "return 301 https://" in conf and "ssl_certificate " in conf
    assert re.search(r"location /api/v1/backups \{\s*deny all;", conf)
    dockerfile = (ROOT / "deploy/proxy/Dockerfile").read_text()
    assert "apt-get install" in dockerfile and " nginx " in dockerfile
    backup = services["backup"]
    script = " ".join(backup["command"])
    assert "proforma backup" in script and "--server http://proforma:8000" in script
    assert "proforma backup --verify" in script and "PROFORMA_BACKUP_KEEP" in script
    assert {v.split(":")[0] for v in backup["volumes"]} == {"warehouse", "backups"}
    assert "warehouse:/data:ro" in backup["volumes"]
    assert backup["depends_on"] == ["proforma"] and "/api/v1/health" in script
    # the server writes backups where the backup service finds them
    assert "backups:/backups" in services["proforma"]["volumes"]
