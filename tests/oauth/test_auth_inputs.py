"""What /v1/auth/{server}/login publishes for redirectUri is what its handler accepts:
a value the schema admits is never refused later with a 400 (schemathesis found two)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from mcpx.ops._handle_auth import _redirect_uri
from mcpx.ops._operations import REDIRECT_PATTERN


@settings(max_examples=300, deadline=None)
@given(st.from_regex(REDIRECT_PATTERN, fullmatch=True))
def test_every_redirect_uri_the_schema_admits_is_accepted(text: str) -> None:
    assert _redirect_uri(text) == text


def test_the_pattern_reads_alike_in_python_and_ecma() -> None:
    # Only printable ASCII in the path: Python's \s takes \x1c-\x1f, ECMA's does not.
    assert re.fullmatch(REDIRECT_PATTERN, "http://127.0.0.1:5555/callback?state=x")
    assert not re.fullmatch(REDIRECT_PATTERN, "http://0:0/O\u00c5\x1f")
    assert not re.fullmatch(REDIRECT_PATTERN, "http://127.0.0.1/callback#frag")
