"""A real headless Chromium (Debian's chromium + chromium-driver) against a real server:
load the leaderboard, switch footprint, upload a file through the form, see the new row.

`make test` installs the browser when /usr/bin/chromium is missing and sets
PROFORMA_REQUIRE_BROWSER=1, so in CI a missing browser fails instead of skipping.
Screenshots go to PROFORMA_SCREENSHOT_DIR (default: the test's tmp folder).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from service_helpers import submission_bytes

from proforma.app.api.auth import add_user
from proforma.app.server.main import create_app
from proforma.app.store.settings import Settings

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
REQUIRED = os.environ.get("PROFORMA_REQUIRE_BROWSER") == "1"

if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
    if REQUIRED:
        raise RuntimeError(
            "PROFORMA_REQUIRE_BROWSER=1 but /usr/bin/chromium or /usr/bin/chromedriver is missing: "
            "install Debian's chromium and chromium-driver (make test does)."
        )
    pytest.skip("no /usr/bin/chromium (make test installs it)", allow_module_level=True)

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1800",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(panel: Settings) -> Iterator[tuple[str, str, object]]:
    """uvicorn with the app on a free loopback port, in a thread; yields (url, token, app)."""
    app = create_app(panel)
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/api/v1/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    else:
        raise AssertionError("server did not start")
    wh = app.state.wh.cursor()
    _, token = add_user(wh, "browser")
    wh.close()
    try:
        yield base, token, app
    finally:
        srv.should_exit = True
        thread.join(30)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[object]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS + [f"--user-data-dir={tmp_path / 'chrome-profile'}"]:
        options.add_argument(flag)
    # the console, where a failed request of the page is logged
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("PROFORMA_SCREENSHOT_DIR") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _models(driver) -> list[str]:
    return [a.text for a in driver.find_elements(By.CSS_SELECTOR, "#leaderboard tbody td.text a")]


def test_leaderboard_switch_upload_new_row(server, browser, tmp_path: Path) -> None:
    base, token, app = server
    shots = _shots(tmp_path)
    wh = app.state.wh.cursor()
    first, second = submission_bytes(wh, seed=1, noise=0.2), submission_bytes(wh, seed=2, noise=0.4)
    wh.close()
    # a first model through the API, so the leaderboard has rows
    r = httpx.post(
        f"{base}/api/v1/submissions",
        headers={"Authorization": f"Bearer {token}"},
        data={"name": "api-model", "training_cutoff": "2009Q4", "leakage_statement": "none"},
        files={"file": ("a.parquet", first)},
        timeout=30,
    )
    assert r.status_code == 202, r.text
    job_url = f"{base}{r.json()['status_url']}"
    for _ in range(300):
        if (
            httpx.get(job_url, headers={"Authorization": f"Bearer {token}"}).json()["status"]
            == "done"
        ):
            break
        time.sleep(0.1)

    wait = WebDriverWait(browser, 60)
    browser.get(f"{base}/")
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#leaderboard tbody tr")))
    assert "api-model" in _models(browser)
    assert "sql/eval" in browser.find_element(By.ID, "eval-version").text
    # the charts were drawn by the page's own JS (SVG polylines, one per model)
    assert browser.find_elements(By.CSS_SELECTOR, "#chart-r2 polyline")
    assert browser.find_elements(By.CSS_SELECTOR, "#chart-coverage circle")
    # an upload's PIT histogram is not public (docs/service.md, "The truth: threat model")
    assert not browser.find_elements(By.CSS_SELECTOR, "#chart-pit rect")
    assert "not an upload's" in browser.find_element(By.ID, "pit-none").text
    browser.save_screenshot(str(shots / "leaderboard.png"))

    # switch footprint: the page reloads on the geert footprint
    Select(browser.find_element(By.ID, "footprint")).select_by_value("geert")
    wait.until(ec.url_contains("footprint=geert"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "provenance"), "geert"))
    assert "api-model" in _models(browser)
    Select(browser.find_element(By.ID, "track")).select_by_value("density")
    wait.until(ec.url_contains("track=density"))

    # upload through the form; the page follows the job to done
    path = tmp_path / "browser.parquet"
    path.write_bytes(second)
    browser.get(f"{base}/upload")
    browser.find_element(By.ID, "token").send_keys(token)
    browser.find_element(By.ID, "file").send_keys(str(path))
    browser.find_element(By.ID, "name").send_keys("browser-model")
    browser.find_element(By.ID, "training_cutoff").send_keys("2009Q4")
    browser.find_element(By.ID, "leakage_statement").send_keys("none: trained on 1971-2009 only")
    browser.find_element(By.ID, "upload-button").click()
    WebDriverWait(browser, 120).until(
        ec.text_to_be_present_in_element((By.ID, "job-status"), "done")
    )
    browser.save_screenshot(str(shots / "upload.png"))

    # the new row is on the leaderboard
    browser.find_element(By.ID, "leaderboard-link").click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#leaderboard tbody tr")))
    assert {"api-model", "browser-model"} <= set(_models(browser))
    browser.save_screenshot(str(shots / "leaderboard-after-upload.png"))

    # a bad upload shows the API's specific message in the page
    browser.get(f"{base}/upload")
    browser.find_element(By.ID, "file").send_keys(str(path))
    browser.find_element(By.ID, "name").send_keys("browser-model")
    browser.find_element(By.ID, "training_cutoff").send_keys("2009Q4")
    browser.find_element(By.ID, "leakage_statement").send_keys("none")
    browser.find_element(By.ID, "upload-button").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "upload-error"), "409"))
    assert "exists already" in browser.find_element(By.ID, "upload-error").text

    # the SQL console runs a query and shows a rejected one's message
    browser.get(f"{base}/query")
    browser.find_element(By.ID, "run-query").click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#query-result table")))
    assert "browser-model" in browser.find_element(By.ID, "query-result").text
    browser.save_screenshot(str(shots / "query.png"))
    sql = browser.find_element(By.ID, "sql")
    sql.clear()
    sql.send_keys("SELECT * FROM read_csv('/etc/passwd')")
    browser.find_element(By.ID, "run-query").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "query-error"), "not allowed"))

    # the submission page has per-horizon and per-item tables
    browser.get(f"{base}/")
    browser.find_element(By.LINK_TEXT, "browser-model").click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "table.by-horizon tbody tr")))
    assert len(browser.find_elements(By.CSS_SELECTOR, "table.by-horizon tbody tr")) >= 20
    assert browser.find_elements(By.CSS_SELECTOR, "table.by-item tbody tr")
    browser.save_screenshot(str(shots / "submission.png"))
    assert (shots / "leaderboard.png").stat().st_size > 10_000


#: Every request of the page: the document, its scripts, stylesheets and images, with the
#: HTTP status (0 for a request that never got an answer, or one from file://).
_REQUESTS = """
return performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))
  .map(e => [e.name, e.initiatorType, e.responseStatus]);
"""
_IMAGES = (
    "return [...document.images].map(i => [i.currentSrc || i.src, i.complete, i.naturalWidth]);"
)


def _check_page(driver, url: str) -> dict[str, int]:
    """Load `url`; every image drawn (a natural width), no request failed, nothing about a
    failed resource on the console. Returns what it loaded: kind -> count."""
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get(url)
    WebDriverWait(driver, 60).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )
    images = driver.execute_script(_IMAGES)
    broken = [src for src, complete, width in images if not (complete and width > 0)]
    assert not broken, f"{url}: images not drawn: {broken}"
    requests = driver.execute_script(_REQUESTS)
    served = url.startswith("http")
    failed = [(name, status) for name, _, status in requests if served and not 200 <= status < 400]
    assert not failed, f"{url}: failed requests: {failed}"
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not [e for e in errors if "Failed to load resource" in e], f"{url}: {errors}"
    kinds: dict[str, int] = {}
    for _, kind, _ in requests:
        kinds[kind] = kinds.get(kind, 0) + 1
    kinds["img"] = len(images)
    return kinds


def test_every_page_loads_its_images_scripts_and_styles(server, browser, tmp_path: Path) -> None:
    """/, /report (served and opened as a file), /submissions/N, /upload, /query and /rounds: each
    image has a natural width and no request of the page fails; at 1,400 px the
    leaderboard table fits the page (no sideways scrolling)."""
    from proforma.app.report import write_report

    base, token, app = server
    wh = app.state.wh.cursor()
    upload = submission_bytes(wh, seed=3, noise=0.3)
    wh.close()
    r = httpx.post(
        f"{base}/api/v1/submissions",
        headers={"Authorization": f"Bearer {token}"},
        data={
            "name": "a model with a rather long descriptive name (seed 3)",
            "training_cutoff": "2009Q4",
            "leakage_statement": "none",
        },
        files={"file": ("a.parquet", upload)},
        timeout=30,
    )
    assert r.status_code == 202, r.text
    job_url = f"{base}{r.json()['status_url']}"
    for _ in range(600):
        job = httpx.get(job_url, headers={"Authorization": f"Bearer {token}"}).json()
        if job["status"] in ("done", "failed"):
            break
        time.sleep(0.1)
    assert job["status"] == "done", job
    folder = app.state.settings.report_dir
    wh = app.state.wh.cursor()
    try:
        result = write_report(wh, folder, figure2=False, log=lambda _: None)
    finally:
        wh.close()
    pngs = sorted(p.name for p in folder.glob("*.png"))
    assert pngs, result

    browser.set_window_size(1400, 1000)
    home = _check_page(browser, f"{base}/")
    assert home["script"] >= 2 and home["link"] >= 1  # app.js, charts.js, style.css
    for track in ("squared", "absolute", "density"):
        _check_page(browser, f"{base}/?track={track}")
        columns = len(browser.find_elements(By.CSS_SELECTOR, "#leaderboard thead th"))
        overflow = browser.execute_script(
            "const s = document.querySelector('#leaderboard').closest('.scroll');"
            "return [s.scrollWidth, s.clientWidth];"
        )
        assert overflow[0] <= overflow[1], (
            f"the {track} leaderboard ({columns} columns) scrolls sideways at 1,400 px: {overflow}"
        )

    report = _check_page(browser, f"{base}/report")
    assert browser.current_url == f"{base}/report/"
    assert report["img"] == len(browser.find_elements(By.CSS_SELECTOR, "img")) >= 1
    drawn = {Path(src).name for src, _, _ in browser.execute_script(_IMAGES)}
    assert drawn <= set(pngs)
    as_file = _check_page(browser, (folder / "index.html").as_uri())
    assert as_file["img"] == report["img"]

    sid = job["submission_id"]
    for path in (f"/submissions/{sid}", "/upload", "/query", "/rounds"):
        kinds = _check_page(browser, f"{base}{path}")
        assert kinds.get("link", 0) >= 1, (path, kinds)  # the stylesheet


def test_board_shows_intervals_the_set_and_the_clean_slice(server, browser, tmp_path) -> None:
    """Issue 49 in Chromium: bootstrap intervals and the MCS mark on the board, a cutoff
    inside the test period flagged, and the page ranked on that model's clean slice."""
    base, token, app = server
    shots = _shots(tmp_path)
    wh = app.state.wh.cursor()
    files = {
        "clean-model": (submission_bytes(wh, seed=1, noise=0.3), "2009Q4"),
        "late-model": (submission_bytes(wh, seed=2, noise=0.2), "2011Q2"),
    }
    wh.close()
    for name, (data, cutoff) in files.items():
        r = httpx.post(
            f"{base}/api/v1/submissions",
            headers={"Authorization": f"Bearer {token}"},
            data={"name": name, "training_cutoff": cutoff, "leakage_statement": "none"},
            files={"file": ("a.parquet", data)},
            timeout=30,
        )
        assert r.status_code == 202, r.text
        url = f"{base}{r.json()['status_url']}"
        for _ in range(600):
            if httpx.get(url, headers={"Authorization": f"Bearer {token}"}).json()["status"] in (
                "done",
                "failed",
            ):
                break
            time.sleep(0.1)
    wait = WebDriverWait(browser, 60)
    browser.get(f"{base}/?footprint=full&track=squared")
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#leaderboard tbody tr")))
    assert {"clean-model", "late-model"} <= set(_models(browser))
    assert browser.find_elements(By.CSS_SELECTOR, "#leaderboard span.ci")
    assert browser.find_elements(By.CSS_SELECTOR, "#leaderboard span.mcs")
    assert "seed" in browser.find_element(By.ID, "uncertainty-note").text
    late = browser.find_element(By.CSS_SELECTOR, "#leaderboard span.leak")
    assert "cutoff" in late.text
    assert browser.find_elements(By.CSS_SELECTOR, "#leaderboard tr.inhouse")
    browser.save_screenshot(str(shots / "board-uncertainty.png"))
    # rank on the clean slice after the late model's cutoff
    Select(browser.find_element(By.ID, "clean-after")).select_by_value("2011Q2")
    wait.until(ec.url_contains("clean_after=2011Q2"))
    wait.until(ec.presence_of_element_located((By.ID, "slice-note")))
    assert "2011Q2" in browser.find_element(By.ID, "slice-note").text
    assert "late-model" in _models(browser)
    browser.save_screenshot(str(shots / "board-clean-slice.png"))
