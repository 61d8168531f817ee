"""The grants that need nobody: client_credentials (SEP-1046) and the JWT-bearer grant
with a workload identity token (RFC 7523 §2.1, SEP-1933).

The workload's JWT comes from the auth block's ``assertionEnv`` (a variable holding it)
or ``assertionFile`` (a file holding it, read at each grant: platforms rotate it), and
is sent as the ``assertion``. A refused grant is an ``OAuthError`` at once: it is never
tried again nor swapped for another grant (the token stays refused until the config or
the workload's token changes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import httpx

from ._discovery import Discovery
from ._dpop import DPoPProver
from ._errors import OAuthError
from ._identity import ClientSettings, configured_identity
from ._model import Tokens
from ._tokens import request_tokens

__all__ = ["JWT_BEARER", "MACHINE_GRANTS", "Assertion", "machine_tokens"]

JWT_BEARER: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
# The auth block's "grant" values these serve.
MACHINE_GRANTS: Final = ("client_credentials", "jwt_bearer")


@dataclass(frozen=True)
class Assertion:
    """Where the workload's JWT is: an environment variable's name or a file's path."""

    env_var: str | None = None
    file: str | None = None
    environ: Mapping[str, str] | None = None

    @classmethod
    def from_block(cls, block: Mapping[str, object], environ: Mapping[str, str]) -> Assertion:
        env_var, file = block.get("assertionEnv"), block.get("assertionFile")
        return cls(
            env_var if isinstance(env_var, str) else None,
            file if isinstance(file, str) else None,
            environ,
        )

    def __repr__(self) -> str:  # the environment holds secrets
        return f"Assertion(env_var={self.env_var!r}, file={self.file!r})"

    def read(self, server: str) -> str:
        """The JWT, as it is now.

        Raises:
            OAuthError: none is configured, the variable is unset or the file unreadable.
        """
        if self.env_var is not None:
            value = (self.environ or {}).get(self.env_var, "").strip()
            if not value:
                raise OAuthError(
                    f"{server}: auth assertionEnv names {self.env_var}, which is not set "
                    "(it should hold the workload's identity JWT)"
                )
            return value
        if self.file is not None:
            try:
                value = Path(self.file).expanduser().read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise OAuthError(
                    f"{server}: auth assertionFile {self.file} cannot be read "
                    f"({exc.strerror or type(exc).__name__})"
                ) from None
            if not value:
                raise OAuthError(f"{server}: auth assertionFile {self.file} is empty")
            return value
        raise OAuthError(
            f'{server}: "grant": "jwt_bearer" needs assertionEnv or assertionFile '
            "(where the workload's identity JWT is)"
        )


async def machine_tokens(
    http: httpx.AsyncClient,
    discovery: Discovery,
    *,
    server: str,
    grant: str,
    scope: str | None,
    settings: ClientSettings,
    assertion: Assertion,
    dpop: DPoPProver | None,
) -> Tokens:
    """Tokens from the token endpoint by ``grant`` (one of ``MACHINE_GRANTS``).

    Raises:
        OAuthError: the config lacks what the grant needs, or the endpoint refused it.
    """
    client = configured_identity(settings, discovery, None)
    scoped = {"scope": scope} if scope else {}
    if grant == "jwt_bearer":
        form = {"grant_type": JWT_BEARER, "assertion": assertion.read(server)} | scoped
    elif client is None or client.auth_method == "none":
        raise OAuthError(
            f"{server}: the client_credentials grant needs clientId with "
            "clientSecretEnv or privateKeyEnv"
        )
    else:
        form = {"grant_type": "client_credentials"} | scoped
    return await request_tokens(
        http,
        discovery,
        client,
        form,
        requested_scope=scope,
        private_key=settings.private_key,
        dpop=dpop,
    )
