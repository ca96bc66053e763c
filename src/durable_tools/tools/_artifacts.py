"""Where large tool outputs go instead of the workflow history.

Temporal refuses payloads over 2 MB and histories over 50 MB, so a big output is
written here and the history keeps an `ArtifactRef`: uri, size and digest. Stores
are content-addressed by sha256, so writing the same output twice (a retried
attempt) is harmless and yields the same reference.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import unquote, urlparse

from ._results import ArtifactRef

__all__ = [
    "ARTIFACTS_ENV",
    "ArtifactStore",
    "FileSystemArtifactStore",
    "InMemoryArtifactStore",
    "default_artifact_root",
    "default_artifact_store",
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


def default_artifact_root() -> Path:
    """`$DURABLE_TOOLS_ARTIFACTS`, else `artifacts` under the project home.

    The home is `$DURABLE_TOOLS_HOME`, else `~/.durable-tools`: the same place as the
    embedded server's data (`durable_tools.server.default_data_dir`, not imported here
    because the tool layer does not depend on Temporal). A default under the current
    directory would scatter artifacts wherever a worker happened to start, and a worker
    started elsewhere could not read them back.
    """
    explicit = os.environ.get(ARTIFACTS_ENV)
    if explicit:
        return Path(explicit).expanduser()
    home = os.environ.get(HOME_ENV)
    return (Path(home).expanduser() if home else Path.home() / ".durable-tools") / "artifacts"


def default_artifact_store() -> FileSystemArtifactStore:
    """A filesystem store at `default_artifact_root()`."""
    return FileSystemArtifactStore()


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
