"""A real S3-compatible server (moto in server mode) on 127.0.0.1 for the S3 store tests.

moto speaks S3's HTTP wire format; the store reaches it through aiobotocore exactly as it
would reach AWS or MinIO, with signed requests and dummy credentials.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import pytest
from moto.server import ThreadedMotoServer
from s3_support import CREDENTIALS, raw_client


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """The endpoint URL of an S3-compatible server for the whole session."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_env(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Endpoint and credentials in this process's environment (and for subprocesses)."""
    values = {**CREDENTIALS, "DURABLE_TOOLS_S3_ENDPOINT": s3_endpoint}
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


@pytest.fixture
def s3_url(s3_env: dict[str, str]) -> str:
    """`s3://<fresh bucket>/runs`: a bucket of this test's own, made with boto3."""
    bucket = f"artifacts-{uuid.uuid4().hex[:12]}"
    raw_client(s3_env).create_bucket(Bucket=bucket)
    return f"s3://{bucket}/runs"
