"""The content-addressed filesystem artifact store."""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import os
from pathlib import Path

import pytest

from durable_tools import ArtifactRef
from durable_tools.tools import (
    ArtifactStore,
    FileSystemArtifactStore,
    InMemoryArtifactStore,
    default_artifact_store,
)
from durable_tools.tools._artifacts import ARTIFACTS_ENV


def test_put_and_get_are_content_addressed(tmp_path: Path) -> None:
    store = FileSystemArtifactStore(tmp_path)
    data = b"hello artifacts"
    digest = hashlib.sha256(data).hexdigest()
    ref = store.put(data, "text/plain")
    path = tmp_path / digest[:2] / digest
    assert path.read_bytes() == data
    assert ref == ArtifactRef(
        uri=path.resolve().as_uri(), size=len(data), sha256=digest, media_type="text/plain"
    )
    assert ref.uri.startswith("file://")
    assert store.get(ref) == data
    assert store.put(data, "text/plain") == ref  # idempotent, e.g. for a retried attempt
    assert [p.name for p in path.parent.iterdir()] == [digest]  # no temp files left


def test_get_refuses_missing_foreign_and_altered_artifacts(tmp_path: Path) -> None:
    store = FileSystemArtifactStore(tmp_path / "a")
    ref = store.put(b"data")
    with pytest.raises(KeyError, match="not in the store"):
        FileSystemArtifactStore(tmp_path / "b").get(ref)
    other = FileSystemArtifactStore(tmp_path / "a")
    missing = ref.model_copy(update={"sha256": "0" * 64, "uri": "memory://x"})
    with pytest.raises(KeyError, match="not found"):
        other.get(missing)
    Path(ref.uri.removeprefix("file://")).write_bytes(b"tampered")
    with pytest.raises(KeyError, match="sha256"):
        store.get(ref)


def test_default_root_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ARTIFACTS_ENV, str(tmp_path / "env-root"))
    store = default_artifact_store()
    assert store.root == tmp_path / "env-root"
    monkeypatch.delenv(ARTIFACTS_ENV)
    # Without it: under the project home, where the server keeps its data, not under
    # whatever directory the worker started in.
    monkeypatch.setenv("DURABLE_TOOLS_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert FileSystemArtifactStore().root == tmp_path / "home" / "artifacts"
    monkeypatch.delenv("DURABLE_TOOLS_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert default_artifact_store().root == tmp_path / "user" / ".durable-tools" / "artifacts"


def test_stores_satisfy_the_protocol(tmp_path: Path) -> None:
    assert isinstance(FileSystemArtifactStore(tmp_path), ArtifactStore)
    memory = InMemoryArtifactStore()
    assert isinstance(memory, ArtifactStore)
    ref = memory.put(b"x", "application/json")
    assert memory.get(ref) == b"x" and ref.uri.startswith("memory://")


def test_a_digest_that_is_a_path_is_refused_without_reading_it(tmp_path: Path) -> None:
    # Broke: the digest was joined to the root as it came, so `/dev/zero` (or a FIFO, or
    # `/etc/hostname`) was opened and read whole before the digest check refused it.
    store = FileSystemArtifactStore(tmp_path / "store")
    known = store.put(b"known")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reading = concurrent.futures.ThreadPoolExecutor(1)
    try:
        # A bare path as the URI, as a reference read from elsewhere may carry.
        forged = known.model_copy(update={"sha256": str(fifo), "uri": str(fifo)})
        attempt = reading.submit(store.get, forged)
        try:
            attempt.result(timeout=10)  # never answers while the FIFO has no writer
        except KeyError as refused:
            assert "not a sha256 digest" in str(refused)
        else:
            raise AssertionError("a FIFO's path was accepted as a digest")
    finally:
        with contextlib.suppress(OSError):  # frees a stuck reader (none: ENXIO)
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reading.shutdown()
    for digest in ("/etc/hostname", "../" + known.sha256, known.sha256.upper(), ""):
        with pytest.raises(KeyError, match="not a sha256 digest"):
            store.get(known.model_copy(update={"sha256": digest, "uri": digest}))
    assert store.get(known) == b"known"
