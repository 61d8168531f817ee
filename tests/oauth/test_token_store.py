"""The durable token store (``<state>/oauth.db``) and the daemon's logins in progress."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import anyio
import pytest

from mcpx.oauth import MAX_PENDING, ClientIdentity, Logins, OAuthError, SqliteStore, Tokens


@pytest.mark.obligation("C-AUTH-27")
def test_tokens_and_clients_outlive_the_store_in_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "oauth.db"
    store = SqliteStore(path)
    tokens = Tokens("at-1", refresh_token="rt-1", expires_at=123.0, scope="a b", issuer="I")
    client = ClientIdentity("cid", "s3cr3t-value", "client_secret_basic", ("http://127.0.0.1/cb",))
    store.save_tokens("k", "alice", tokens)
    store.save_client("k", "I", client)
    store.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = SqliteStore(path)
    assert again.tokens("k", "alice") == tokens
    assert again.tokens("k", "bob") is None  # per user
    assert again.client("k", "I") == client
    assert again.client("k", "other issuer") is None  # per issuer
    again.drop_tokens("k", "alice")
    assert again.tokens("k", "alice") is None
    assert "at-1" not in repr(tokens) and "s3cr3t-value" not in repr(client)


def test_a_pending_login_is_found_by_its_state_only(tmp_path: Path) -> None:
    logins = Logins(SqliteStore(tmp_path / "oauth.db"))

    async def main() -> None:
        state = logins.expect("https://as/authorize?state=s1&client_id=c", "srv", "")
        with pytest.raises(OAuthError, match="no login is pending"):
            await logins.complete("http://127.0.0.1:1/cb?code=c&state=other")
        server, tokens = await logins.complete("http://127.0.0.1:1/cb?code=c&state=s1")
        assert (server, tokens) == ("srv", None)
        assert await logins.wait(state) == "http://127.0.0.1:1/cb?code=c&state=s1"
        with pytest.raises(OAuthError, match="carries no state"):
            logins.expect("https://as/authorize?client_id=c", "srv", "")

    anyio.run(main)


def test_pending_logins_are_bounded(tmp_path: Path) -> None:
    logins = Logins(SqliteStore(tmp_path / "oauth.db"))
    for n in range(MAX_PENDING + 10):
        logins.expect(f"https://as/authorize?state=s{n}", "srv", "")
    assert logins.pending_for("srv") == MAX_PENDING
