"""The official conformance suite's client leg, driven by mcpx's upstream client.

The suite runs ``<this command> <server url>`` once per scenario with
``MCP_CONFORMANCE_SCENARIO``, ``MCP_CONFORMANCE_PROTOCOL_VERSION`` and, for some,
``MCP_CONFORMANCE_CONTEXT`` (JSON) set; the scenario passes when the client does what
it asks and exits 0. The revision decides the era: 2026-07-28 is the stateless modern
wire (``force-discover``), anything older the initialize handshake offering that
revision (``force-initialize`` with ``spec.first``).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

import anyio
import httpx

from mcpx.client import QuestionOrigin, Session, open_session
from mcpx.config import ServerConfig, resolve
from mcpx.oauth import LoginNeeded, MemoryStore

log = logging.getLogger("conformance-driver")


class Host:
    """A host that answers what the scenarios ask: elicitation accepted with the
    schema's defaults (SEP-1034), sampling with a fixed text, no roots."""

    def capabilities(self, revision: str) -> dict[str, Any]:
        return {"elicitation": {}, "sampling": {}, "roots": {}}

    async def answer(
        self, method: str, params: dict[str, Any], asked: QuestionOrigin
    ) -> dict[str, Any]:
        if method == "elicitation/create":
            props = (params.get("requestedSchema") or {}).get("properties") or {}
            content = {k: v["default"] for k, v in props.items() if "default" in v}
            return {"action": "accept", "content": content}
        if method == "sampling/createMessage":
            return {
                "role": "assistant",
                "content": {"type": "text", "text": "conformance"},
                "model": "mcpx-driver",
            }
        if method == "roots/list":
            return {"roots": []}
        return {}


class HeadlessBrowser:
    """An ``Authorizer`` standing in for a person: it opens the authorization URL without
    following the redirect, and answers with the URL the server redirected to."""

    async def authorize(self, authorization_url: str, redirect_uri: str) -> str:
        async with httpx.AsyncClient(follow_redirects=False, timeout=30) as http:
            response = await http.get(authorization_url)
        location = response.headers.get("Location")
        if response.status_code not in (301, 302, 303, 307, 308) or not location:
            raise LoginNeeded("conformance", f"authorization answered HTTP {response.status_code}")
        return str(response.url.join(location))


def auth_block(scenario: str, context: dict[str, Any]) -> dict[str, object] | None:
    """The server's auth block as a user would write it for this scenario, with what
    the suite hands over in MCP_CONFORMANCE_CONTEXT (pre-registered client, keys, the
    workload JWT, the enterprise IdP and the user's ID token there). DPoP needs no key
    here: mcpx uses it when the server offers it."""
    if not scenario.startswith("auth/"):
        return None
    block: dict[str, object] = {"type": "oauth"}
    if scenario == "auth/basic-cimd":
        block["clientMetadataUrl"] = "https://conformance-test.local/client-metadata.json"
    if "client_id" in context:
        block["clientId"] = context["client_id"]
    if "client_secret" in context:
        os.environ["MCPX_CONFORMANCE_SECRET"] = context["client_secret"]
        block["clientSecretEnv"] = "MCPX_CONFORMANCE_SECRET"
    if "private_key_pem" in context:
        os.environ["MCPX_CONFORMANCE_KEY"] = context["private_key_pem"]
        block["privateKeyEnv"] = "MCPX_CONFORMANCE_KEY"
    if scenario.startswith("auth/client-credentials"):
        block["grant"] = "client_credentials"
    if "valid_jwt" in context:  # the workload's identity token (SEP-1933)
        os.environ["MCPX_CONFORMANCE_ASSERTION"] = context["valid_jwt"]
        block |= {"grant": "jwt_bearer", "assertionEnv": "MCPX_CONFORMANCE_ASSERTION"}
    if "idp_id_token" in context:  # the user's ID token from the enterprise IdP (SEP-990)
        os.environ["MCPX_CONFORMANCE_ID_TOKEN"] = context["idp_id_token"]
        idp = {"clientId": context["idp_client_id"], "idTokenEnv": "MCPX_CONFORMANCE_ID_TOKEN"}
        # As a user would: the IdP by its issuer (its metadata names the token endpoint).
        block |= {"grant": "enterprise", "idp": idp | {"issuer": context["idp_issuer"]}}
    return block


async def exercise(session: Session, scenario: str, context: dict[str, Any]) -> None:
    tools = await session.list_tools()
    names = [t["name"] for t in tools]
    log.info("tools: %s", names)
    if scenario == "initialize":
        return
    if scenario == "tools_call":
        await session.call_tool("add_numbers", {"a": 5, "b": 3})
        return
    if scenario == "sse-retry":
        await session.call_tool("test_reconnection", {})
        return
    if scenario == "elicitation-sep1034-client-defaults":
        await session.call_tool("test_client_elicitation_defaults", {})
        return
    if scenario == "json-schema-2020-12-preservation":
        # The focal tool's inputSchema, as mcpx's client received it, echoed back verbatim:
        # the scenario checks that its 2020-12 keywords came through intact.
        focal = next(t for t in tools if t["name"] == "json_schema_2020_12_tool")
        await session.call_tool("json_schema_echo", {"schema": focal["inputSchema"]})
        return
    calls = context.get("toolCalls")
    if calls:
        for call in calls:
            await session.call_tool(call["name"], call.get("arguments") or {})
        return
    # Every other scenario: use the whole surface it offers.
    for name in names:
        await session.call_tool(name, {})
    await _browse(session)


async def _browse(session: Session) -> None:
    caps = session.negotiated.capabilities if session.negotiated else {}
    if "resources" in caps:
        resources = await session.list_resources()
        if resources:
            await session.read_resource(resources[0]["uri"])
    if "prompts" in caps:
        prompts = await session.list_prompts()
        if prompts:
            await session.get_prompt(prompts[0]["name"])


async def main(url: str) -> None:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    revision = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "2025-11-25")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    flags = {"upstream.eraCache": "false"}
    if revision == "2026-07-28":
        flags["upstream.protocol"] = "force-discover"
    else:
        flags |= {"upstream.protocol": "force-initialize", "spec.first": revision}
    settings = resolve(file=None, env={}, flags=flags)
    server = ServerConfig(
        name="conformance", transport="http", url=url, auth=auth_block(scenario, context)
    )
    with anyio.fail_after(50):
        async with open_session(
            server,
            settings,
            handler=Host(),
            oauth_store=MemoryStore(),
            authorizer=HeadlessBrowser(),
        ) as session:
            await exercise(session, scenario, context)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    anyio.run(main, sys.argv[-1])
