"""An artifact store on S3 (or any S3-compatible server): one store for many machines.

Workers on several machines cannot share `FileSystemArtifactStore` without a shared
filesystem. With `DURABLE_TOOLS_ARTIFACTS=s3://bucket/prefix` they share a bucket
instead: large tool outputs and conversation snapshots written by one worker are read
by any other. Objects are content-addressed like the file store's files
(`prefix/ab/abcdef...` for sha256 `abcdef...`), so a retried write of the same output
lands on the same key, and every read checks the digest.

The client is aiobotocore (async, from the aio-libs project, on botocore). The store's
interface is synchronous (`format_result` and the conversation snapshots call it from
worker threads), so the store owns one event loop in a daemon thread, one client on
that loop, and both faces submit to it: `put`/`get` block the calling thread, while
`aput`/`aget` await from any event loop. Credentials come from botocore's usual chain
(`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, profiles, instance roles); this module
never reads, logs or shows them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import importlib.util
import os
import threading
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlparse

from durable_tools._extras import MissingExtraError, install_hint

from ._results import ArtifactRef, is_sha256_hex

if TYPE_CHECKING:
    from types_aiobotocore_s3 import S3Client

__all__ = ["ENDPOINT_ENV", "S3ArtifactStore", "parse_s3_url"]

ENDPOINT_ENV = "DURABLE_TOOLS_S3_ENDPOINT"
"""The S3 endpoint (e.g. `http://127.0.0.1:9000` for MinIO); `AWS_ENDPOINT_URL` also works."""
_REGION_ENVS = ("DURABLE_TOOLS_S3_REGION", "AWS_REGION", "AWS_DEFAULT_REGION")
_DEFAULT_REGION = "us-east-1"  # S3 signs requests for a region; any works for most servers

T = TypeVar("T")


def parse_s3_url(url: str) -> tuple[str, str]:
    """`s3://bucket/some/prefix` -> `("bucket", "some/prefix")` (the prefix may be empty).

    Raises:
        ValueError: not an `s3://` URL with a bucket.
    """
    parsed = urlparse(url)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise ValueError(f"not an S3 URL (s3://bucket/prefix): {url!r}")
    if parsed.query or parsed.fragment or "@" in parsed.netloc:
        raise ValueError(f"an S3 URL takes only a bucket and a prefix: {url!r}")
    return parsed.netloc, parsed.path.strip("/")


class S3ArtifactStore:
    """Artifacts as S3 objects `prefix/ab/abcdef...` named by their sha256.

    Args:
        url: `s3://bucket` or `s3://bucket/prefix`. The bucket must exist.
        endpoint_url: An S3-compatible server; default `$DURABLE_TOOLS_S3_ENDPOINT`, else
            `$AWS_ENDPOINT_URL`, else AWS. With an endpoint, requests use path-style
            addressing (`endpoint/bucket/key`), which every S3-compatible server accepts.
        region: Default `$DURABLE_TOOLS_S3_REGION`, `$AWS_REGION`, `$AWS_DEFAULT_REGION`,
            else `us-east-1`.
        max_attempts: botocore's attempts per request (standard retry mode: throttling,
            5xx and connection errors are retried with backoff).

    Raises:
        ValueError: `url` is not `s3://bucket[/prefix]`.
        ImportError: aiobotocore is not installed (`pip install 'durable-tools[s3]'`).
    """

    def __init__(
        self,
        url: str,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        max_attempts: int = 5,
    ) -> None:
        self.bucket, self.prefix = parse_s3_url(url)
        if importlib.util.find_spec("aiobotocore") is None:
            raise MissingExtraError(f"the artifact store {url} needs: {install_hint('s3')}")
        self.endpoint_url = (
            endpoint_url or os.environ.get(ENDPOINT_ENV) or os.environ.get("AWS_ENDPOINT_URL")
        )
        self.region = region or next(
            (os.environ[name] for name in _REGION_ENVS if os.environ.get(name)), _DEFAULT_REGION
        )
        self.max_attempts = max_attempts
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: S3Client | None = None
        self._stack = AsyncExitStack()

    @property
    def root(self) -> str:
        """Where the store keeps artifacts, named in errors (no credentials in it)."""
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")

    def __repr__(self) -> str:
        where = f" at {self.endpoint_url}" if self.endpoint_url else ""
        return f"S3ArtifactStore({self.root!r}{where})"

    def key(self, digest: str) -> str:
        """The object key of the artifact with sha256 `digest`.

        Raises:
            KeyError: `digest` is not a sha256 (a reference from elsewhere).
        """
        if not is_sha256_hex(digest):
            raise KeyError(f"{digest[:80]!r} is not a sha256 digest (64 lowercase hex digits)")
        name = f"{digest[:2]}/{digest}"
        return f"{self.prefix}/{name}" if self.prefix else name

    def put(self, data: bytes, media_type: str = "application/octet-stream") -> ArtifactRef:
        """Store `data` under its sha256 and return an `s3://` reference (blocking)."""
        return self._run(self._put(bytes(data), media_type))

    def get(self, ref: ArtifactRef) -> bytes:
        """The bytes behind `ref`, checked against its digest (blocking).

        Raises:
            KeyError: the bucket holds no such artifact, or its content was altered.
        """
        return self._run(self._get(ref))

    async def aput(self, data: bytes, media_type: str = "application/octet-stream") -> ArtifactRef:
        """`put` for async callers: awaits without blocking their event loop."""
        return await asyncio.wrap_future(self._submit(self._put(bytes(data), media_type)))

    async def aget(self, ref: ArtifactRef) -> bytes:
        """`get` for async callers: awaits without blocking their event loop."""
        return await asyncio.wrap_future(self._submit(self._get(ref)))

    def close(self) -> None:
        """Close the client and stop the store's thread (a later call starts them again)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop, self._thread = None, None
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._close_client(), loop).result(30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(30)
            loop.close()

    async def _put(self, data: bytes, media_type: str) -> ArtifactRef:
        digest = hashlib.sha256(data).hexdigest()
        client = await self._ensure_client()
        # A plain PUT even when the object exists: the key is the digest, so rewriting it
        # changes nothing, and one request is cheaper than a HEAD followed by a PUT for
        # the common case of new content (every conversation snapshot is new).
        await client.put_object(
            Bucket=self.bucket,
            Key=self.key(digest),
            Body=data,
            ContentType=media_type,
            Metadata={"sha256": digest},
        )
        return ArtifactRef(
            uri=f"s3://{self.bucket}/{self.key(digest)}",
            size=len(data),
            sha256=digest,
            media_type=media_type,
        )

    async def _get(self, ref: ArtifactRef) -> bytes:
        client = await self._ensure_client()
        key = self.key(ref.sha256)
        try:
            response = await client.get_object(Bucket=self.bucket, Key=key)
        except client.exceptions.NoSuchKey:
            raise KeyError(f"artifact {ref.uri} not found in {self.root}") from None
        async with response["Body"] as body:
            data = bytes(await body.read())
        if hashlib.sha256(data).hexdigest() != ref.sha256:
            raise KeyError(f"artifact {ref.uri} does not match its sha256")
        return data

    async def _ensure_client(self) -> S3Client:
        # Runs on the store's loop only, so no lock is needed around the client.
        if self._client is None:
            # Untyped modules; the client itself is typed by types-aiobotocore-s3.
            from aiobotocore.config import AioConfig  # type: ignore[import-untyped]
            from aiobotocore.session import get_session  # type: ignore[import-untyped]

            config = AioConfig(
                retries={"max_attempts": self.max_attempts, "mode": "standard"},
                s3={"addressing_style": "path"} if self.endpoint_url else None,
            )
            client: S3Client = await self._stack.enter_async_context(
                get_session().create_client(
                    "s3", endpoint_url=self.endpoint_url, region_name=self.region, config=config
                )
            )
            self._client = client
        return self._client

    async def _close_client(self) -> None:
        self._client = None
        stack, self._stack = self._stack, AsyncExitStack()
        await stack.aclose()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._submit(coro).result()

    def _submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self._running_loop())

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=serve, name="durable-tools-s3", daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop
