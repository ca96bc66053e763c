"""Shared by the encrypted-run tests: keys, an encrypting client, a run with sentinels."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client

from durable_tools import ToolRegistry
from durable_tools.codec import EncryptionCodec, KeyRing, data_converter
from support import answer, calls, write_script

KEY = bytes(range(7, 39))
PROMPT = "PROMPT-SENTINEL please look up the vault"
ARGUMENT = "ARGUMENT-SENTINEL-vault-7"
RESULT = "RESULT-SENTINEL-code-4242"
ANSWER = "ANSWER-SENTINEL all done"
SENTINELS = [b"PROMPT-SENTINEL", b"ARGUMENT-SENTINEL", b"RESULT-SENTINEL", b"ANSWER-SENTINEL"]


def codec() -> EncryptionCodec:
    return EncryptionCodec(KeyRing({"test-key-1": KEY}))


async def encrypting_client(plain: Client) -> Client:
    """A client to the same server and namespace that encrypts every payload."""
    return await Client.connect(
        plain.service_client.config.target_host,
        namespace=plain.namespace,
        data_converter=data_converter(codec()),
    )


def vault_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def lookup(name: str) -> str:
        """Look a name up in the vault."""
        return RESULT if name == ARGUMENT else "unknown"

    return registry


def vault_model(directory: Path) -> str:
    return write_script(directory, [calls(("c1", "lookup", {"name": ARGUMENT})), answer(ANSWER)])
