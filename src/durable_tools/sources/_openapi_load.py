"""Reading an OpenAPI document: files, URLs, external `$ref`s and Swagger 2.0.

External references (`schemas.json#/Pet`, `https://example.com/common.yaml#/Error`) are
resolved with the `referencing` library (URI joining, JSON pointers, retrieval) and
inlined where they are used, so the rest of the loader only ever sees local `$ref`s. A
reference that cannot be resolved is left in place, absolute, and its error recorded:
the operations that use it are skipped with that error, the others load.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

import httpx
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable

from durable_tools.tools._scrub import display_url

from ._openapi_schema import OpenAPIError
from ._openapi_swagger import swagger2_to_openapi3

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_EXTERNAL_DOCUMENTS",
    "inline_external_refs",
    "load_openapi",
]

MAX_EXTERNAL_DOCUMENTS = 200
"""Most other documents one document may pull in through `$ref`s."""

MAX_DOCUMENT_BYTES = 64_000_000
"""Largest OpenAPI document (or referenced document) fetched from a URL. Large public APIs
are ~10 MB (GitHub's REST API); one past this is refused as it downloads, not held in
memory whole, so a document read again on a schedule cannot grow into the worker's
memory."""


def _parse(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        yaml = importlib.import_module("yaml")  # optional: PyYAML, when installed
    except ImportError:
        raise OpenAPIError(
            f"{where} is not JSON, and reading YAML needs PyYAML (pip install pyyaml)"
        ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise OpenAPIError(f"{where} is neither JSON nor YAML: {exc}") from None


def _fetch(url: str, timeout: float) -> httpx.Response:
    """GET `url`, reading at most `MAX_DOCUMENT_BYTES` of its body.

    Raises:
        OpenAPIError: the request failed, or the body is larger than the limit.
    """
    try:
        with httpx.stream("GET", url, timeout=timeout, follow_redirects=True) as response:
            response.raise_for_status()
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_DOCUMENT_BYTES:
                raise OpenAPIError(_too_large(url, int(declared)))
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise OpenAPIError(_too_large(url, len(body)))
    except httpx.HTTPStatusError as exc:  # its text repeats the URL
        status = exc.response.status_code
        raise OpenAPIError(f"cannot fetch {display_url(url)}: HTTP {status}") from None
    except httpx.HTTPError as exc:
        shown = display_url(url)
        reason = str(exc).replace(url, shown) or type(exc).__name__
        raise OpenAPIError(f"cannot fetch {shown}: {reason}") from None
    # The body as read, in a response of its own (`.text` decodes it by its charset).
    return httpx.Response(
        response.status_code,
        headers=response.headers,
        content=bytes(body),
        request=response.request,
    )


def _too_large(url: str, size: int) -> str:
    return (
        f"cannot fetch {display_url(url)}: the document is over {MAX_DOCUMENT_BYTES:,} bytes "
        f"({size:,} so far; MAX_DOCUMENT_BYTES)"
    )


def _retriever(*, allow_files: bool, timeout: float) -> Callable[[str], Resource[Any]]:
    """The `referencing` retrieve function: http(s) URLs, and files when allowed."""
    cache: dict[str, Resource[Any]] = {}

    def retrieve(uri: str) -> Resource[Any]:
        if uri in cache:
            return cache[uri]
        if len(cache) >= MAX_EXTERNAL_DOCUMENTS:
            raise OpenAPIError(f"more than {MAX_EXTERNAL_DOCUMENTS} documents referenced")
        scheme = urlsplit(uri).scheme
        if scheme in ("http", "https"):
            contents = _parse(_fetch(uri, timeout).text, uri)
        elif scheme == "file" and allow_files:
            path = Path(urlsplit(uri).path)
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise OpenAPIError(f"cannot read {path}: {exc}") from None
            contents = _parse(text, str(path))
        elif scheme == "file":
            # A document from the network may not read the worker's files.
            raise OpenAPIError("a document loaded from a URL may not reference local files")
        else:
            raise OpenAPIError(f"cannot fetch a {scheme or 'relative'} reference")
        cache[uri] = Resource.opaque(contents)
        return cache[uri]

    return retrieve


def _reason(exc: BaseException) -> str:
    """Our own message if retrieval failed (it is down the cause chain), else referencing's."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, OpenAPIError):
            return str(cause)
        cause = cause.__cause__ or cause.__context__
    return f"{type(exc).__name__}: {exc}"


def inline_external_refs(
    document: Mapping[str, Any],
    base_uri: str | None,
    *,
    allow_files: bool = True,
    timeout: float = 30.0,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Replace every `$ref` to another document by what it points to.

    Local references of the document stay as they are; inside a referenced document
    every reference (local to it or not) is inlined, since its pointers mean nothing
    in the main document. A cycle is cut with an open schema where it repeats.

    Args:
        document: The main document.
        base_uri: Its URI (`file://...` or `https://...`), against which relative
            references resolve; None for a document given as a dict.
        allow_files: Whether `file://` references may be read.
        timeout: Seconds to wait for each URL.

    Returns:
        The document, and the references that could not be resolved (absolute, as
        left in the document) with the reason.
    """
    retrieve = _retriever(allow_files=allow_files, timeout=timeout)
    registry: Registry[Any] = Registry(retrieve=retrieve)  # type: ignore[call-arg]
    if base_uri is not None:
        registry = registry.with_resource(base_uri, Resource.opaque(dict(document)))
    errors: dict[str, str] = {}

    def resolve(ref: str, base: str | None, stack: tuple[str, ...]) -> Any:
        if base is None and not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", ref):
            errors[ref] = "a relative $ref needs the document's path or URL (not a dict)"
            return {"$ref": ref}
        absolute = urljoin(base or "", ref)
        if absolute in stack:
            name = absolute.rstrip("/").rsplit("/", 1)[-1]
            return {"description": f"(recursive: same shape as {name})"}
        try:
            resolved = registry.resolver(base_uri=base or "").lookup(ref)
        except Unresolvable as exc:
            errors[absolute] = _reason(exc)
            return {"$ref": absolute}
        return walk(resolved.contents, urldefrag(absolute).url, (*stack, absolute), False)

    def walk(node: Any, base: str | None, stack: tuple[str, ...], main: bool) -> Any:
        if isinstance(node, list):
            return [walk(item, base, stack, main) for item in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and not (main and ref.startswith("#")):
            target = resolve(ref, base, stack)
            siblings = {k: walk(v, base, stack, main) for k, v in node.items() if k != "$ref"}
            if siblings and isinstance(target, Mapping) and "$ref" not in target:
                return {**target, **siblings}  # keywords next to $ref win (3.1)
            return target
        return {k: walk(v, base, stack, main) for k, v in node.items()}

    return walk(document, base_uri, (), True), errors


def load_openapi(
    document: str | Path | Mapping[str, Any], *, timeout: float = 30.0
) -> tuple[dict[str, Any], str | None, dict[str, str]]:
    """Read an OpenAPI 3 (or Swagger 2.0) document and inline its external `$ref`s.

    Args:
        document: A parsed dict, a file path, or an http(s) URL (fetched with httpx).
        timeout: Seconds to wait for each URL.

    Returns:
        The OpenAPI 3 document, the URL it came from (None for files and dicts) against
        which relative server URLs resolve, and the unresolved external references.

    Raises:
        OpenAPIError: unreadable, neither OpenAPI 3 nor Swagger 2.0, or YAML without PyYAML.
    """
    source: str | None = None
    base_uri: str | None = None
    if isinstance(document, Mapping):
        parsed: Any = dict(document)
    elif isinstance(document, str) and re.match(r"^https?://", document):
        try:
            response = _fetch(document, timeout)
        except OpenAPIError as exc:
            raise OpenAPIError(f"cannot fetch the OpenAPI document: {exc}") from None
        source = base_uri = str(response.url)
        parsed = _parse(response.text, display_url(document))
    else:
        path = Path(document).resolve()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise OpenAPIError(f"cannot read the OpenAPI document {path}: {exc}") from None
        base_uri = path.as_uri()
        parsed = _parse(text, str(path))
    if not isinstance(parsed, dict):
        raise OpenAPIError("not an OpenAPI document (not an object)")
    inlined, unresolved = inline_external_refs(
        parsed, base_uri, allow_files=source is None, timeout=timeout
    )
    if str(inlined.get("swagger", "")).startswith("2."):
        inlined = swagger2_to_openapi3(inlined)
    version = str(inlined.get("openapi", ""))
    if not version.startswith("3."):
        raise OpenAPIError("not an OpenAPI 3 or Swagger 2.0 document (no 'openapi: 3.x' field)")
    return inlined, source, unresolved
