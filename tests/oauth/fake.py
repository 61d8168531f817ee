"""A scripted authorization server and protected resource, each a real HTTP server on
its own 127.0.0.1 port (two origins), recording every request they get."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from support.asgi import loopback_socket, running_app


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    query: dict[str, str]
    form: dict[str, str]


@dataclass
class FakeOAuth:
    """Knobs a test turns before or during the run; ``seen`` is what arrived, in order."""

    as_url: str = ""
    rs_url: str = ""
    issuer_path: str = ""  # the issuer's path, e.g. "/tenant1"
    metadata_issuer: str | None = None  # what the metadata claims (None: the real issuer)
    prm_resource: str | None = None  # None: the real resource
    prm_at_root_only: bool = False
    challenge_has_metadata_url: bool = True
    challenge_scope: str | None = "mcp:read"
    required_scope: str | None = None  # 403 insufficient_scope when the token lacks it
    expires_in: int = 3600
    code_methods: list[str] | None = field(default_factory=lambda: ["S256"])
    issue_refresh: bool = True
    iss_in_redirect: str | None = ""  # "": the real issuer; None: omitted
    grants_only: str | None = None  # the scope every code grants, whatever was asked
    seen: list[Seen] = field(default_factory=list)
    valid: dict[str, str] = field(default_factory=dict)  # access token -> scope
    refresh: dict[str, str] = field(default_factory=dict)  # refresh token -> scope
    codes: dict[str, str] = field(default_factory=dict)  # code -> scope

    @property
    def issuer(self) -> str:
        return self.as_url + self.issuer_path

    def paths(self, method: str | None = None) -> list[str]:
        return [s.path for s in self.seen if method is None or s.method == method]

    def token_grants(self) -> list[str]:
        return [s.form.get("grant_type", "") for s in self.seen if s.path.endswith("/token")]

    async def _record(self, request: Request) -> Seen:
        form: dict[str, str] = {}
        if request.headers.get("content-type", "").startswith("application/x-www-form"):
            form = dict(parse_qsl((await request.body()).decode()))
        seen = Seen(
            request.method,
            request.url.path,
            {k.lower(): v for k, v in request.headers.items()},
            dict(request.query_params),
            form,
        )
        self.seen.append(seen)
        return seen

    # -- the protected resource ----------------------------------------------------------

    async def mcp(self, request: Request) -> Response:
        seen = await self._record(request)
        auth = seen.headers.get("authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
        params = []
        if self.challenge_has_metadata_url:
            params.append(
                f'resource_metadata="{self.rs_url}/.well-known/oauth-protected-resource/mcp"'
            )
        if self.challenge_scope:
            params.append(f'scope="{self.challenge_scope}"')
        if token is None or token not in self.valid:
            return JSONResponse(
                {"error": "invalid_token"}, 401, {"WWW-Authenticate": "Bearer " + ", ".join(params)}
            )
        if self.required_scope and self.required_scope not in self.valid[token].split():
            header = f'Bearer error="insufficient_scope", scope="{self.required_scope}"'
            return JSONResponse({"error": "insufficient_scope"}, 403, {"WWW-Authenticate": header})
        return JSONResponse({"ok": True})

    async def prm(self, request: Request) -> Response:
        seen = await self._record(request)
        if self.prm_at_root_only and seen.path.endswith("/mcp"):
            return JSONResponse({"error": "not_found"}, 404)
        return JSONResponse(
            {
                "resource": self.prm_resource or f"{self.rs_url}/mcp",
                "authorization_servers": [self.issuer],
                "scopes_supported": ["mcp:read", "mcp:write"],
            }
        )

    # -- the authorization server --------------------------------------------------------

    async def as_metadata(self, request: Request) -> Response:
        seen = await self._record(request)
        if self.issuer_path and not seen.path.endswith(self.issuer_path):
            return JSONResponse({"error": "not_found"}, 404)
        if self.issuer_path and "openid" not in seen.path:
            return JSONResponse({"error": "not_found"}, 404)  # only OpenID discovery here
        body: dict[str, Any] = {
            "issuer": self.metadata_issuer or self.issuer,
            "authorization_endpoint": f"{self.as_url}/authorize",
            "token_endpoint": f"{self.as_url}/token",
            "registration_endpoint": f"{self.as_url}/register",
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            "authorization_response_iss_parameter_supported": True,
        }
        if self.code_methods is not None:
            body["code_challenge_methods_supported"] = self.code_methods
        return JSONResponse(body)

    async def register(self, request: Request) -> Response:
        await self._record(request)
        return JSONResponse(
            {
                "client_id": "client-1",
                "client_secret": "client-secret-1",
                "token_endpoint_auth_method": "client_secret_basic",
            },
            201,
        )

    async def authorize(self, request: Request) -> Response:
        seen = await self._record(request)
        code = secrets.token_urlsafe(8)
        self.codes[code] = self.grants_only or seen.query.get("scope", "")
        params = {"code": code, "state": seen.query["state"]}
        if self.iss_in_redirect is not None:
            params["iss"] = self.iss_in_redirect or self.issuer
        return RedirectResponse(f"{seen.query['redirect_uri']}?{urlencode(params)}", 302)

    async def token(self, request: Request) -> Response:
        seen = await self._record(request)
        grant = seen.form.get("grant_type")
        if grant == "authorization_code" and seen.form.get("code") in self.codes:
            scope = self.codes.pop(seen.form["code"])
        elif grant == "refresh_token" and seen.form.get("refresh_token") in self.refresh:
            scope = self.refresh.pop(seen.form["refresh_token"])
        else:
            return JSONResponse({"error": "invalid_grant"}, 400)
        access = "at-" + secrets.token_urlsafe(8)
        self.valid[access] = scope
        body: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "scope": scope,
        }
        if self.issue_refresh:
            body["refresh_token"] = rt = "rt-" + secrets.token_urlsafe(8)
            self.refresh[rt] = scope
        return JSONResponse(body)

    async def elsewhere(self, request: Request) -> Response:
        await self._record(request)
        return JSONResponse({"other": True})


@contextmanager
def fake_oauth(**knobs: Any) -> Iterator[FakeOAuth]:
    fake = FakeOAuth(**knobs)
    as_sock, rs_sock = loopback_socket(), loopback_socket()
    fake.as_url = f"http://127.0.0.1:{as_sock.getsockname()[1]}"
    fake.rs_url = f"http://127.0.0.1:{rs_sock.getsockname()[1]}"
    authz = Starlette(
        routes=[
            Route("/.well-known/{rest:path}", fake.as_metadata),
            Route("/register", fake.register, methods=["POST"]),
            Route("/authorize", fake.authorize),
            Route("/token", fake.token, methods=["POST"]),
            Route("/elsewhere", fake.elsewhere, methods=["GET", "POST"]),
            Route("/{rest:path}/.well-known/openid-configuration", fake.as_metadata),
        ]
    )
    resource = Starlette(
        routes=[
            Route("/.well-known/oauth-protected-resource{rest:path}", fake.prm),
            Route("/mcp", fake.mcp, methods=["GET", "POST"]),
        ]
    )
    with ExitStack() as stack:
        stack.enter_context(running_app(authz, as_sock))
        stack.enter_context(running_app(resource, rs_sock))
        yield fake
