"""Pooled httpx clients, shared by the model adapter and the HTTP tool sources.

One client per base URL, so connections (and TLS sessions) are reused across calls; the
pool is per event loop as well, since an httpx connection belongs to the loop that opened
it and a worker or a test suite may run more than one loop in a process.
"""

from __future__ import annotations

import asyncio
import weakref
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx

__all__ = ["aclose_shared_clients", "shared_client"]

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, httpx.AsyncClient]] = (
    weakref.WeakKeyDictionary()
)


def _no_cookies() -> CookieJar:
    # A shared client must not carry one user's cookies into another user's call.
    return CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


def shared_client(base_url: str) -> httpx.AsyncClient:
    """The process's client for `base_url`: no stored cookies, no followed redirects."""
    per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
    client = per_loop.get(base_url)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(cookies=_no_cookies(), follow_redirects=False)
        per_loop[base_url] = client
    return client


async def aclose_shared_clients() -> None:
    """Close the shared clients of the running event loop (at worker shutdown)."""
    per_loop = _clients.pop(asyncio.get_running_loop(), {})
    for client in per_loop.values():
        await client.aclose()
