"""Where large tool outputs go instead of the workflow history.

Temporal refuses payloads over 2 MB and histories over 50 MB, so a big output is
written here and the history keeps an `ArtifactRef`: uri, size and digest. Stores
are content-addressed by sha256, so writing the same output twice (a retried
attempt) is harmless and yields the same reference.

`DURABLE_TOOLS_ARTIFACTS` picks the store: a directory (the default, under
`DURABLE_TOOLS_HOME`) or `s3://bucket/prefix` for workers on several machines
(`S3ArtifactStore`, the `s3` extra).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
import threading
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import unquote, urlparse

from ._results import ArtifactRef, is_sha256_hex

__all__ = [
    "ARTIFACTS_ENV",
    "ArtifactStore",
    "FileSystemArtifactStore",
    "InMemoryArtifactStore",
    "artifact_store_at",
    "default_artifact_root",
    "default_artifact_store",
    "fetch_artifact",
    "ref_from_uri",
    "store_for_ref",
]

ARTIFACTS_ENV = "DURABLE_TOOLS_ARTIFACTS"
HOME_ENV = "DURABLE_TOOLS_HOME"
"""Environment variable naming the default artifact directory."""


@runtime_checkable
class ArtifactStore(Protocol):
    """Keeps bytes out of band and hands back a reference to them."""

    def put(self, data: bytes, media_type: str = "application/octet-stream") -> ArtifactRef:
        """Store `data` and return its reference. Idempotent for equal content."""
        ...

    def get(self, ref: ArtifactRef) -> bytes:
        """The bytes behind a reference.

        Raises:
            KeyError: the store does not hold the artifact.
        """
        ...


def _is_s3(location: str) -> bool:
    return location.startswith("s3://")


def default_artifact_root() -> Path:
    """`$DURABLE_TOOLS_ARTIFACTS` (a directory), else `artifacts` under the project home.

    The home is `$DURABLE_TOOLS_HOME`, else `~/.durable-tools`: the same place as the
    embedded server's data (`durable_tools.server.default_data_dir`, not imported here
    because the tool layer does not depend on Temporal). A default under the current
    directory would scatter artifacts wherever a worker happened to start, and a worker
    started elsewhere could not read them back.
    """
    explicit = os.environ.get(ARTIFACTS_ENV)
    if explicit and not _is_s3(explicit):
        if explicit.startswith("file://"):
            return Path(unquote(urlparse(explicit).path))
        return Path(explicit).expanduser()
    home = os.environ.get(HOME_ENV)
    return (Path(home).expanduser() if home else Path.home() / ".durable-tools") / "artifacts"


def default_artifact_store() -> ArtifactStore:
    """The store `$DURABLE_TOOLS_ARTIFACTS` names.

    `s3://bucket/prefix` gives an `S3ArtifactStore` (endpoint from
    `$DURABLE_TOOLS_S3_ENDPOINT` or `$AWS_ENDPOINT_URL`); anything else a filesystem store
    at `default_artifact_root()`.
    """
    explicit = os.environ.get(ARTIFACTS_ENV, "")
    if _is_s3(explicit):
        return artifact_store_at(explicit)
    return FileSystemArtifactStore()


def artifact_store_at(location: str) -> ArtifactStore:
    """The store at `location`: `s3://bucket/prefix`, a `file://` URL or a directory."""
    if not _is_s3(location):
        if location.startswith("file://"):
            return FileSystemArtifactStore(Path(unquote(urlparse(location).path)))
        return FileSystemArtifactStore(Path(location).expanduser())
    from ._s3_artifacts import S3ArtifactStore

    return S3ArtifactStore(location)


def ref_from_uri(uri: str, media_type: str = "application/octet-stream") -> ArtifactRef:
    """A reference from an artifact's URI (as printed in a truncated output) or digest.

    Every store names an artifact by its sha256, the last part of its URI, so the URI
    alone is enough to find and check it. The size is unknown here (0).

    Raises:
        ValueError: the text ends in no sha256.
    """
    digest = uri.rstrip("/").rsplit("/", 1)[-1].lower()
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"not an artifact reference (a URI ending in a sha256): {uri!r}")
    return ArtifactRef(uri=uri, size=0, sha256=digest, media_type=media_type)


def store_for_ref(ref: ArtifactRef) -> ArtifactStore:
    """The store a reference points into: its S3 bucket and prefix, its directory, or
    (for a bare digest or a `memory://` URI) `default_artifact_store()`."""
    parsed = urlparse(ref.uri)
    tail = f"/{ref.sha256[:2]}/{ref.sha256}"
    if parsed.scheme == "s3" and ref.uri.endswith(tail):
        return artifact_store_at(ref.uri.removesuffix(tail))
    if parsed.scheme == "file":
        return FileSystemArtifactStore(Path(unquote(parsed.path)).parent.parent)
    return default_artifact_store()


async def fetch_artifact(ref: ArtifactRef, store: ArtifactStore | None = None) -> bytes:
    """The bytes behind `ref`, read without blocking the event loop.

    Args:
        ref: The reference (see `ref_from_uri` for one from a URI).
        store: Where to read; default the store the reference points into.

    Raises:
        KeyError: the store does not hold the artifact, or it does not match its sha256.
    """
    if store is not None:
        return await _read(store, ref)
    own = store_for_ref(ref)
    try:
        return await _read(own, ref)
    finally:
        close = getattr(own, "close", None)
        if close is not None:  # a client made for this read (its thread, its connections)
            await asyncio.to_thread(close)


async def _read(store: ArtifactStore, ref: ArtifactRef) -> bytes:
    aget = getattr(store, "aget", None)
    if aget is not None:
        data: bytes = await aget(ref)
        return data
    return await asyncio.to_thread(store.get, ref)


class FileSystemArtifactStore:
    """Artifacts as files `root/ab/abcdef...` named by their sha256.

    Writes are atomic (a temporary file in the same directory, then a rename), so a
    worker that dies mid-write never leaves a truncated artifact under a valid name.

    Args:
        root: The directory; created on first write. Defaults to `default_artifact_root()`.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root) if root is not None else default_artifact_root()

    def _path(self, digest: str) -> Path:
        # A reference comes from history, a CLI argument or a URL: its digest names a file
        # here only when it is one (a digest of `/dev/zero` or `../x` would be a path).
        if not is_sha256_hex(digest):
            raise KeyError(f"{digest[:80]!r} is not a sha256 digest (64 lowercase hex digits)")
        return self.root / digest[:2] / digest

    def put(self, data: bytes, media_type: str = "application/octet-stream") -> ArtifactRef:
        """Store `data` under its sha256 and return a `file://` reference."""
        digest = hashlib.sha256(data).hexdigest()
        path = self._path(digest)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        return ArtifactRef(
            uri=path.resolve().as_uri(), size=len(data), sha256=digest, media_type=media_type
        )

    def get(self, ref: ArtifactRef) -> bytes:
        """Read an artifact, checking its digest.

        Raises:
            KeyError: the artifact is not in this store, or its content was altered.
        """
        path = self._path(ref.sha256)
        parsed = urlparse(ref.uri)
        if parsed.scheme == "file" and Path(unquote(parsed.path)) != path.resolve():
            raise KeyError(f"artifact {ref.uri} is not in the store at {self.root}")
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise KeyError(f"artifact {ref.uri} not found") from None
        if hashlib.sha256(data).hexdigest() != ref.sha256:
            raise KeyError(f"artifact {ref.uri} does not match its sha256")
        return data


class InMemoryArtifactStore:
    """A dict-backed store for tests and short-lived processes (`memory://<sha256>`)."""

    def __init__(self) -> None:
        self._items: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def put(self, data: bytes, media_type: str = "application/octet-stream") -> ArtifactRef:
        """Keep `data` in memory and return its reference."""
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            self._items[digest] = bytes(data)
        return ArtifactRef(
            uri=f"memory://{digest}", size=len(data), sha256=digest, media_type=media_type
        )

    def get(self, ref: ArtifactRef) -> bytes:
        """The bytes behind `ref`.

        Raises:
            KeyError: not stored here.
        """
        with self._lock:
            return self._items[ref.sha256]
