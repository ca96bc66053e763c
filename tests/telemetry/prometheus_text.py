"""Reading the Prometheus text format the worker serves (enough for tests)."""

from __future__ import annotations

import re

import httpx

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

Sample = tuple[str, dict[str, str], float]


async def scrape(port: int) -> list[Sample]:
    """Every sample at http://127.0.0.1:PORT/metrics as (name, labels, value)."""
    async with httpx.AsyncClient() as http:
        response = await http.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
    response.raise_for_status()
    samples = []
    for line in response.text.splitlines():
        found = _SAMPLE.match(line)
        if found and not line.startswith("#"):
            name, labels, value = found.groups()
            samples.append((name, dict(_LABEL.findall(labels or "")), float(value)))
    return samples


def value(samples: list[Sample], name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels` (0 when none)."""
    return sum(v for n, got, v in samples if n == name and labels.items() <= got.items())
