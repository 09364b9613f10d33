"""Issue 49, item 4: model cards as data. The upload form's card fields become columns of
the submission's record, the API filters the records and the boards by them, and a board
shows one entry per uploader and model family by default (its latest), the rest on
request; a bad card field is refused with its reason before anything is queued."""

from __future__ import annotations

from service_helpers import Api, submission_bytes


def test_cards_are_columns_with_filters_and_one_entry_per_family(api: Api) -> None:
    c = api.client
    card = {
        "model_family": "fade-net",
        "parameters": "1200",
        "compute_hours": "3.5",
        "hardware": "1x H100",
        "seeds": "1, 2, 3",
        "code_url": "https://example.org/fade-net",
    }
    first = api.wait(
        api.upload(submission_bytes(api.wh, seed=1), name="fade v1", **card).json()["job_id"]
    )
    second = api.wait(
        api.upload(
            submission_bytes(api.wh, seed=2, noise=0.2),
            name="fade v2",
            **{**card, "parameters": "5000"},
        ).json()["job_id"]
    )
    other = api.wait(api.upload(submission_bytes(api.wh, seed=3), name="solo").json()["job_id"])
    assert {first["status"], second["status"], other["status"]} == {"done"}

    record = c.get(f"/api/v1/submissions/{first['submission_id']}").json()["submission"]
    assert (record["model_family"], record["parameters"], record["compute_hours"]) == (
        "fade-net",
        1200,
        3.5,
    )
    assert (record["hardware"], record["seeds"]) == ("1x H100", "1, 2, 3")
    # a submission without a declared family is its own (its name)
    solo = c.get(f"/api/v1/submissions/{other['submission_id']}").json()["submission"]
    assert solo["model_family"] == "solo" and solo["parameters"] is None

    def names(url: str) -> set[str]:
        return {r["name"] for r in c.get(url).json()["rows"]}

    assert names("/api/v1/submissions?model_family=FADE-NET") == {"fade v1", "fade v2"}
    assert names("/api/v1/submissions?max_parameters=2000") == {"fade v1"}
    assert names("/api/v1/submissions?has_code=true") == {"fade v1", "fade v2"}
    assert "solo" in names("/api/v1/submissions?source=upload&has_code=false")
    assert c.get("/api/v1/submissions?max_parameters=-1").status_code == 422

    def board(query: str = "") -> dict[str, dict]:
        rows = c.get(f"/api/v1/leaderboards/full?track=absolute{query}").json()["rows"]
        return {r["model"]: r for r in rows}

    better = c.get("/api/v1/leaderboards/full?track=absolute").json()["better"]
    assert (better["mae"], better["r2"]) == ("lower", "higher")
    default = board()
    # one entry per uploader and family: the latest of fade-net; every in-house model
    assert "fade v2" in default and "fade v1" not in default and "solo" in default
    assert any(r["source"] != "upload" for r in default.values())
    assert sorted(r["rank"] for r in default.values()) == list(range(1, len(default) + 1))
    every = board("&all_entries=true")
    assert {"fade v1", "fade v2", "solo"} <= set(every) and len(every) == len(default) + 1
    assert set(board("&all_entries=true&model_family=fade-net")) == {"fade v1", "fade v2"}
    assert set(board("&all_entries=true&max_parameters=2000")) == {"fade v1"}

    # the page: the family filter, the in-house rows shaded, "every entry" on request
    page = c.get("/?footprint=full&track=absolute").text
    assert 'id="model-family"' in page and 'class="inhouse"' in page
    row = 'data-submission="{}"'.format
    assert row(first["submission_id"]) not in page and row(second["submission_id"]) in page
    every_page = c.get("/?footprint=full&track=absolute&all_entries=true").text
    assert row(first["submission_id"]) in every_page
    assert "MAE ↓" in page


def test_bad_card_fields_are_refused_before_queueing(api: Api) -> None:
    data = submission_bytes(api.wh)
    for field, value, fragment in (
        ("parameters", "-3", "greater than or equal to 0"),
        ("parameters", "many", "valid integer"),
        ("compute_hours", "inf", "finite"),
        ("model_family", "x" * 81, "at most 80"),
    ):
        r = api.upload(data, name="carded", **{field: value})
        assert r.status_code == 422, (field, r.text)
        body = r.json()
        assert field in body["detail"] and fragment in body["problems"][0]["problem"], body
    jobs = api.wh.scalar("SELECT count(*) FROM service.jobs")
    assert jobs == 0
