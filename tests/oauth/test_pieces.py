"""mcpx.oauth's sans-network pieces: challenges, scopes, reprs, config blocks."""

from __future__ import annotations

import pytest

from mcpx.client import apply_auth
from mcpx.config import ConfigError, parse_config_text
from mcpx.oauth import ClientIdentity, Discovery, LoginNeeded, Tokens, parse_challenge
from mcpx.oauth._scopes import select_scope, union_scopes


@pytest.mark.obligation("C-AUTH-8")
@pytest.mark.parametrize(
    ("header", "bearer", "error", "scope", "metadata"),
    [
        (
            'Bearer resource_metadata="https://r/.well-known/x", scope="a b"',
            True,
            None,
            "a b",
            "https://r/.well-known/x",
        ),
        ('Bearer error="insufficient_scope", scope="w"', True, "insufficient_scope", "w", None),
        ("Bearer realm=mcp, scope=read", True, None, "read", None),
        ('Basic realm="x", Bearer scope="s"', True, None, "s", None),
        ('Bearer scope="s", Basic realm="not-bearer"', True, None, "s", None),
        ('Bearer scope="a \\"q\\" b"', True, None, 'a "q" b', None),
        ('Basic realm="x"', False, None, None, None),
        ("", False, None, None, None),
        (None, False, None, None, None),
    ],
)
def test_challenges_are_parsed(
    header: str | None, bearer: bool, error: str | None, scope: str | None, metadata: str | None
) -> None:
    challenge = parse_challenge(header)
    assert (challenge.bearer, challenge.error, challenge.scope, challenge.resource_metadata) == (
        bearer,
        error,
        scope,
        metadata,
    )


def _discovery(prm_scopes: tuple[str, ...] | None, as_scopes: list[str] | None) -> Discovery:
    metadata = {"scopes_supported": as_scopes} if as_scopes is not None else {}
    return Discovery("https://r/mcp", "https://as", metadata, prm_scopes, True)


@pytest.mark.obligation("C-AUTH-14", "C-AUTH-15", "C-AUTH-29")
@pytest.mark.parametrize(
    ("challenged", "configured", "prm", "as_scopes", "expected"),
    [
        ("x:y", None, ("a", "b"), None, "x:y"),  # the challenge wins, even outside PRM's list
        (None, None, ("a", "b"), None, "a b"),  # else all of PRM's scopes_supported
        (None, None, None, None, None),  # else no scope at all
        (None, "c", ("a",), None, "c"),  # the configured scopes before PRM's
        ("a", None, None, ["a", "offline_access"], "a offline_access"),  # AS offers refresh
        ("a offline_access", None, None, ["a"], "a"),  # never ask for what is not offered
    ],
)
def test_scope_selection(
    challenged: str | None,
    configured: str | None,
    prm: tuple[str, ...] | None,
    as_scopes: list[str] | None,
    expected: str | None,
) -> None:
    assert select_scope(challenged, configured, _discovery(prm, as_scopes)) == expected


def test_step_up_asks_for_the_union() -> None:
    assert union_scopes("a b", "b c") == "a b c"
    assert union_scopes(None, "c") == "c"
    assert union_scopes(None, None) is None


def test_no_secret_in_reprs_or_messages() -> None:
    tokens = Tokens("ACCESS-SECRET", refresh_token="REFRESH-SECRET", scope="a")
    client = ClientIdentity("id", "CLIENT-SECRET", "client_secret_basic", (), "dcr")
    shown = repr(tokens) + repr(client)
    for secret in ("ACCESS-SECRET", "REFRESH-SECRET", "CLIENT-SECRET"):
        assert secret not in shown
    assert "scope='a'" in shown and "client_id='id'" in shown


def test_login_needed_says_what_to_run() -> None:
    exc = LoginNeeded("github", "no token")
    assert (exc.server, exc.reason) == ("github", "no token")
    assert "mcpx auth login github" in str(exc)


def test_an_oauth_block_adds_no_headers() -> None:
    parts = apply_auth("srv", {"type": "oauth", "clientId": "x"}, {})
    assert (parts.headers, parts.query, parts.env) == ({}, {}, {})


def _config(auth: str) -> object:
    text = f'{{"mcpServers": {{"a": {{"url": "https://a.example/mcp", "auth": {auth}}}}}}}'
    return parse_config_text(text, "mcpx.json").servers["a"].auth


def test_a_full_oauth_block_is_accepted() -> None:
    block = (
        '{"type": "oauth", "clientId": "c", "clientSecretEnv": "S", "scopes": ["a", "b"],'
        ' "clientMetadataUrl": "https://me.example/client.json", "grant": "client_credentials"}'
    )
    assert _config(block) == {
        "type": "oauth",
        "clientId": "c",
        "clientSecretEnv": "S",
        "scopes": ["a", "b"],
        "clientMetadataUrl": "https://me.example/client.json",
        "grant": "client_credentials",
    }


@pytest.mark.parametrize(
    ("block", "words"),
    [
        ('{"type": "oauth", "clientID": "typo"}', "is not an oauth key"),
        ('{"type": "oauth", "scopes": "a b"}', "must be a list of scope names"),
        ('{"type": "oauth", "grant": "password"}', "must be one of authorization_code"),
        ('{"type": "oauth", "grant": "client_credentials"}', "needs clientId"),
        ('{"type": "oauth", "clientMetadataUrl": "http://x/c.json"}', "https URL with a path"),
        ('{"type": "oauth", "clientSecret": "a", "clientSecretEnv": "B"}', "not both"),
    ],
)
def test_bad_oauth_blocks_are_refused(block: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        _config(block)
