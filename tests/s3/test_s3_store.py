"""The S3 artifact store against a real S3-compatible server (moto, over HTTP)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from s3_support import raw_client

from durable_tools import Message
from durable_tools._activities._conversation import ConversationSnapshots, SnapshotMissing
from durable_tools.cli import main
from durable_tools.testing import ArtifactStoreKit
from durable_tools.tools import FileSystemArtifactStore, default_artifact_store, format_result
from durable_tools.tools._artifacts import fetch_artifact, ref_from_uri
from durable_tools.tools._formatting import to_tool_result
from durable_tools.tools._s3_artifacts import S3ArtifactStore, parse_s3_url

# Every byte value, and more than one network read's worth.
DATA = bytes(range(256)) * 4096


@pytest.fixture
def store(s3_url: str) -> Iterator[S3ArtifactStore]:
    store = S3ArtifactStore(s3_url)
    yield store
    store.close()


def _keys(s3_env: dict[str, str], url: str) -> list[str]:
    bucket, prefix = parse_s3_url(url)
    listed = raw_client(s3_env).list_objects_v2(Bucket=bucket, Prefix=prefix)
    return [item["Key"] for item in listed.get("Contents", [])]


def test_put_is_content_addressed_and_idempotent(
    store: S3ArtifactStore, s3_url: str, s3_env: dict[str, str]
) -> None:
    digest = hashlib.sha256(DATA).hexdigest()
    first = store.put(DATA, "application/x-test")
    again = store.put(DATA, "application/x-test")
    assert first == again
    assert first.sha256 == digest and first.size == len(DATA)
    assert first.uri == f"{s3_url}/{digest[:2]}/{digest}"
    assert _keys(s3_env, s3_url) == [f"runs/{digest[:2]}/{digest}"]
    assert store.get(first) == DATA


def test_another_process_reads_what_one_wrote(s3_url: str) -> None:
    # Two store objects share nothing but the bucket: as two worker machines would.
    writer, reader = S3ArtifactStore(s3_url), S3ArtifactStore(s3_url)
    try:
        ref = writer.put(b"written on machine A")
        assert reader.get(ref) == b"written on machine A"
    finally:
        writer.close()
        reader.close()


def test_get_checks_the_digest(store: S3ArtifactStore, s3_url: str, s3_env: dict[str, str]) -> None:
    ref = store.put(b"the real content")
    bucket, _ = parse_s3_url(s3_url)
    key = _keys(s3_env, s3_url)[0]
    raw_client(s3_env).put_object(Bucket=bucket, Key=key, Body=b"tampered")
    with pytest.raises(KeyError, match="does not match its sha256"):
        store.get(ref)


def test_a_missing_artifact_is_a_key_error(store: S3ArtifactStore) -> None:
    ref = ref_from_uri("s3://elsewhere/" + "ab" * 32)
    with pytest.raises(KeyError, match="not found"):
        store.get(ref)


async def test_async_faces_do_not_need_the_calling_loop(store: S3ArtifactStore) -> None:
    ref = await store.aput(DATA)
    assert await store.aget(ref) == DATA
    assert await fetch_artifact(ref, store) == DATA
    # Without a store, the reference says where to look (a client of its own, closed after).
    assert await fetch_artifact(ref) == DATA


def test_the_environment_selects_the_s3_store(
    s3_url: str, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DURABLE_TOOLS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DURABLE_TOOLS_ARTIFACTS", s3_url)
    store = default_artifact_store()
    assert isinstance(store, S3ArtifactStore)
    assert store.root == s3_url and store.endpoint_url == s3_endpoint
    monkeypatch.setenv("DURABLE_TOOLS_ARTIFACTS", str(tmp_path / "dir"))
    assert isinstance(default_artifact_store(), FileSystemArtifactStore)


def test_bad_urls_are_refused() -> None:
    for url in ("s3://", "s3:///prefix", "http://bucket/x", "s3://user:pw@bucket/x"):
        with pytest.raises(ValueError, match="S3 URL"):
            S3ArtifactStore(url)


def test_credentials_never_show(store: S3ArtifactStore, s3_env: dict[str, str]) -> None:
    shown = repr(store) + store.root
    try:
        store.get(ref_from_uri("0" * 64))
    except KeyError as error:
        shown += str(error)
    assert s3_env["AWS_SECRET_ACCESS_KEY"] not in shown
    assert s3_env["AWS_ACCESS_KEY_ID"] not in shown


def test_a_large_tool_output_goes_to_s3(store: S3ArtifactStore) -> None:
    text = "row,value\n" + "".join(f"{i},{i * i}\n" for i in range(20_000))
    outcome = format_result(
        to_tool_result(text), call_id="c1", tool_name="report", limit_bytes=2000, store=store
    )
    [ref] = outcome.artifacts
    assert ref.uri.startswith("s3://") and ref.uri in outcome.content
    assert store.get(ref).decode() == text


def test_conversation_snapshots_are_shared_through_s3(s3_url: str) -> None:
    first, second = S3ArtifactStore(s3_url), S3ArtifactStore(s3_url)
    try:
        on_a = ConversationSnapshots(first)
        messages = [Message(role="user", content="hello"), Message(role="assistant", content="hi")]
        ref = on_a.save(None, [], messages)
        # Worker B has an empty cache: it reads the chain from the bucket.
        assert ConversationSnapshots(second).load(ref, 2) == messages
        with pytest.raises(SnapshotMissing):
            ConversationSnapshots(second).load(ref_from_uri(s3_url + "/" + "cd" * 32), 1)
    finally:
        first.close()
        second.close()


def test_cli_artifact_get(
    store: S3ArtifactStore, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    ref = store.put(DATA)
    target = tmp_path / "out.bin"
    assert main(["artifact", "get", ref.uri, "-o", str(target)]) == 0
    assert target.read_bytes() == DATA
    assert main(["artifact", "get", ref.uri]) == 0
    assert capsysbinary.readouterr().out == DATA
    missing = ref.uri[:-64] + "f" * 64
    assert main(["artifact", "get", missing]) == 1
    assert b"not found" in capsysbinary.readouterr().err
    assert main(["artifact", "get", "not-a-ref"]) == 2


@pytest.mark.parametrize("check", ArtifactStoreKit.checks())
async def test_the_s3_store_conforms(check: str, s3_url: str) -> None:
    # Stores made by the factory share the bucket, as two worker machines would.
    await ArtifactStoreKit(lambda: S3ArtifactStore(s3_url), shared=True).run(check)
