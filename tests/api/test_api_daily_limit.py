"""The daily upload limit holds against concurrent uploads (issue 34, item 4): the count
and the job's insert are one atomic step, so ten uploads at once by a user allowed three
give three jobs and seven 429s, with no file left behind by the refused ones."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from service_helpers import Api, submission_bytes

from proforma.app.api import admission
from proforma.app.api.auth import add_user


def test_concurrent_uploads_cannot_pass_the_daily_limit(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    wh = api.wh
    _, token = add_user(wh, "carol", daily_limit=3)
    data = submission_bytes(wh, limit=50)
    wh.close()
    slow = admission.check_parquet

    def slow_check(path: Path) -> dict:
        time.sleep(0.5)  # every upload passes the early check before any job is inserted
        return slow(path)

    monkeypatch.setattr(admission, "check_parquet", slow_check)
    statuses: list[int] = []
    lock = threading.Lock()

    def upload(k: int) -> None:
        r = api.upload(data, token=token, name=f"model-{k}")
        with lock:
            statuses.append(r.status_code)

    threads = [threading.Thread(target=upload, args=(k,)) for k in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(statuses) == [202] * 3 + [429] * 7, statuses
    jobs = api.client.get("/api/v1/jobs", headers=api.auth(token)).json()
    assert len(jobs) == 3
    for job in jobs:
        api.wait(job["job_id"], token=token)
    folder = Path(api.client.app.state.settings.upload_dir)
    assert not [p for p in folder.glob("*") if p.is_file()]
    me = api.client.get("/api/v1/users/me", headers=api.auth(token)).json()
    assert me["uploads_left_today"] == 0
