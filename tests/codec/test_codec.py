"""The payload codec: roundtrip, key rotation, tampering, passthrough, compression, keys."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload

from durable_tools.codec import (
    CodecError,
    CodecKeyError,
    EncryptionCodec,
    KeyRing,
    MalformedPayloadError,
    PayloadTooLargeError,
    data_converter,
    data_converter_from_env,
    key_provider_from_env,
)

OLD = bytes(range(32))
NEW = bytes(range(100, 132))
PLAIN = Payload(metadata={"encoding": b"json/plain"}, data=b'{"prompt": "the secret plan"}')


def b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


async def test_roundtrip_hides_data_and_encoding() -> None:
    codec = EncryptionCodec(KeyRing({"k1": OLD}))
    [sealed] = await codec.encode([PLAIN])
    assert b"secret plan" not in sealed.SerializeToString()
    assert b"json/plain" not in sealed.SerializeToString()
    assert sealed.metadata["encoding"] == b"binary/encrypted"
    assert sealed.metadata["encryption-key-id"] == b"k1"
    assert sealed.metadata["encryption-cipher"] == b"AES256GCM"
    assert "compression" not in sealed.metadata
    assert await codec.decode([sealed]) == [PLAIN]


async def test_nonces_differ_so_equal_payloads_look_different() -> None:
    codec = EncryptionCodec(KeyRing({"k1": OLD}))
    first, second = await codec.encode([PLAIN, PLAIN])
    assert first.data != second.data


async def test_rotation_new_payloads_use_new_key_old_ones_still_decrypt() -> None:
    [old_sealed] = await EncryptionCodec(KeyRing({"k1": OLD})).encode([PLAIN])
    rotated = EncryptionCodec(KeyRing({"k2": NEW, "k1": OLD}))
    [new_sealed] = await rotated.encode([PLAIN])
    assert new_sealed.metadata["encryption-key-id"] == b"k2"
    assert await rotated.decode([old_sealed, new_sealed]) == [PLAIN, PLAIN]


async def test_a_key_rotated_out_is_named_in_the_error() -> None:
    [sealed] = await EncryptionCodec(KeyRing({"k1": OLD})).encode([PLAIN])
    with pytest.raises(CodecError, match="no key with id 'k1'"):
        await EncryptionCodec(KeyRing({"k2": NEW})).decode([sealed])


async def test_tampered_data_fails_authentication() -> None:
    codec = EncryptionCodec(KeyRing({"k1": OLD}))
    [sealed] = await codec.encode([PLAIN])
    flipped = bytearray(sealed.data)
    flipped[-1] ^= 1
    tampered = Payload(metadata=dict(sealed.metadata), data=bytes(flipped))
    with pytest.raises(CodecError, match="failed authentication"):
        await codec.decode([tampered])


async def test_a_wrong_key_under_the_same_id_fails_authentication() -> None:
    [sealed] = await EncryptionCodec(KeyRing({"k1": OLD})).encode([PLAIN])
    with pytest.raises(CodecError, match="failed authentication"):
        await EncryptionCodec(KeyRing({"k1": NEW})).decode([sealed])


async def test_rewritten_metadata_fails_authentication() -> None:
    codec = EncryptionCodec(KeyRing({"k1": OLD}), compress=True)
    [sealed] = await codec.encode([PLAIN])
    stripped = Payload(metadata=dict(sealed.metadata), data=sealed.data)
    del stripped.metadata["compression"]  # claims "not compressed"
    with pytest.raises(CodecError, match="failed authentication"):
        await codec.decode([stripped])
    unknown = Payload(metadata=dict(sealed.metadata), data=sealed.data)
    unknown.metadata["encryption-cipher"] = b"ROT13"
    with pytest.raises(CodecError, match="cipher"):
        await codec.decode([unknown])


async def test_unencrypted_payloads_pass_through_decode() -> None:
    codec = EncryptionCodec(KeyRing({"k1": OLD}))
    assert await codec.decode([PLAIN]) == [PLAIN]


async def test_compression_shrinks_repetitive_payloads_and_roundtrips() -> None:
    big = Payload(metadata={"encoding": b"json/plain"}, data=b'"' + b"abc" * 10_000 + b'"')
    plain_codec = EncryptionCodec(KeyRing({"k1": OLD}))
    zip_codec = EncryptionCodec(KeyRing({"k1": OLD}), compress=True)
    [uncompressed] = await plain_codec.encode([big])
    [compressed] = await zip_codec.encode([big])
    assert compressed.metadata["compression"] == b"zlib"
    assert len(compressed.data) < len(uncompressed.data) // 10
    # Either codec reads both: the flag travels with the payload.
    assert await plain_codec.decode([compressed]) == [big]
    assert await zip_codec.decode([uncompressed]) == [big]


async def test_a_compressed_payload_cannot_inflate_past_the_bound() -> None:
    bomb = Payload(metadata={"encoding": b"binary/plain"}, data=bytes(4 * 1024 * 1024))
    writer = EncryptionCodec(KeyRing({"k1": OLD}), compress=True)
    [sealed] = await writer.encode([bomb])
    assert len(sealed.data) < 8 * 1024
    reader = EncryptionCodec(KeyRing({"k1": OLD}), max_decompressed_bytes=1024 * 1024)
    with pytest.raises(PayloadTooLargeError, match="inflates to more than 1048576 bytes"):
        await reader.decode([sealed])
    with pytest.raises(PayloadTooLargeError, match="more than 1000 bytes"):
        writer.decrypt(sealed, max_bytes=1000)
    assert await writer.decode([sealed]) == [bomb]  # within the default bound


@pytest.mark.parametrize("size", [0, 5, 11, 12, 27])
async def test_a_truncated_payload_is_malformed_not_a_crash(size: int) -> None:
    codec = EncryptionCodec(KeyRing({"k1": OLD}))
    [sealed] = await codec.encode([PLAIN])
    cut = Payload(metadata=dict(sealed.metadata), data=sealed.data[:size])
    with pytest.raises(MalformedPayloadError, match=f"truncated: {size} bytes"):
        await codec.decode([cut])


async def test_data_converter_roundtrips_pydantic_values_encrypted() -> None:
    converter = data_converter(EncryptionCodec(KeyRing({"k1": OLD})))
    payloads = await converter.encode(["the secret plan", {"n": 1}])
    assert all(p.metadata["encoding"] == b"binary/encrypted" for p in payloads)
    assert await converter.decode(payloads, [str, dict]) == ["the secret plan", {"n": 1}]


def test_keys_from_env_first_is_current() -> None:
    ring = key_provider_from_env({"DURABLE_TOOLS_CODEC_KEYS": f"new:{b64(NEW)}, old:{b64(OLD)}"})
    assert ring is not None
    assert ring.current() == ("new", NEW)
    assert ring.key("old") == OLD
    assert key_provider_from_env({}) is None


def test_key_files_json_and_toml(tmp_path: Path) -> None:
    as_json = tmp_path / "keys.json"
    as_json.write_text(json.dumps({"current": "b", "keys": {"a": b64(OLD), "b": b64(NEW)}}))
    as_toml = tmp_path / "keys.toml"
    as_toml.write_text(f'[keys]\na = "{b64(OLD)}"\nb = "{b64(NEW)}"\n')
    from_json = key_provider_from_env({"DURABLE_TOOLS_CODEC_KEY_FILE": str(as_json)})
    from_toml = KeyRing.from_file(as_toml)
    assert from_json is not None and from_json.current() == ("b", NEW)
    assert from_toml.current() == ("a", OLD) and from_toml.key("b") == NEW


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("k1", "not ID:BASE64KEY"),
        ("k1:not base64!", "not valid base64"),
        (f"k1:{b64(b'short')}", "must be 32 bytes"),
        (f"bad id:{b64(OLD)}", "invalid key id"),
        (f"k1:{b64(OLD)},k1:{b64(NEW)}", "appears twice"),
        ("", "no encryption keys"),
    ],
)
def test_bad_keys_are_refused_without_echoing_them(spec: str, message: str) -> None:
    with pytest.raises(CodecKeyError, match=message) as caught:
        KeyRing.parse(spec)
    assert b64(OLD) not in str(caught.value)


def test_configured_but_broken_keys_fail_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_TOOLS_CODEC_KEY_FILE", "/nonexistent/keys.json")
    with pytest.raises(CodecKeyError, match="cannot read key file"):
        data_converter_from_env()


class StaticKms:
    """What a KMS provider looks like: data keys unwrapped once, answered from memory."""

    def current(self) -> tuple[str, bytes]:
        return "kms-1", NEW

    def key(self, key_id: str) -> bytes | None:
        return NEW if key_id == "kms-1" else None


async def test_a_key_provider_hook_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DURABLE_TOOLS_CODEC_KEYS", raising=False)
    monkeypatch.setenv("DURABLE_TOOLS_CODEC_KEY_PROVIDER", f"{__name__}:StaticKms")
    converter = data_converter_from_env()
    assert converter is not None and converter.payload_codec is not None
    [sealed] = await converter.payload_codec.encode([PLAIN])
    assert sealed.metadata["encryption-key-id"] == b"kms-1"
    assert repr(KeyRing({"k1": OLD})) == "KeyRing(current='k1', key_ids=('k1',))"
