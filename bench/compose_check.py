"""`docker compose up` verified end to end on this machine, with timings.

    .venv/bin/python bench/compose_check.py [--base IMAGE] [--wheels DIR] [--keep] [--quick]

1. builds a Debian bookworm base image locally when no --base is given (debootstrap from
   this machine's Debian mirror, `docker import`: no registry needed), with python3,
   python3-venv, make and this machine's CA bundle (pip reaches the index as the host
   does);
2. builds the image on it (`docker build`, the Dockerfile's BASE_IMAGE and
   TORCH_FIND_LINKS arguments; the CPU torch wheel comes from --wheels, default pip's
   find-links folder, served over loopback HTTP for the build);
   and the TLS proxy's image (deploy/proxy: Debian's nginx on the same base);
3. `docker compose up -d` (or docker-compose 1.29): the service, the proxy and the backup
   service; waits until /api/v1/health answers (the demo runs inside first), then until
   it answers through the proxy over HTTPS, checked against the proxy's own (first
   start: self-signed) certificate; checks that plain HTTP redirects to HTTPS, that
   /metrics parses as Prometheus text, and that backups cannot be asked for from
   outside; waits for the backup service's first backup and verifies it in its
   container; takes a headless-Chromium screenshot of the page, and runs `proforma
   leaderboard` in the container beside the server (it reads the board through the
   running server);
4. stops the service, creates an admin with `proforma users add` (the server is the
   warehouse's only writer), starts it again, uploads one submission THROUGH THE PROXY
   (HTTPS) on cells the public SQL console lists, freezes a footprint on it and waits
   until that footprint's leaderboard ranks the upload;
5. takes everything down (volumes and images too, unless --keep).

--quick keeps the image, the compose file, its volumes, healthcheck and every check, but
overrides the service's command (a second compose file): instead of the whole demo
(half an hour of CPU, Forma's training the most of it) the container runs migrate, a
60-firm synthetic ingest, build, the reference baselines, the oracle, score, the oracle
footprint, report, then serves; for a machine too loaded to run the demo in time.

Prints each stage's wall time and the container's CPU-seconds. Where no docker daemon
(or no compose) answers it prints `skipped: <reason>` and exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGE = "proforma20q:latest"
PROXY_IMAGE = "proforma20q-proxy:latest"
LOCAL_BASE = "proforma-debian-base:bookworm"
PROJECT = "proforma-check"
BASE_PACKAGES = "python3,python3-venv,make,ca-certificates"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, text=True, **kw)


def ok(cmd: list[str], env: dict | None = None) -> bool:
    try:
        result = subprocess.run(cmd, check=False, capture_output=True, timeout=60, env=env)
        return result.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def compose_command() -> list[str] | None:
    """`docker compose` (v2) where installed, else docker-compose 1.29."""
    if ok(["docker", "compose", "version"]):
        return ["docker", "compose"]
    if shutil.which("docker-compose") and ok(["docker-compose", "version"]):
        return ["docker-compose"]
    return None


def why_skipped() -> str | None:
    if shutil.which("docker") is None:
        return "no docker command on this machine"
    if not ok(["docker", "info"]):
        return "no docker daemon answers (start dockerd, or set DOCKER_HOST)"
    if compose_command() is None:
        return "neither `docker compose` nor docker-compose is installed"
    return None


def debian_mirror(sources: list[Path] | None = None) -> str:
    """The Debian mirror this machine's apt uses (not the security one), from one-line
    (`deb URL suite`) or deb822 (`URIs: URL`) source files."""
    if sources is None:
        sources = [
            Path("/etc/apt/sources.list"),
            *sorted(Path("/etc/apt/sources.list.d").glob("*")),
        ]
    for path in sources:
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        for url in re.findall(r"(?m)^(?:URIs:\s*|deb\s+(?:\[[^]]*\]\s+)?)(\S+)", text):
            if "security" not in url:
                return url.rstrip("/")
    return "http://deb.debian.org/debian"


def build_base(mirror: str) -> float:
    """A minimal bookworm root file system imported as LOCAL_BASE; returns seconds."""
    started = time.perf_counter()
    folder = Path(tempfile.mkdtemp(prefix="proforma-base-"))
    try:
        log(f"debootstrap bookworm from {mirror} into {folder} ...")
        run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={BASE_PACKAGES}",
                "bookworm",
                str(folder),
                mirror,
            ],
            stdout=subprocess.DEVNULL,
        )
        shutil.rmtree(folder / "var/cache/apt/archives", ignore_errors=True)
        # This machine's trust store: HTTPS to the package index may pass a proxy whose CA
        # only the host trusts; pip reads PIP_CERT (its own bundle would refuse the proxy).
        shutil.copyfile(HOST_CA_BUNDLE, folder / HOST_CA_BUNDLE.relative_to("/"))
        tar = subprocess.Popen(["tar", "-C", str(folder), "-c", "."], stdout=subprocess.PIPE)
        run(
            ["docker", "import", "--change", f"ENV PIP_CERT={HOST_CA_BUNDLE}", "-", LOCAL_BASE],
            stdin=tar.stdout,
            stdout=subprocess.DEVNULL,
        )
        if tar.wait() != 0:
            raise RuntimeError("tar of the base file system failed")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return time.perf_counter() - started


def pip_find_links() -> Path | None:
    """The folder pip's configuration points find-links at (where the CPU wheel lies)."""
    candidates = [os.environ.get("PIP_FIND_LINKS", "")]
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        out = run([sys.executable, "-m", "pip", "config", "list"], capture_output=True).stdout
        candidates += re.findall(r"find-links='([^']+)'", out)
    for value in candidates:
        for part in value.split():
            path = Path(part.removeprefix("file://"))
            if path.is_dir() and list(path.glob("torch-2.13.0*.whl")):
                return path
    return None


@contextlib.contextmanager
def serve_folder(folder: Path) -> Iterator[str]:
    """The folder over HTTP on loopback (a build with --network host reaches it)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()


def free_port(preferred: int = 8000) -> int:
    for port in (preferred, 0):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise RuntimeError("no free port")


#: --quick: the service's command in a second compose file (once per volume, then serve).
QUICK_PIPELINE = (
    "test -f /data/quick-pipeline.done || { proforma migrate"
    " && proforma ingest synthetic --firms 60 --oracle-origins 20"
    " && proforma build && proforma baselines reference && proforma oracle && proforma score"
    " && proforma footprint create oracle --from oracle && proforma score -f oracle"
    " && proforma report --no-figure2 && touch /data/quick-pipeline.done; }"
    " && exec proforma serve --host 0.0.0.0 --port 8000"
)


class Compose:
    def __init__(self, port: int, quick: bool = False):
        files: list[str] = []
        if quick:
            override = Path(tempfile.mkdtemp(prefix="compose-quick-")) / "quick.yml"
            override.write_text(
                json.dumps({"services": {"proforma": {"command": ["sh", "-c", QUICK_PIPELINE]}}})
            )
            files = ["-f", str(ROOT / "docker-compose.yml"), "-f", str(override)]
        self.cmd = [*compose_command(), "-p", PROJECT, *files]  # type: ignore[misc]
        self.https_port = free_port(8443)
        self.http_port = free_port(8080)
        self.env = {
            **os.environ,
            "PROFORMA_PORT": str(port),
            "PROFORMA_HTTPS_PORT": str(self.https_port),
            "PROFORMA_HTTP_PORT": str(self.http_port),
            "PROFORMA_DOMAIN": "localhost",
        }

    def __call__(self, *args: str, capture: bool = False) -> str:
        result = subprocess.run(
            [*self.cmd, *args],
            cwd=ROOT,
            env=self.env,
            check=True,
            text=True,
            capture_output=capture,
        )
        return result.stdout if capture else ""

    def container(self, service: str = "proforma") -> str:
        return self("ps", "-q", service, capture=True).strip()


def container_cpu_s(container: str) -> float | None:
    """CPU-seconds the container has used (cgroup v1 cpuacct, or v2 cpu.stat)."""
    for path, scale in (
        (f"/sys/fs/cgroup/cpuacct/docker/{container}/cpuacct.usage", 1e-9),
        (f"/sys/fs/cgroup/system.slice/docker-{container}.scope/cpu.stat", 1e-6),
    ):
        with contextlib.suppress(OSError, ValueError):
            text = Path(path).read_text()
            value = text.split()[1] if text.startswith("usage_usec") else text.split()[0]
            return float(value) * scale
    return None


def wait_healthy(base: str, compose: Compose, timeout_s: float, verify: str | bool = True) -> float:
    import httpx

    started = time.perf_counter()
    last = ""
    while time.perf_counter() - started < timeout_s:
        with contextlib.suppress(httpx.HTTPError):
            answer = httpx.get(f"{base}/api/v1/health", timeout=5, verify=verify)
            if answer.status_code == 200:
                return time.perf_counter() - started
        tail = subprocess.run(
            ["docker", "logs", "--tail", "1", compose.container()],
            check=False,
            capture_output=True,
            text=True,
        ).stdout.strip()
        if tail and tail != last:
            log(f"  [{time.perf_counter() - started:5.0f}s] {tail[:150]}")
            last = tail
        time.sleep(10)
    raise TimeoutError(f"no healthy service at {base} after {timeout_s:.0f}s")


def screenshot(url: str, out: Path, window: str = "1400,1700", budget_ms: int = 15000) -> None:
    """A headless-Chromium picture of `url` (a `window` of width,height pixels, the page
    given `budget_ms` of virtual time to draw its charts); bench/demo_screenshots.py too."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        run(
            [
                "chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--window-size={window}",
                f"--virtual-time-budget={budget_ms}",
                f"--screenshot={out}",
                url,
            ],
            capture_output=True,
            timeout=180,
        )


def upload_one(base: str, token: str, verify: str | bool = True) -> dict:
    """One submission on cells the public console lists; a footprint frozen on it; its
    leaderboard once scored (`verify`: the CA file the HTTPS answers are checked with)."""
    import httpx
    import pyarrow as pa
    import pyarrow.parquet as pq

    client = httpx.Client(verify=verify)

    auth = {"Authorization": f"Bearer {token}"}
    cells = client.post(
        f"{base}/api/v1/query",
        timeout=60,
        json={
            "sql": (
                "SELECT c.gvkey, c.origin, c.item, c.horizon FROM footprint_cells c JOIN footprints f "
                "USING (footprint_id) WHERE f.name = 'oracle' ORDER BY ALL LIMIT 2000"
            )
        },
    ).json()
    rows = cells["rows"]
    table = pa.table(
        {
            "firm": [r[0] for r in rows],
            "target": [r[2] for r in rows],
            "origin": [r[1] for r in rows],
            "horizon": [int(r[3]) for r in rows],
            "prediction": [0.0] * len(rows),
            "sigma": [1.0] * len(rows),
        }
    )
    buf = io.BytesIO()
    pq.write_table(table, buf)
    started = time.perf_counter()
    job = client.post(
        f"{base}/api/v1/submissions",
        headers=auth,
        timeout=120,
        data={
            "name": "compose check (level 0)",
            "training_cutoff": "2009Q4",
            "leakage_statement": "no training: every prediction is the standardized level 0",
        },
        files={"file": ("check.parquet", buf.getvalue(), "application/octet-stream")},
    ).json()
    while True:
        state = client.get(f"{base}/api/v1/jobs/{job['job_id']}", headers=auth, timeout=30).json()
        if state["status"] in ("done", "failed"):
            break
        time.sleep(3)
    if state["status"] != "done":
        raise RuntimeError(f"upload failed: {state['message']}")
    scored_s = time.perf_counter() - started
    created = client.post(
        f"{base}/api/v1/footprints",
        headers=auth,
        timeout=60,
        json={
            "name": "compose-check",
            "submissions": [state["submission_id"]],
            "description": "cells of the compose check's upload",
        },
    )
    created.raise_for_status()
    board: dict = {}
    for _ in range(120):
        answer = client.get(f"{base}/api/v1/leaderboards/compose-check", timeout=30)
        if answer.status_code == 200:
            board = answer.json()
            if any(r["model"] == "compose check (level 0)" for r in board["rows"]):
                break
        time.sleep(5)
    return {
        "cells": len(rows),
        "job": state["job_id"],
        "submission": state["submission_id"],
        "upload_to_done_s": scored_s,
        "leaderboard_rows": len(board.get("rows", [])),
    }


def proxy_certificate(compose: Compose) -> Path:
    """The proxy's certificate (self-signed on a first start), to check HTTPS against."""
    pem = compose("exec", "-T", "proxy", "cat", "/etc/proforma/tls/fullchain.pem", capture=True)
    path = Path(tempfile.mkdtemp(prefix="compose-tls-")) / "fullchain.pem"
    path.write_text(pem)
    return path


def check_proxy(compose: Compose, https: str, cert: Path) -> dict:
    """Plain HTTP redirects to HTTPS; /metrics answers in the Prometheus text format
    (from this machine: a private address); backups cannot be asked for from outside."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    plain = httpx.get(
        f"http://localhost:{compose.http_port}/api/v1/health", follow_redirects=False, timeout=10
    )
    if plain.status_code != 301 or not plain.headers["location"].startswith("https://"):
        raise RuntimeError(f"port 80 does not redirect to HTTPS: {plain.status_code}")
    metrics = httpx.get(f"{https}/metrics", verify=str(cert), timeout=30)
    metrics.raise_for_status()
    families = {f.name for f in text_string_to_metric_families(metrics.text)}
    backups = httpx.post(
        f"{https}/api/v1/backups", json={"folder": "/backups/x"}, verify=str(cert), timeout=30
    )
    if backups.status_code != 403:
        raise RuntimeError(f"POST /api/v1/backups from outside answered {backups.status_code}")
    return {
        "http_redirect": plain.headers["location"],
        "metric_families": len(families),
        "backups_from_outside": backups.status_code,
    }


def first_backup(compose: Compose, timeout_s: float) -> tuple[str, float, str]:
    """The backup service's first backup (it runs once the service is healthy), verified
    inside that container: (its folder, seconds waited, the verification line)."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout_s:
        found = subprocess.run(
            [*compose.cmd, "exec", "-T", "backup", "sh", "-c", "ls -1d /backups/2*Z 2>/dev/null"],
            cwd=ROOT,
            env=compose.env,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.split()
        if found:
            waited = time.perf_counter() - started
            checked = subprocess.run(
                [*compose.cmd, "exec", "-T", "backup", "proforma", "backup", "--verify", found[0]],
                cwd=ROOT,
                env=compose.env,
                capture_output=True,
                text=True,
                check=True,
            )
            return found[0], waited, checked.stderr.strip().splitlines()[-1]
        time.sleep(5)
    raise TimeoutError(f"no backup in the backups volume after {timeout_s:.0f}s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help=f"base image (default: {LOCAL_BASE}, built if missing)")
    parser.add_argument("--mirror", help="Debian mirror for the local base (default: apt's)")
    parser.add_argument("--wheels", type=Path, help="folder with the CPU torch wheel")
    parser.add_argument(
        "--screenshot", type=Path, default=ROOT / "docs/img/compose-leaderboard.png"
    )
    parser.add_argument("--timeout-min", type=float, default=90)
    parser.add_argument("--keep", action="store_true", help="leave containers and images")
    parser.add_argument(
        "--quick", action="store_true", help="a 60-firm pipeline instead of the whole demo"
    )
    args = parser.parse_args()

    reason = why_skipped()
    if reason:
        print(f"skipped: {reason}")
        return 0
    times: dict[str, float] = {}
    base = args.base or LOCAL_BASE
    compose = Compose(free_port(), quick=args.quick)
    url = f"http://127.0.0.1:{compose.env['PROFORMA_PORT']}"
    try:
        if not args.base and not ok(["docker", "image", "inspect", LOCAL_BASE]):
            times["base image (debootstrap)"] = build_base(args.mirror or debian_mirror())
        wheels = args.wheels or pip_find_links()
        build = [
            "docker",
            "build",
            "--network",
            "host",
            "-t",
            IMAGE,
            "--build-arg",
            f"BASE_IMAGE={base}",
        ]
        with contextlib.ExitStack() as stack:
            if wheels is not None:
                served = stack.enter_context(serve_folder(wheels))
                build += ["--build-arg", f"TORCH_FIND_LINKS={served}"]
                log(f"torch from {wheels} (served at {served})")
            started = time.perf_counter()
            run([*build, str(ROOT)])
            times["image build"] = time.perf_counter() - started
        started = time.perf_counter()
        run(
            [
                "docker",
                "build",
                "--network",
                "host",
                "-t",
                PROXY_IMAGE,
                "--build-arg",
                f"BASE_IMAGE={base}",
                str(ROOT / "deploy/proxy"),
            ]
        )
        times["proxy image build"] = time.perf_counter() - started
        started = time.perf_counter()
        compose("up", "-d", "--no-build")
        inside = "quick pipeline" if args.quick else "demo"
        times[f"compose up to healthy ({inside} inside)"] = wait_healthy(
            url, compose, args.timeout_min * 60
        )
        cpu = container_cpu_s(compose.container())
        cert = proxy_certificate(compose)
        https = f"https://localhost:{compose.https_port}"
        times["proxy healthy over HTTPS"] = wait_healthy(https, compose, 300, verify=str(cert))
        proxy = check_proxy(compose, https, cert)
        backup_dir, backup_wait, verified = first_backup(compose, 600)
        times["first backup (backup service)"] = backup_wait
        log(f"backup service: {backup_dir}: {verified}")
        screenshot(url + "/", args.screenshot)
        log(f"screenshot: {args.screenshot}")
        board = compose(
            "exec", "-T", "proforma", "proforma", "leaderboard", "-f", "full", capture=True
        )
        board_rows = sum(1 for line in board.splitlines() if line.startswith("│"))
        log(board)
        compose("stop", "proforma")
        out = compose(
            "run",
            "--rm",
            "-T",
            "--no-deps",
            "proforma",
            "proforma",
            "users",
            "add",
            "compose-check",
            "--admin",
            capture=True,
        )
        token = re.search(r"(pf_[0-9a-f]{12}\.\S+)", out)
        if token is None:
            raise RuntimeError(f"no token in: {out}")
        started = time.perf_counter()
        compose("up", "-d", "--no-build")
        times["restart to healthy"] = wait_healthy(url, compose, args.timeout_min * 60)
        result = upload_one(https, token.group(1), verify=str(cert))  # through the proxy
        times["upload to scored (HTTPS)"] = result["upload_to_done_s"]
        print(
            json.dumps(
                {
                    "times_s": {k: round(v, 1) for k, v in times.items()},
                    "container_cpu_s_at_first_health": cpu and round(cpu, 1),
                    "leaderboard_rows_beside_the_server": board_rows,
                    "proxy": proxy,
                    "backup": {"folder": backup_dir, "verify": verified},
                    "upload_through_https": result,
                },
                indent=1,
            )
        )
        print("done: " + "; ".join(f"{k} {v:.0f}s" for k, v in times.items()))
        return 0
    finally:
        if not args.keep:
            with contextlib.suppress(subprocess.CalledProcessError):
                compose("down", "-v", "--remove-orphans")
            for image in (IMAGE, PROXY_IMAGE, *(() if args.base else (LOCAL_BASE,))):
                subprocess.run(
                    ["docker", "image", "rm", "-f", image], check=False, capture_output=True
                )


if __name__ == "__main__":
    sys.exit(main())
