"""The rounds pages: every round with its deadline and resolution, the live leaderboard
across rounds, and one round's leaderboard with its resolution per horizon and a form
that submits to it (the API's POST /api/v1/rounds/{name}/submissions)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from proforma.app.read.deps import SettingsDep, WarehouseDep
from proforma.app.read.disclosure import disclosed_live, disclosed_round
from proforma.app.read.formats import clean
from proforma.app.web.pages import _render

router = APIRouter(include_in_schema=False)


@router.get("/rounds", response_class=HTMLResponse)
def rounds_page(request: Request, wh: WarehouseDep, settings: SettingsDep) -> HTMLResponse:
    from proforma.app.rounds import list_rounds, live_leaderboard

    has = wh.table_exists("rounds.rounds")
    return _render(
        request,
        "rounds.html",
        "rounds",
        rounds=list_rounds(wh) if has else [],
        live=clean(disclosed_live(wh, live_leaderboard(wh), settings.public_min_cells))
        if has
        else [],
    )


@router.get("/rounds/{name}", response_class=HTMLResponse)
def round_page(
    request: Request, name: str, wh: WarehouseDep, settings: SettingsDep
) -> HTMLResponse:
    from proforma.app.rounds import leaderboard

    board = disclosed_round(wh, leaderboard(wh, name), settings.public_min_cells)
    return _render(request, "round.html", "rounds", board=clean(board), rnd=board["round"])
