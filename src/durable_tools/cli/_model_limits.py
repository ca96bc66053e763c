"""`worker --model-limit SPEC=RPM[,TPM]`: the worker's `ModelLimits` from the command line.

The same limits `build_worker(model_limits=...)` takes (docs/models.md, "Rate limits"). The
value is parsed strictly: ASCII digits only (no `inf`, `nan`, `1e9`, `1_000` or other
scripts' digits, which Python's `float()` would take), within `ModelLimits`' bounds, one
flag per model spec; every error names the flag's value as given.
"""

from __future__ import annotations

import argparse
import re

from pydantic import ValidationError

from durable_tools.client.start._options import check_model_spec
from durable_tools.protocol._models import MAX_MODEL_SPEC_CHARS
from durable_tools.worker import ModelLimits

from ._errors import CliError

__all__ = ["add_model_limit_flag", "model_limits_from_args", "parse_model_limit"]

_REQUESTS = re.compile(r"[0-9]+(\.[0-9]+)?", re.ASCII)
_TOKENS = re.compile(r"[0-9]+", re.ASCII)
_NAMES = {"requests_per_minute": "requests a minute", "tokens_per_minute": "tokens a minute"}
_MAX_VALUE_CHARS = MAX_MODEL_SPEC_CHARS + 40


def _shown(text: str) -> str:
    return ascii(text if len(text) <= 200 else text[:200] + "...")


def parse_model_limit(text: str) -> tuple[str, ModelLimits]:
    """`SPEC=RPM[,TPM]` as (spec, limits).

    Raises:
        argparse.ArgumentTypeError: one line naming the value and what is wrong with it.
    """
    if len(text) > _MAX_VALUE_CHARS:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is too long")
    spec, equals, numbers = text.partition("=")
    if not equals or not spec or "=" in numbers:  # one "=": no spec holds one
        raise argparse.ArgumentTypeError(
            f"{_shown(text)} is not SPEC=RPM[,TPM] (e.g. openai:gpt-4.1=500,30000)"
        )
    requests, comma, tokens = numbers.partition(",")
    if not _REQUESTS.fullmatch(requests):
        raise argparse.ArgumentTypeError(
            f"{_shown(text)}: requests a minute must be a positive number like 500 or 0.5, "
            f"not {_shown(requests)}"
        )
    if comma and not _TOKENS.fullmatch(tokens):
        raise argparse.ArgumentTypeError(
            f"{_shown(text)}: tokens a minute must be a positive whole number like 30000, "
            f"not {_shown(tokens)}"
        )
    try:
        limits = ModelLimits(
            requests_per_minute=float(requests), tokens_per_minute=int(tokens) if comma else None
        )
    except ValidationError as error:
        problems = "; ".join(
            f"{_NAMES.get(str(e['loc'][0]), 'limits') if e['loc'] else 'limits'}: "
            f"{e['msg'][:1].lower()}{e['msg'][1:]}"
            for e in error.errors()
        )
        raise argparse.ArgumentTypeError(f"{_shown(text)}: {problems}") from None
    return spec, limits


def add_model_limit_flag(parser: argparse.ArgumentParser) -> None:
    """`--model-limit SPEC=RPM[,TPM]`, repeatable."""
    parser.add_argument(
        "--model-limit",
        type=parse_model_limit,
        action="append",
        default=[],
        metavar="SPEC=RPM[,TPM]",
        help="most calls (and tokens) a minute to a model spec across every worker of the "
        "task queue, e.g. openai:gpt-4.1=500,30000; repeat for more models; give every "
        "worker the same (docs/models.md, Rate limits)",
    )


def model_limits_from_args(args: argparse.Namespace) -> dict[str, ModelLimits]:
    """The worker's `model_limits`, once the tools module has registered its providers.

    Raises:
        CliError: a spec no worker could resolve, or one given twice.
    """
    limits: dict[str, ModelLimits] = {}
    for spec, value in getattr(args, "model_limit", None) or []:
        try:
            check_model_spec(spec)
        except ValueError as error:
            raise CliError(f"--model-limit: {error}") from None
        if spec in limits:
            raise CliError(f"--model-limit: {_shown(spec)} is given twice")
        limits[spec] = value
    return limits
