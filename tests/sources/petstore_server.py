"""A small real pet-store API on 127.0.0.1, with its OpenAPI 3.0 document.

The server runs a stdlib `ThreadingHTTPServer` in a thread and records every request
(method, path, query, headers, body) so tests can assert what went over the wire.
"""

from __future__ import annotations

import contextlib
import email
import email.policy
import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

TOKEN = "sk-petstore-SENTINEL-42"


def openapi_document(base_url: str) -> dict[str, Any]:
    """The API's OpenAPI 3.0 document, with `base_url` as its server."""
    pet_ref = {"$ref": "#/components/schemas/Pet"}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Pet store", "version": "1.0.0"},
        "servers": [{"url": base_url}],
        "components": {
            "schemas": {
                "Pet": {
                    "type": "object",
                    "required": ["id", "name"],
                    "properties": {
                        "id": {"type": "integer", "readOnly": True},
                        "name": {"type": "string", "description": "The pet's name."},
                        "tag": {"type": "string", "nullable": True},
                        "owner": {"$ref": "#/components/schemas/Owner"},
                    },
                },
                "Owner": {
                    "type": "object",
                    "properties": {"email": {"type": "string", "format": "email"}},
                },
            },
            "parameters": {
                "PetId": {
                    "name": "petId",
                    "in": "path",
                    "required": True,
                    "description": "The pet's id.",
                    "schema": {"type": "string"},
                }
            },
            "responses": {
                "OnePet": {
                    "description": "a pet",
                    "content": {
                        "application/json": {"schema": pet_ref},
                        "application/xml": {"schema": pet_ref},
                    },
                }
            },
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
            },
        },
        "paths": {
            "/pet/{petId}/uploadImage": {
                "post": {  # as in the Swagger Petstore v3: the bytes are the whole body
                    "operationId": "uploadFile",
                    "summary": "Uploads an image.",
                    "parameters": [
                        {"$ref": "#/components/parameters/PetId"},
                        {
                            "name": "additionalMetadata",
                            "in": "query",
                            "schema": {"type": "string"},
                        },
                    ],
                    "requestBody": {
                        "content": {
                            "application/octet-stream": {
                                "schema": {"type": "string", "format": "binary"}
                            }
                        }
                    },
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        }
                    },
                }
            },
            "/pets/{petId}/photos": {
                "post": {
                    "operationId": "addPhotos",
                    "summary": "Add photos of a pet, with a caption.",
                    "parameters": [{"$ref": "#/components/parameters/PetId"}],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "multipart/form-data": {
                                "schema": {
                                    "type": "object",
                                    "required": ["photo"],
                                    "properties": {
                                        "photo": {
                                            "type": "string",
                                            "format": "binary",
                                            "description": "The main photo.",
                                        },
                                        "extra": {
                                            "type": "array",
                                            "items": {"type": "string", "format": "binary"},
                                        },
                                        "caption": {"type": "string"},
                                        "tags": {"type": "array", "items": {"type": "string"}},
                                        "meta": {
                                            "type": "object",
                                            "properties": {"camera": {"type": "string"}},
                                        },
                                    },
                                }
                            }
                        },
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            },
            "/pets/{petId}/xml": {
                "put": {
                    "operationId": "replacePetXml",
                    "summary": "Replace a pet from an XML document.",
                    "parameters": [{"$ref": "#/components/parameters/PetId"}],
                    "requestBody": {"content": {"application/xml": {"schema": pet_ref}}},
                    "responses": {"200": {"description": "ok"}},
                }
            },
            "/pets": {
                "get": {
                    "operationId": "listPets",
                    "summary": "List pets.",
                    "tags": ["pets"],
                    "parameters": [
                        {
                            "name": "limit",
                            "in": "query",
                            "description": "How many pets to return.",
                            "schema": {"type": "integer", "minimum": 1, "maximum": 100},
                        },
                        {"name": "Authorization", "in": "header", "schema": {"type": "string"}},
                        {"name": "X-Api-Key", "in": "header", "schema": {"type": "string"}},
                        {"name": "X-Request-Label", "in": "header", "schema": {"type": "string"}},
                    ],
                    "responses": {"200": {"description": "pets"}},
                },
                "post": {
                    "operationId": "createPet",
                    "summary": "Create a pet.",
                    "description": "Adds a pet to the store.",
                    "tags": ["pets", "write"],
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": pet_ref}},
                    },
                    "responses": {"201": {"description": "created"}},
                },
            },
            "/pets/{petId}": {
                "parameters": [{"$ref": "#/components/parameters/PetId"}],
                "get": {
                    "operationId": "getPet",
                    "summary": "Get one pet.",
                    "tags": ["pets"],
                    "responses": {"200": {"$ref": "#/components/responses/OnePet"}},
                },
                "delete": {
                    "operationId": "deletePet",
                    "summary": "Delete a pet.",
                    "tags": ["pets", "write"],
                    "responses": {"204": {"description": "deleted"}},
                },
            },
            "/flaky": {
                "get": {
                    "operationId": "getFlaky",
                    "summary": "Busy once (429 with Retry-After), then fine.",
                    "responses": {"200": {"description": "ok"}},
                }
            },
            "/broken": {
                "post": {
                    "operationId": "postBroken",
                    "summary": "Always refuses the request (400).",
                    "requestBody": {
                        "content": {"application/json": {"schema": {"type": "object"}}}
                    },
                    "responses": {"400": {"description": "bad"}},
                }
            },
            "/secret": {
                "get": {
                    "operationId": "getSecret",
                    "summary": "Needs a bearer token.",
                    "security": [{"bearer": []}],
                    "responses": {"200": {"description": "ok"}, "401": {"description": "no"}},
                }
            },
            "/owners/{ownerId}/pets/{petId}": {
                "put": {
                    "parameters": [
                        {
                            "name": "ownerId",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        },
                        {"$ref": "#/components/parameters/PetId"},
                        {"name": "session", "in": "cookie", "schema": {"type": "string"}},
                    ],
                    "requestBody": {
                        "content": {"application/json": {"schema": {"type": "object"}}}
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            },
        },
    }


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    """The raw (still percent-encoded) path."""
    query: dict[str, list[str]]
    headers: dict[str, str]
    """Lower-case names."""
    body: Any


@dataclass
class PetStore:
    """The running server: its base URL, its state and what it has received."""

    base_url: str = ""
    requests: list[Recorded] = field(default_factory=list)
    pets: dict[int, dict[str, Any]] = field(default_factory=dict)
    flaky_calls: int = 0
    retry_after: str = "1"
    xml_by_default: bool = False
    """Answer `GET /pets/{id}` in XML unless `Accept` asks for JSON (as some APIs do)."""
    server: ThreadingHTTPServer | None = None

    @property
    def document(self) -> dict[str, Any]:
        return openapi_document(self.base_url)

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def _digest(data: bytes) -> dict[str, Any]:
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _multipart(content_type: str, raw: bytes) -> dict[str, Any]:
    """Parse a multipart/form-data body for real: fields by name, files with size and sha256."""
    message = email.message_from_bytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw, policy=email.policy.HTTP
    )
    if not message.is_multipart():
        return {"error": "not multipart"}
    fields: dict[str, list[str]] = {}
    files: list[dict[str, Any]] = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        data = part.get_payload(decode=True) or b""
        if part.get_filename() is None:
            fields.setdefault(str(name), []).append(data.decode())
        else:
            files.append(
                {
                    "field": name,
                    "filename": part.get_filename(),
                    "content_type": part.get_content_type(),
                    **_digest(data),
                }
            )
    return {"fields": fields, "files": files}


def _handler(store: PetStore) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return None

        def _send(self, status: int, payload: Any = None, headers: dict[str, str] | None = None):
            data = b"" if payload is None else json.dumps(payload).encode()
            if isinstance(payload, str):
                data = payload.encode()
            self.send_response(status)
            kind = "text/plain" if isinstance(payload, str) else "application/json"
            if data and "Content-Type" not in (headers or {}):
                self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(data)  # unless the client gave up (a timeout test)

        def _handle(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            kind = self.headers.get("Content-Type") or ""
            if kind.startswith("multipart/form-data"):
                body = _multipart(kind, raw)
            elif kind == "application/octet-stream" or kind.startswith("image/"):
                body = _digest(raw) | {"content_type": kind}
            else:
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode(errors="replace")
            with lock:
                store.requests.append(
                    Recorded(
                        method=self.command,
                        path=parts.path,
                        query=parse_qs(parts.query),
                        headers={k.lower(): v for k, v in self.headers.items()},
                        body=body,
                    )
                )
            self._route(parts.path, parse_qs(parts.query), body)

        def _route(self, path: str, query: dict[str, list[str]], body: Any) -> None:
            segments = [unquote(s) for s in path.strip("/").split("/")]
            method = self.command
            if path == "/openapi.json" and method == "GET":
                return self._send(200, store.document)
            if segments == ["pets"] and method == "GET":
                limit = int(query.get("limit", ["100"])[0])
                return self._send(200, list(store.pets.values())[:limit])
            if segments == ["pets"] and method == "POST":
                if not isinstance(body, dict) or not isinstance(body.get("name"), str):
                    return self._send(400, {"error": "a pet needs a name"})
                pet_id = max(store.pets, default=0) + 1
                store.pets[pet_id] = {"id": pet_id, **body}
                return self._send(201, store.pets[pet_id])
            if len(segments) == 3 and segments[0] == "pet" and segments[2] == "uploadImage":
                meta = query.get("additionalMetadata", [None])[0]
                return self._send(200, {"petId": segments[1], "metadata": meta, **body})
            if len(segments) == 3 and segments[:1] == ["pets"] and segments[2] == "photos":
                return self._send(200, {"petId": segments[1], **body})
            if len(segments) == 2 and segments[0] == "pets":
                pet = next((p for p in store.pets.values() if str(p["id"]) == segments[1]), None)
                if pet is None:
                    return self._send(404, {"error": f"no pet {segments[1]!r}"})
                wants_json = "json" in (self.headers.get("Accept") or "")
                if method == "GET" and (wants_json or not store.xml_by_default):
                    return self._send(200, pet)
                if method == "GET":  # content negotiation: XML unless JSON is asked for
                    xml = f"<pet><id>{pet['id']}</id><name>{pet['name']}</name></pet>"
                    return self._send(200, xml, {"Content-Type": "application/xml"})
                if method == "DELETE":
                    del store.pets[pet["id"]]
                    return self._send(204)
            if segments == ["flaky"] and method == "GET":
                store.flaky_calls += 1
                if store.flaky_calls == 1:
                    return self._send(
                        429, {"error": "slow down"}, {"Retry-After": store.retry_after}
                    )
                return self._send(200, {"ok": True, "calls": store.flaky_calls})
            if segments == ["broken"]:
                return self._send(400, {"error": "species 'dragon' is not allowed"})
            if segments == ["secret"] and method == "GET":
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self._send(401, {"error": "missing or wrong token"})
                return self._send(200, "the secret is safe")
            if segments[:1] == ["owners"] and method == "PUT":
                return self._send(200, {"owner": segments[1], "pet": segments[3], "body": body})
            if segments == ["slow"]:
                time.sleep(float(query.get("seconds", ["1"])[0]))
                return self._send(200, {"slept": True})
            if segments == ["echo"]:
                return self._send(200, {"method": method, "query": query, "body": body})
            if segments == ["boom"]:
                return self._send(503, "overloaded", {"Retry-After": "2"})
            return self._send(404, {"error": "no such route"})

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

    return Handler


def start_petstore() -> PetStore:
    """Start the server on 127.0.0.1 (a free port) in a daemon thread."""
    store = PetStore()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(store))
    server.daemon_threads = True
    store.server = server
    store.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    store.pets = {1: {"id": 1, "name": "Rex", "tag": "dog"}, 2: {"id": 2, "name": "Tom"}}
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return store
