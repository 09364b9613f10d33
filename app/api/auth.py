"""Users and API tokens: created once, shown once, stored only as salted HMAC digests.

A token reads `pf_<token_id>.<secret>`. `token_id` (12 hex digits) locates the row;
the secret is never stored: the row keeps a random salt and
`hmac_sha256(salt, secret)`, compared in constant time. Admins manage footprints and
users; everyone with a token may upload, within a per-user daily limit.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from proforma.app.api.job_store import uploads_since
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.provenance import utcnow

_TOKEN = re.compile(r"^pf_([0-9a-f]{12})\.([A-Za-z0-9_-]{20,200})$")
_USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class AuthError(UserError):
    """A missing, malformed, unknown or revoked token (HTTP 401)."""

    status_code = 401


@dataclass(frozen=True)
class User:
    user_id: int
    name: str
    is_admin: bool
    daily_limit: int | None


def _digest(salt: str, secret: str) -> str:
    return hmac.new(bytes.fromhex(salt), secret.encode(), hashlib.sha256).hexdigest()


def check_user_name(name: str) -> str:
    if not _USER_NAME.match(name):
        raise UserError(
            f"User name {name!r} is not allowed: use 1-64 letters, digits, '_', '.' or '-', "
            f"starting with a letter or digit."
        )
    return name


def get_user(wh: Warehouse, name: str) -> User | None:
    row = wh.fetchone(
        "SELECT user_id, name, is_admin, daily_limit FROM service.users WHERE name = ?", [name]
    )
    return User(*row) if row else None


def list_users(wh: Warehouse) -> list[dict]:
    """Users with their active token count (no secrets, no digests)."""
    rows = wh.fetchall(
        """
        SELECT u.user_id, u.name, u.is_admin, u.daily_limit, u.created_at,
               count(t.token_id) FILTER (WHERE t.revoked_at IS NULL) AS active_tokens
        FROM service.users u LEFT JOIN service.tokens t USING (user_id)
        GROUP BY ALL ORDER BY u.user_id
        """
    )
    keys = ("user_id", "name", "is_admin", "daily_limit", "created_at", "active_tokens")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def new_token(wh: Warehouse, user: User) -> str:
    """Issue a token for `user`; the returned string is the only copy of its secret."""
    token_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    salt = secrets.token_hex(16)
    wh.execute(
        "INSERT INTO service.tokens VALUES (?, ?, ?, ?, ?, NULL)",
        [token_id, user.user_id, salt, _digest(salt, secret), utcnow()],
    )
    return f"pf_{token_id}.{secret}"


def add_user(
    wh: Warehouse, name: str, *, admin: bool = False, daily_limit: int | None = None
) -> tuple[User, str]:
    """Create a user and its first token. Returns (user, token); the token is shown once."""
    check_user_name(name)
    if daily_limit is not None and daily_limit < 0:
        raise UserError("The daily upload limit cannot be negative.")
    with wh.transaction():
        if get_user(wh, name) is not None:
            raise UserError(
                f"User {name!r} exists already; use `proforma users token {name}` for a new token."
            )
        wh.execute(
            "INSERT INTO service.users (name, is_admin, daily_limit, created_at) VALUES (?, ?, ?, ?)",
            [name, admin, daily_limit, utcnow()],
        )
        user = get_user(wh, name)
        assert user is not None
        token = new_token(wh, user)
    return user, token


def revoke_tokens(wh: Warehouse, name: str) -> int:
    """Revoke every active token of user `name`; returns how many were revoked."""
    user = get_user(wh, name)
    if user is None:
        raise UserError(f"No user {name!r}.")
    before = wh.scalar(
        "SELECT count(*) FROM service.tokens WHERE user_id = ? AND revoked_at IS NULL",
        [user.user_id],
    )
    wh.execute(
        "UPDATE service.tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL",
        [utcnow(), user.user_id],
    )
    return int(before)


def authenticate(wh: Warehouse, token: str | None) -> User:
    """The user a bearer token belongs to, or AuthError with the reason."""
    if not token:
        raise AuthError(
            "This route needs an API token: send 'Authorization: Bearer pf_...'. "
            "An admin creates one with `proforma users add NAME`."
        )
    m = _TOKEN.match(token.strip())
    if not m:
        raise AuthError("Malformed API token: expected the form pf_<12 hex digits>.<secret>.")
    token_id, secret = m.groups()
    row = wh.fetchone(
        """
        SELECT t.salt, t.digest, t.revoked_at, u.user_id, u.name, u.is_admin, u.daily_limit
        FROM service.tokens t JOIN service.users u USING (user_id)
        WHERE t.token_id = ?
        """,
        [token_id],
    )
    # Compute a digest even for unknown ids so timing does not reveal which ids exist.
    salt, digest = (row[0], row[1]) if row else ("00" * 16, "")
    ok = hmac.compare_digest(_digest(salt, secret), digest)
    if row is None or not ok:
        raise AuthError("Unknown API token.")
    if row[2] is not None:
        raise AuthError(f"This API token was revoked on {row[2]:%Y-%m-%d %H:%M} UTC.")
    return User(row[3], row[4], row[5], row[6])


def uploads_today(wh: Warehouse, user: User) -> int:
    """Uploads by `user` since the start of the current UTC day."""
    return uploads_since(
        wh, user.user_id, utcnow().replace(hour=0, minute=0, second=0, microsecond=0)
    )


def daily_limit(user: User, default: int) -> int:
    return default if user.daily_limit is None else user.daily_limit
