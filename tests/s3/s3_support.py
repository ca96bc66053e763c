"""Helpers for the S3 store tests: dummy credentials and a plain boto3 client."""

from __future__ import annotations

from typing import Any

import boto3

# Dummy credentials for the local server: real ones are never needed (nor read) here.
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "AKIDLOCALTESTING",
    "AWS_SECRET_ACCESS_KEY": "local-secret-never-shown-0b1c",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def raw_client(s3_env: dict[str, str]) -> Any:
    """A plain boto3 client, to look at (and tamper with) the bucket behind the store."""
    return boto3.client(
        "s3",
        endpoint_url=s3_env["DURABLE_TOOLS_S3_ENDPOINT"],
        region_name="us-east-1",
        aws_access_key_id=s3_env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=s3_env["AWS_SECRET_ACCESS_KEY"],
    )
