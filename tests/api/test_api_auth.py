"""Users and tokens: hashed storage, every 401/403 path, admin routes, the CLI."""

from __future__ import annotations

import re

import pytest
from service_helpers import Api
from typer.testing import CliRunner

from proforma.app.api.auth import AuthError, add_user, authenticate, revoke_tokens
from proforma.app.cli import app as cli
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError


def test_tokens_are_stored_hashed(wh: Warehouse) -> None:
    user, token = add_user(wh, "bob")
    parts = re.match(r"^pf_([0-9a-f]{12})\.(.+)$", token)
    assert parts is not None
    token_id, secret = parts.groups()
    salt, digest = wh.one("SELECT salt, digest FROM service.tokens WHERE token_id = ?", [token_id])
    dump = str(wh.fetchall("SELECT * FROM service.tokens")) + str(
        wh.fetchall("SELECT * FROM service.users")
    )
    assert secret not in dump and len(salt) == 32 and len(digest) == 64
    assert authenticate(wh, token) == user
    # another user's token with the same secret length gets a different digest (per-token salt)
    _, other = add_user(wh, "carol")
    assert wh.scalar("SELECT count(DISTINCT salt) FROM service.tokens") == 2
    assert authenticate(wh, other).name == "carol"


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (None, "needs an API token"),
        ("", "needs an API token"),
        ("abc", "Malformed API token"),
        ("pf_0123456789ab.short", "Malformed API token"),
        ("pf_0123456789ab." + "x" * 43, "Unknown API token"),
    ],
)
def test_authenticate_rejects(wh: Warehouse, token: str | None, message: str) -> None:
    with pytest.raises(AuthError, match=message):
        authenticate(wh, token)


def test_wrong_secret_and_revoked(wh: Warehouse) -> None:
    _, token = add_user(wh, "dave")
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    with pytest.raises(AuthError, match="Unknown API token"):
        authenticate(wh, forged)
    assert revoke_tokens(wh, "dave") == 1
    with pytest.raises(AuthError, match="revoked"):
        authenticate(wh, token)


def test_user_names_and_duplicates(wh: Warehouse) -> None:
    add_user(wh, "erin")
    with pytest.raises(UserError, match="exists already"):
        add_user(wh, "erin")
    for bad in ("", "has space", "-lead", "x" * 65, "semi;colon"):
        with pytest.raises(UserError, match="not allowed"):
            add_user(wh, bad)


def test_http_auth_failures(api: Api) -> None:
    c = api.client
    r = c.get("/api/v1/users/me")
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert "needs an API token" in r.json()["detail"]
    r = c.get("/api/v1/users/me", headers={"Authorization": "Basic dXNlcjpwYXNz"})
    assert r.status_code == 401 and "Bearer" in r.json()["detail"]
    r = c.get("/api/v1/users/me", headers={"Authorization": "Bearer nonsense"})
    assert r.status_code == 401 and "Malformed" in r.json()["detail"]
    r = c.get("/api/v1/users/me", headers=api.auth("pf_0123456789ab." + "y" * 43))
    assert r.status_code == 401 and "Unknown" in r.json()["detail"]
    me = c.get("/api/v1/users/me", headers=api.auth()).json()
    assert me == {
        "name": "alice",
        "is_admin": False,
        "daily_limit": 4,
        "uploads_today": 0,
        "uploads_left_today": 4,
    }
    # upload without a token: 401 before anything is read
    r = c.post("/api/v1/submissions", files={"file": ("f.parquet", b"PAR1")})
    assert r.status_code == 401


def test_admin_routes(api: Api) -> None:
    c = api.client
    for method, path, body in [
        ("get", "/api/v1/users", None),
        ("post", "/api/v1/users", {"name": "frank"}),
        ("post", "/api/v1/users/alice/tokens", None),
        ("delete", "/api/v1/users/alice/tokens", None),
    ]:
        r = c.request(method, path, json=body, headers=api.auth())
        assert r.status_code == 403 and "not an admin" in r.json()["detail"], (method, path)
    admin = api.auth(api.admin_token)
    r = c.post("/api/v1/users", json={"name": "frank", "daily_limit": 1}, headers=admin)
    assert r.status_code == 201
    frank = r.json()["token"]
    assert c.get("/api/v1/users/me", headers=api.auth(frank)).json()["daily_limit"] == 1
    assert c.post("/api/v1/users", json={"name": "frank"}, headers=admin).status_code == 409
    assert c.post("/api/v1/users", json={"name": "bad name"}, headers=admin).status_code == 400
    assert (
        c.post("/api/v1/users", json={"name": "g", "daily_limit": -1}, headers=admin).status_code
        == 422
    )
    names = [u["name"] for u in c.get("/api/v1/users", headers=admin).json()]
    assert names == ["admin", "alice", "frank"]
    second = c.post("/api/v1/users/frank/tokens", headers=admin).json()["token"]
    assert c.get("/api/v1/users/me", headers=api.auth(second)).status_code == 200
    assert c.delete("/api/v1/users/frank/tokens", headers=admin).json()["revoked"] == 2
    r = c.get("/api/v1/users/me", headers=api.auth(frank))
    assert r.status_code == 401 and "revoked" in r.json()["detail"]
    assert c.post("/api/v1/users/nobody/tokens", headers=admin).status_code == 404
    assert c.delete("/api/v1/users/nobody/tokens", headers=admin).status_code == 404


def test_cli_users_add_prints_token_once(settings, wh: Warehouse) -> None:
    wh.close()
    runner = CliRunner()
    r = runner.invoke(cli, ["users", "add", "grace", "--admin"])
    assert r.exit_code == 0, r.output
    shown = re.search(r"(pf_[0-9a-f]{12}\.[A-Za-z0-9_-]+)", r.output)
    assert shown is not None, r.output
    token = shown.group(1)
    assert "not shown again" in r.output
    listing = runner.invoke(cli, ["users", "list"])
    assert "grace" in listing.output and token not in listing.output
    again = runner.invoke(cli, ["users", "add", "grace"])
    assert again.exit_code != 0
    r = runner.invoke(cli, ["users", "token", "grace"])
    assert r.exit_code == 0 and "pf_" in r.output
    r = runner.invoke(cli, ["users", "revoke", "grace"])
    assert r.exit_code == 0 and "2 token(s)" in r.output
