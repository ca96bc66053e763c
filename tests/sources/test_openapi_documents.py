"""OpenAPI documents as real APIs write them: file uploads, Accept, bad operations,
external `$ref`s and Swagger 2.0, against real servers on 127.0.0.1."""

from __future__ import annotations

import base64
import copy
import functools
import hashlib
import json
import logging
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from petstore_server import PetStore
from temporalio.client import Client

from durable_tools import DurableTools, InvalidArguments, RunStatus, ToolContext, ToolRegistry
from durable_tools.sources import attach_openapi
from durable_tools.tools import FileSystemArtifactStore, InMemoryArtifactStore
from support import answer, assert_not_wedged, calls, running_worker, write_script

PHOTO = bytes(range(256)) * 40 + b"\x00\xff end"  # binary: not valid UTF-8


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def ctx(name: str, **kw: Any) -> ToolContext:
    return ToolContext(tool_call_id="c1", tool_name=name, idempotency_key="r/c1", **kw)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# ------------------------------------------------------------------ file uploads


async def test_binary_body_from_base64_or_an_artifact(petstore: PetStore, tmp_path: Path):
    registry = ToolRegistry()
    attach_openapi(registry, petstore.document, include=["uploadFile"])
    schema = registry.get("upload_file").spec.input_schema
    assert set(schema["properties"]) == {"petId", "additionalMetadata", "body"}
    assert set(schema["properties"]["body"]["properties"]) == {
        "content_base64",
        "artifact_uri",
        "filename",
        "content_type",
    }

    sent = await registry.invoke(
        "upload_file",
        {"petId": "1", "additionalMetadata": "front", "body": {"content_base64": b64(PHOTO)}},
        ctx("upload_file"),
    )
    assert sent.structured == {
        "petId": "1",
        "metadata": "front",
        "size": len(PHOTO),
        "sha256": sha(PHOTO),
        "content_type": "application/octet-stream",
    }

    store = FileSystemArtifactStore(tmp_path / "artifacts")
    ref = store.put(PHOTO[::-1], "image/png")
    sent = await registry.invoke(
        "upload_file",
        {"petId": "2", "body": {"artifact_uri": ref.uri}},
        ctx("upload_file", artifact_store=store),
    )
    assert sent.structured["sha256"] == sha(PHOTO[::-1])
    assert sent.structured["size"] == len(PHOTO)


async def test_bad_file_arguments_are_refused_before_sending(petstore: PetStore, tmp_path: Path):
    registry = ToolRegistry()
    attach_openapi(registry, petstore.document, include=["uploadFile"])
    store = InMemoryArtifactStore()
    elsewhere = FileSystemArtifactStore(tmp_path).put(b"not in the worker's store")
    bad = [
        {"content_base64": "not base64!!"},
        {"artifact_uri": "memory://" + "0" * 64},  # not in the store
        {"artifact_uri": elsewhere.uri},  # another store's file
        {"artifact_uri": "file:///etc/passwd"},  # not an artifact at all
        {"filename": "x.png"},  # neither content nor artifact
    ]
    for body in bad:
        with pytest.raises(InvalidArguments):
            await registry.invoke(
                "upload_file",
                {"petId": "1", "body": body},
                ctx("upload_file", artifact_store=store),
            )
    assert petstore.requests == []


async def test_multipart_body_sends_files_and_fields(petstore: PetStore):
    registry = ToolRegistry()
    attach_openapi(registry, petstore.document, include=["addPhotos"])
    body_schema = registry.get("add_photos").spec.input_schema["properties"]["body"]
    assert body_schema["properties"]["photo"]["description"] == "The main photo."
    assert "content_base64" in body_schema["properties"]["photo"]["properties"]
    assert body_schema["properties"]["extra"]["items"]["properties"]["artifact_uri"]
    store = InMemoryArtifactStore()
    second = store.put(b"second photo")
    result = await registry.invoke(
        "add_photos",
        {
            "petId": "1",
            "body": {
                "photo": {
                    "content_base64": b64(PHOTO),
                    "filename": "rex.png",
                    "content_type": "image/png",
                },
                "extra": [{"artifact_uri": second.uri, "filename": "two.jpg"}],
                "caption": "Rex, née Tom",
                "tags": ["dog", "good"],
                "meta": {"camera": "phone"},
            },
        },
        ctx("add_photos", artifact_store=store),
    )
    assert result.structured == {
        "petId": "1",
        "fields": {
            "caption": ["Rex, née Tom"],
            "tags": ["dog", "good"],
            "meta": ['{"camera": "phone"}'],
        },
        "files": [
            {
                "field": "photo",
                "filename": "rex.png",
                "content_type": "image/png",
                "size": len(PHOTO),
                "sha256": sha(PHOTO),
            },
            {
                "field": "extra",
                "filename": "two.jpg",
                "content_type": "application/octet-stream",
                "size": 12,
                "sha256": sha(b"second photo"),
            },
        ],
    }
    assert petstore.requests[-1].headers["content-type"].startswith("multipart/form-data")


async def test_a_worker_reads_artifact_uploads_from_its_own_store(
    client: Client, task_queue: str, tmp_path: Path, petstore: PetStore
):
    registry = ToolRegistry()
    attach_openapi(registry, petstore.document, include=["uploadFile"])
    store = FileSystemArtifactStore(tmp_path / "artifacts")
    ref = store.put(PHOTO, "image/png")
    model = write_script(
        tmp_path,
        [
            calls(("c1", "upload_file", {"petId": "1", "body": {"artifact_uri": ref.uri}})),
            answer("uploaded"),
        ],
    )
    async with running_worker(client, registry, task_queue, artifact_store=store):
        run = await DurableTools(client, task_queue).start("upload", model=model, run_id=task_queue)
        result = await run.result()
        await assert_not_wedged(client.get_workflow_handle(run.run_id))
        timeline = await run.timeline()
    assert result.status == RunStatus.COMPLETED, result
    assert timeline[0].status == "completed"
    uploads = [r for r in petstore.requests if r.path.endswith("/uploadImage")]
    assert [u.body["sha256"] for u in uploads] == [sha(PHOTO)]


# ----------------------------------------------------- skipped operations, Accept


def test_unsupported_bodies_and_invalid_schemas_skip_one_operation_each(
    petstore: PetStore, caplog: pytest.LogCaptureFixture
):
    document = copy.deepcopy(petstore.document)
    document["paths"]["/pets"]["get"]["parameters"][0]["schema"] = {"type": "integr"}
    document["paths"]["/flaky"]["get"]["parameters"] = [
        {"name": "n", "in": "query", "schema": {"minimum": "ten"}}
    ]
    document["paths"]["/broken"]["post"]["requestBody"] = "oops"  # malformed
    with caplog.at_level(logging.WARNING, logger="durable_tools.sources._openapi"):
        tools = attach_openapi(ToolRegistry(), document)
    names = {t.name for t in tools}
    assert names == {
        "upload_file",
        "add_photos",
        "create_pet",
        "get_pet",
        "delete_pet",
        "get_secret",
        "put_owners_owner_id_pets_pet_id",
    }
    warnings = "\n".join(r.getMessage() for r in caplog.records)
    assert "replacePetXml (PUT /pets/{petId}/xml) skipped" in warnings
    assert "application/xml" in warnings
    assert "listPets (GET /pets) skipped: invalid schema" in warnings
    assert "getFlaky (GET /flaky) skipped: invalid schema" in warnings
    assert "postBroken (POST /broken) skipped" in warnings
    assert len(caplog.records) == 4


async def test_accept_names_the_json_response(petstore: PetStore):
    petstore.xml_by_default = True
    registry = ToolRegistry()
    attach_openapi(registry, petstore.document, include=["getPet", "uploadFile", "deletePet"])
    pet = await registry.invoke("get_pet", {"petId": "1"}, ctx("get_pet"))
    assert pet.structured == {"id": 1, "name": "Rex", "tag": "dog"}  # not the XML default
    assert petstore.requests[-1].headers["accept"] == "application/json"
    await registry.invoke("delete_pet", {"petId": "2"}, ctx("delete_pet"))
    assert petstore.requests[-1].headers["accept"] == "*/*"  # no JSON response declared

    document = copy.deepcopy(petstore.document)
    responses = document["components"]["responses"]["OnePet"]
    responses["content"] = {"application/vnd.pets+json": responses["content"]["application/json"]}
    vendor = ToolRegistry()
    attach_openapi(vendor, document, include=["getPet"])
    await vendor.invoke("get_pet", {"petId": "1"}, ctx("get_pet"))
    assert petstore.requests[-1].headers["accept"] == "application/vnd.pets+json"

    mine = ToolRegistry()
    attach_openapi(mine, petstore.document, include=["getPet"], headers={"accept": "text/xml"})
    xml = await mine.invoke("get_pet", {"petId": "1"}, ctx("get_pet"))
    assert xml.content[0].text.startswith("<pet>")  # the caller's Accept wins


# ------------------------------------------------------------- external $refs


def write(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))


def split_document(root: Path, base_url: str) -> Path:
    """A document split over three files, as generators and hand-written specs do."""
    write(
        root / "schemas" / "pet.json",
        {
            "Pet": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "owner": {"$ref": "#/Owner"},
                    "friends": {"type": "array", "items": {"$ref": "#/Pet"}},
                    "error": {"$ref": "../common.json#/components/schemas/Error"},
                },
            },
            "Owner": {"type": "object", "properties": {"email": {"type": "string"}}},
        },
    )
    write(
        root / "common.json",
        {
            "components": {
                "schemas": {
                    "Error": {"type": "object", "properties": {"code": {"type": "integer"}}}
                },
                "parameters": {
                    "Limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}}
                },
            }
        },
    )
    main = root / "openapi.json"
    write(
        main,
        {
            "openapi": "3.0.3",
            "info": {"title": "split", "version": "1"},
            "servers": [{"url": base_url}],
            "paths": {
                "/pets": {
                    "get": {
                        "operationId": "listPets",
                        "parameters": [{"$ref": "common.json#/components/parameters/Limit"}],
                        "responses": {"200": {"description": "ok"}},
                    },
                    "post": {
                        "operationId": "createPet",
                        "requestBody": {
                            "required": True,
                            "content": {
                                "application/json": {"schema": {"$ref": "schemas/pet.json#/Pet"}}
                            },
                        },
                        "responses": {"201": {"description": "created"}},
                    },
                },
                "/pets/{petId}": {
                    "get": {
                        "operationId": "getPet",
                        "parameters": [{"$ref": "missing.json#/Nope"}],
                        "responses": {"200": {"description": "ok"}},
                    }
                },
            },
        },
    )
    return main


def check_split(registry: ToolRegistry) -> None:
    assert registry.names() == ["list_pets", "create_pet"]  # getPet's $ref is missing
    listing = registry.get("list_pets").spec.input_schema
    assert listing["properties"] == {"limit": {"type": "integer"}}
    body = registry.get("create_pet").spec.input_schema["properties"]["body"]
    assert "$ref" not in json.dumps(body)
    assert body["properties"]["owner"]["properties"]["email"] == {"type": "string"}
    assert body["properties"]["error"]["properties"]["code"] == {"type": "integer"}
    assert body["properties"]["friends"]["items"]["description"].startswith("(recursive")


async def test_external_refs_in_files(
    petstore: PetStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    main = split_document(tmp_path, petstore.base_url)
    registry = ToolRegistry()
    with caplog.at_level(logging.WARNING):
        attach_openapi(registry, main)
    check_split(registry)
    assert any("getPet (GET /pets/{petId}) skipped" in r.getMessage() for r in caplog.records)
    created = await registry.invoke(
        "create_pet", {"body": {"name": "Nemo", "owner": {"email": "a@b"}}}, ctx("create_pet")
    )
    assert created.structured["name"] == "Nemo"


@pytest.fixture
def file_server(tmp_path: Path) -> Iterator[str]:
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(tmp_path / "site"))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined, method-assign]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_external_refs_over_http_and_no_local_files_from_the_network(
    petstore: PetStore, tmp_path: Path, file_server: str, caplog: pytest.LogCaptureFixture
):
    split_document(tmp_path / "site" / "api", petstore.base_url)
    registry = ToolRegistry()
    attach_openapi(registry, f"{file_server}/api/openapi.json")
    check_split(registry)

    secret = tmp_path / "secret.json"
    write(secret, {"Pet": {"type": "object", "properties": {"password": {"const": "hunter2"}}}})
    main = json.loads((tmp_path / "site" / "api" / "openapi.json").read_text())
    media = main["paths"]["/pets"]["post"]["requestBody"]["content"]["application/json"]
    media["schema"] = {"$ref": secret.as_uri() + "#/Pet"}
    write(tmp_path / "site" / "api" / "evil.json", main)
    evil = ToolRegistry()
    with caplog.at_level(logging.WARNING):
        attach_openapi(evil, f"{file_server}/api/evil.json")
    assert evil.names() == ["list_pets"]
    assert "hunter2" not in json.dumps([s.input_schema for s in evil.specs()])
    assert any("may not reference local files" in r.getMessage() for r in caplog.records)
