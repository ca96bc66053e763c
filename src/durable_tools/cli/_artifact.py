"""`durable-tools artifact get REF`: the full output behind a truncated tool result."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from durable_tools.cli._errors import CliError
from durable_tools.client.render._text import terminal_safe
from durable_tools.tools._artifacts import artifact_store_at, fetch_artifact, ref_from_uri

__all__ = ["cmd_artifact_get"]


async def cmd_artifact_get(args: argparse.Namespace) -> int:
    """Write an artifact's bytes to stdout or `-o FILE`, after checking its sha256.

    REF is the artifact's URI as a truncated output names it (`s3://...`, `file://...`);
    the store is the one it points into, or `--store`.
    """
    try:
        ref = ref_from_uri(args.ref)
    except ValueError as error:
        raise CliError(terminal_safe(str(error)), 2) from None
    try:
        store = artifact_store_at(args.store) if args.store else None
        data = await fetch_artifact(ref, store)
    except KeyError as error:
        raise CliError(terminal_safe(str(error.args[0] if error.args else error)), 1) from None
    except ImportError as error:
        raise CliError(str(error), 2) from None
    if args.output:
        Path(args.output).write_bytes(data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    return 0
