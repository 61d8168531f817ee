"""DPoP (RFC 9449, SEP-1932): access tokens bound to a key only mcpx holds.

Each ``OAuthClient`` has a ``DPoPProver``: an EC P-256 key made with it, which tokens
granted with its proofs keep (``Tokens.dpop_key``, in ``<state>/oauth.db`` like the
tokens): whoever uses those tokens, a restarted daemon or another client of the same
sign-in, proves with the key they are bound to (``adopt``). It is used when the
authorization server lists ES256 in
``dpop_signing_alg_values_supported``: token requests carry a proof (§5), and a token
granted with ``token_type`` DPoP goes to the resource as ``Authorization: DPoP <token>``
with a fresh proof on every request, ``ath`` the token's hash (§7). A server's nonce
(``DPoP-Nonce``, §8 / §9) is remembered per origin and put in every later proof there;
a ``use_dpop_nonce`` refusal is answered by sending again once, with the nonce.
pyjwt signs, cryptography makes the key and pyjwt exports its public JWK.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import re
import secrets
import time
from collections.abc import Mapping
from typing import Any, Final

import httpx
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from mcpx.transport import origin_of

__all__ = ["DPoPProver", "access_token_hash", "dpop_post", "htu_of", "nonce_challenge"]

ALGORITHM: Final = "ES256"
_NONCE_ERROR: Final = "use_dpop_nonce"
# A 401's challenge asking for a nonce (RFC 9449 §9): DPoP error="use_dpop_nonce".
_DPOP_SCHEME: Final = re.compile(r"(?:^|,)\s*DPoP\b", re.IGNORECASE)
_NONCE_CHALLENGE: Final = re.compile(r'\berror\s*=\s*"?use_dpop_nonce\b')


def htu_of(url: str | httpx.URL) -> str:
    """The ``htu`` claim: the request URI without query and fragment (§4.2)."""
    return str(httpx.URL(url).copy_with(query=None, fragment=None))


def access_token_hash(access_token: str) -> str:
    """The ``ath`` claim: base64url (no padding) of the token's SHA-256 (§4.2)."""
    digest = hashlib.sha256(access_token.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class DPoPProver:
    """One client's DPoP key, its proofs, and the nonces servers handed it."""

    def __init__(self, *, used: bool = True) -> None:
        self.used = used  # False: no proofs at all (plain Bearer tokens)
        self._nonces: dict[tuple[str, str, int | None], str] = {}
        self._use(ec.generate_private_key(ec.SECP256R1()))

    def _use(self, key: ec.EllipticCurvePrivateKey) -> None:
        self._key = key
        self.public_jwk: dict[str, Any] = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
        self.pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode("ascii")

    def adopt(self, pem: str) -> None:
        """Prove with the key ``pem`` from now on (the one tokens were bound to).

        Raises:
            ValueError: it is not a P-256 private key.
        """
        if pem == self.pem:
            return
        key = serialization.load_pem_private_key(pem.encode("ascii"), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
            raise ValueError("a DPoP key must be an EC P-256 private key")
        self._use(key)

    def __repr__(self) -> str:
        return f"DPoPProver(kty=EC, crv=P-256, nonces={len(self._nonces)})"

    def offered_by(self, metadata: Mapping[str, Any]) -> bool:
        """Whether an authorization server's metadata offers DPoP with our algorithm (and
        this prover is used)."""
        algs = metadata.get("dpop_signing_alg_values_supported")
        return self.used and isinstance(algs, list) and ALGORITHM in algs

    def proof(self, method: str, url: str | httpx.URL, *, access_token: str | None = None) -> str:
        """A fresh proof JWT for one request (§4.2); with ``ath`` for a resource request."""
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(24),
            "htm": method.upper(),
            "htu": htu_of(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        nonce = self._nonces.get(origin_of(httpx.URL(url)))
        if nonce is not None:
            claims["nonce"] = nonce
        headers = {"typ": "dpop+jwt", "jwk": self.public_jwk}
        return jwt.encode(claims, self._key, algorithm=ALGORITHM, headers=headers)

    def nonce_for(self, url: str | httpx.URL) -> str | None:
        return self._nonces.get(origin_of(httpx.URL(url)))

    def remember(self, response: httpx.Response) -> bool:
        """Keeps the nonce a response hands over (§8.2 / §9: any answer may); True when
        it is a new one."""
        nonce = response.headers.get("DPoP-Nonce")
        if not nonce:
            return False
        origin = origin_of(response.request.url)
        if self._nonces.get(origin) == nonce:
            return False
        self._nonces[origin] = nonce
        return True


def nonce_challenge(response: httpx.Response) -> bool:
    """A resource's 401 ``WWW-Authenticate: DPoP error="use_dpop_nonce"`` (§9)."""
    challenge = response.headers.get("WWW-Authenticate") or ""
    return (
        response.status_code == 401
        and bool(_DPOP_SCHEME.search(challenge))
        and bool(_NONCE_CHALLENGE.search(challenge))
    )


def _error_of(response: httpx.Response) -> object:
    with contextlib.suppress(ValueError):
        body = response.json()
        return body.get("error") if isinstance(body, dict) else None
    return None


async def dpop_post(
    http: httpx.AsyncClient,
    prover: DPoPProver,
    url: str,
    data: Mapping[str, str],
    headers: Mapping[str, str],
) -> httpx.Response:
    """A token request with a proof; sent again once, with the nonce, when the
    authorization server answers 400 ``use_dpop_nonce`` and a new ``DPoP-Nonce`` (§8)."""
    response = await http.post(
        url, data=data, headers={**headers, "DPoP": prover.proof("POST", url)}
    )
    new_nonce = prover.remember(response)
    if response.status_code == 400 and new_nonce and _error_of(response) == _NONCE_ERROR:
        response = await http.post(
            url, data=data, headers={**headers, "DPoP": prover.proof("POST", url)}
        )
        prover.remember(response)
    return response
