"""A JWT mcpx presents and does not make: a workload's identity token (the JWT-bearer
grant's assertion), a user's ID token for the enterprise IdP. Read where the config says
at each use, never kept, never shown."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ._errors import OAuthError

__all__ = ["Assertion"]


@dataclass(frozen=True)
class Assertion:
    """Where a JWT mcpx presents is: an environment variable's name or a file's path,
    under the block's ``<key>Env`` and ``<key>File`` (``key`` as the config spells it)."""

    env_var: str | None = None
    file: str | None = None
    environ: Mapping[str, str] | None = None
    key: str = "assertion"
    what: str = "the workload's identity JWT"

    @classmethod
    def from_block(
        cls,
        block: Mapping[str, object],
        environ: Mapping[str, str],
        key: str = "assertion",
        what: str = "the workload's identity JWT",
    ) -> Assertion:
        env_var, file = block.get(f"{key}Env"), block.get(f"{key}File")
        return cls(
            env_var if isinstance(env_var, str) else None,
            file if isinstance(file, str) else None,
            environ,
            key,
            what,
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
                    f"{server}: auth {self.key}Env names {self.env_var}, which is not set "
                    f"(it should hold {self.what})"
                )
            return value
        if self.file is not None:
            try:
                value = Path(self.file).expanduser().read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise OAuthError(
                    f"{server}: auth {self.key}File {self.file} cannot be read "
                    f"({exc.strerror or type(exc).__name__})"
                ) from None
            if not value:
                raise OAuthError(f"{server}: auth {self.key}File {self.file} is empty")
            return value
        raise OAuthError(
            f"{server}: auth needs {self.key}Env or {self.key}File (where {self.what} is)"
        )
