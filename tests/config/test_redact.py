"""``redact_url``, ``redact_headers`` and ``Redactor`` as tables: every URL form, every
spelling of a secret in free text, and what a configured server shows of itself."""

from __future__ import annotations

import base64
import string
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpx.config import (
    REDACTED,
    Redactor,
    ServerConfig,
    redact_headers,
    redact_url,
)
from mcpx.config._redact import MIN_SECRET, UNPARSABLE

# (url as configured, as shown, what must not be shown)
URLS: list[tuple[str, str, tuple[str, ...]]] = [
    ("https://example.com/mcp", "https://example.com/mcp", ()),
    ("http://example.com/mcp?", "http://example.com/mcp", ()),
    ("https://example.com/a/b/", "https://example.com/a/b/", ()),
    # userinfo, with and without a password, and an "@" inside it (raw or encoded)
    ("http://alice:pw-Secret1@h.example/mcp", "http://***@h.example/mcp", ("alice", "Secret1")),
    ("https://tok-Secret2@h.example/mcp", "https://***@h.example/mcp", ("Secret2",)),
    ("http://u:p%40ss-Secret3@h.example/x", "http://***@h.example/x", ("Secret3", "%40")),
    ("http://u:p@ss-Secret4@h.example/x", "http://***@h.example/x", ("Secret4",)),
    ("http://:Secret5@h.example/x", "http://***@h.example/x", ("Secret5",)),
    # queries: one, repeated keys, a bare part, empty values, encodings, ";" inside a value
    ("http://h/mcp?api_key=Secret6", "http://h/mcp?api_key=***", ("Secret6",)),
    ("http://h/mcp?k=Secret7a&k=Secret7b", "http://h/mcp?k=***&k=***", ("Secret7",)),
    ("http://h/mcp?Secret8", "http://h/mcp?***", ("Secret8",)),
    ("http://h/mcp?a=&b=Secret9", "http://h/mcp?a=&b=***", ("Secret9",)),
    ("http://h/mcp?a=1&&b=Secret10", "http://h/mcp?a=***&&b=***", ("Secret10",)),
    ("http://h/mcp?sig=Se%2Fcret11%3D%3D", "http://h/mcp?sig=***", ("cret11",)),
    ("http://h/mcp?q=Se+cret12", "http://h/mcp?q=***", ("cret12",)),
    ("http://h/mcp?a=1;tok=Secret13", "http://h/mcp?a=***", ("Secret13",)),
    ("http://h/mcp?=Secret14", "http://h/mcp?=***", ("Secret14",)),
    # fragments
    ("http://h/cb#access_token=Secret15", "http://h/cb#***", ("Secret15",)),
    ("http://h/mcp#", "http://h/mcp", ()),
    # IPv6 hosts, with a port, userinfo and a query
    (
        "http://u:Secret16@[::1]:8080/mcp?key=Secret17",
        "http://***@[::1]:8080/mcp?key=***",
        ("Secret16", "Secret17"),
    ),
    ("http://[2001:db8::7]/mcp", "http://[2001:db8::7]/mcp", ()),
    # a relative reference (an SSE server's endpoint event)
    ("/messages/?session_id=Secret18", "/messages/?session_id=***", ("Secret18",)),
    # URLs that do not parse: a placeholder, never the raw text
    ("http://[::1/mcp?key=Secret19", UNPARSABLE, ("Secret19",)),
    ("http://u:pa/ss-Secret20@h.example/", UNPARSABLE, ("Secret20",)),
    ("http://u:Secret21?x@h.example/", UNPARSABLE, ("Secret21",)),
    ("http://h.example:99999/?k=Secret22", UNPARSABLE, ("Secret22",)),
]


@pytest.mark.parametrize(("url", "shown", "hidden"), URLS)
def test_redact_url(url: str, shown: str, hidden: tuple[str, ...]) -> None:
    assert redact_url(url) == shown
    for secret in hidden:
        assert secret not in redact_url(url)
    assert Redactor(url).url == shown


# Any userinfo and query values (drawn from an alphabet the host and path never use)
# are hidden, whatever they hold; the parameter names stay, in their order.
_VALUE = st.text(alphabet=string.ascii_uppercase + string.digits + "/+=@:&?#% ", min_size=1)
_NAME = st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=8)


@given(user=_VALUE, password=_VALUE, query=st.lists(st.tuples(_NAME, _VALUE), max_size=4))
def test_redact_url_hides_any_userinfo_and_query_value(
    user: str, password: str, query: list[tuple[str, str]]
) -> None:
    pairs = "&".join(f"{name}={quote(value, safe='')}" for name, value in query)
    url = f"https://{quote(user, safe='')}:{quote(password, safe='')}@h.example/p"
    url += f"?{pairs}" if pairs else ""
    shown = redact_url(url)
    assert shown == "https://***@h.example/p" + (
        "?" + "&".join(f"{name}=***" for name, _ in query) if query else ""
    )


def test_redact_headers_keeps_names_only() -> None:
    headers = {"Authorization": "Bearer S3cr3t", "X-Team": "a"}
    assert redact_headers(headers) == {"Authorization": REDACTED, "X-Team": REDACTED}


URL = "http://u-Secret30:pw%2FSecret31@h.example/mcp?api_key=Se%2Bcret32&team=a"
HEADERS = {"Authorization": "Bearer tok-Secret33", "X-Key": "Secret34\nline", "X-Team": "a"}
BASIC = base64.b64encode(b"u-Secret30:pw/Secret31").decode()

# (text quoted from elsewhere, as shown)
TEXTS: list[tuple[str, str]] = [
    # a URL anywhere in the text, whoever's it is
    (f"POST {URL} failed", "POST http://***@h.example/mcp?api_key=***&team=*** failed"),
    ("see https://docs.example/x?sig=abc.", "see https://docs.example/x?sig=***"),
    # each spelling of a query secret: as written, decoded, re-encoded, lower-case hex
    ("key Se%2Bcret32 / Se+cret32 / se%2bcret32", "key *** / *** / ***"),
    # userinfo parts and the basic auth header httpx makes of them
    ("user u-Secret30, password pw/Secret31", "user ***, password ***"),
    (f"Authorization: Basic {BASIC}", "Authorization: Basic ***"),
    # a header value whole, its credential after the scheme, and as repr and JSON escape it
    ("got 'Bearer tok-Secret33'", "got '***'"),
    ("token tok-Secret33 refused", "token *** refused"),
    ("Illegal header value b'Secret34\\nline'", "Illegal header value b'***'"),
    ('{"key": "Secret34\\nline"}', '{"key": "***"}'),
    # values too short to be secrets are left alone; so is everything else
    ("a team of a few", "a team of a few"),
    ("HTTP 401: invalid credentials", "HTTP 401: invalid credentials"),
]


@pytest.mark.parametrize(("text", "shown"), TEXTS)
def test_redactor_text(text: str, shown: str) -> None:
    assert Redactor(URL, HEADERS).text(text) == shown


def test_redactor_of_a_url_without_secrets_changes_only_urls() -> None:
    redactor = Redactor("https://h.example/mcp", {})
    assert redactor.text("ConnectError: All connection attempts failed") == (
        "ConnectError: All connection attempts failed"
    )
    assert redactor.text("at http://h/x?k=v") == "at http://h/x?k=***"


def test_a_short_value_is_not_searched_for() -> None:
    assert len("abc") < MIN_SECRET
    assert Redactor("http://h/?k=abc").text("abc abcd") == "abc abcd"


def test_a_server_shows_its_url_redacted_and_no_secret_in_its_repr() -> None:
    server = ServerConfig(
        name="s",
        transport="http",
        url="https://u:Secret40@h.example/mcp?token=Secret41",
        headers={"Authorization": "Bearer Secret42"},
        auth={"type": "bearer", "token": "Secret43"},
    )
    assert server.shown_url == "https://***@h.example/mcp?token=***"
    shown = repr(server)
    assert "Secret4" not in shown
    assert "'Authorization': '***'" in shown and "'type': 'bearer'" in shown
    stdio = ServerConfig(name="t", transport="stdio", command="x", env={"TOKEN": "Secret44"})
    assert stdio.shown_url is None
    assert "Secret44" not in repr(stdio) and "'TOKEN': '***'" in repr(stdio)
