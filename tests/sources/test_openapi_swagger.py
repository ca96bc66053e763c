"""Swagger 2.0 documents: converted to OpenAPI 3 and used against the real pet-store server."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from petstore_server import PetStore

from durable_tools import ToolContext, ToolRegistry
from durable_tools.sources import attach_openapi
from durable_tools.sources._openapi_swagger import swagger2_to_openapi3


def swagger_petstore(host: str) -> dict[str, Any]:
    """The classic Swagger 2.0 Petstore, cut to the parts that matter."""
    return {
        "swagger": "2.0",
        "info": {"title": "Swagger Petstore", "version": "1.0.7"},
        "host": host,
        "basePath": "",
        "schemes": ["http"],
        "consumes": ["application/json"],
        "produces": ["application/json", "application/xml"],
        "securityDefinitions": {
            "petstore_auth": {
                "type": "oauth2",
                "flow": "implicit",
                "authorizationUrl": "https://petstore.swagger.io/oauth/authorize",
                "scopes": {"write:pets": "modify pets", "read:pets": "read your pets"},
            },
            "api_key": {"type": "apiKey", "name": "api_key", "in": "header"},
        },
        "parameters": {
            "petBody": {
                "in": "body",
                "name": "body",
                "required": True,
                "schema": {"$ref": "#/definitions/Pet"},
            },
            "petId": {"name": "petId", "in": "path", "required": True, "type": "integer"},
        },
        "paths": {
            "/pet/{petId}/uploadImage": {
                "post": {
                    "operationId": "uploadFile",
                    "summary": "uploads an image",
                    "consumes": ["multipart/form-data"],
                    "parameters": [
                        {"$ref": "#/parameters/petId"},
                        {
                            "name": "additionalMetadata",
                            "in": "formData",
                            "description": "Additional data to pass to server",
                            "type": "string",
                        },
                        {"name": "file", "in": "formData", "required": True, "type": "file"},
                    ],
                    "responses": {"200": {"description": "ok", "schema": {"type": "object"}}},
                    "security": [{"petstore_auth": ["write:pets", "read:pets"]}],
                }
            },
            "/pets": {
                "post": {
                    "operationId": "addPet",
                    "parameters": [{"$ref": "#/parameters/petBody"}],
                    "responses": {"405": {"description": "Invalid input"}},
                },
                "get": {
                    "operationId": "findPetsByStatus",
                    "parameters": [
                        {
                            "name": "status",
                            "in": "query",
                            "type": "array",
                            "items": {"type": "string", "enum": ["available", "sold"]},
                            "collectionFormat": "multi",
                        },
                        {
                            "name": "tags",
                            "in": "query",
                            "type": "array",
                            "items": {"type": "string"},
                        },
                    ],
                    "responses": {
                        "200": {
                            "description": "ok",
                            "schema": {"type": "array", "items": {"$ref": "#/definitions/Pet"}},
                        }
                    },
                },
            },
        },
        "definitions": {
            "Pet": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "id": {"type": "integer", "format": "int64", "readOnly": True},
                    "name": {"type": "string"},
                    "tag": {"type": "string", "x-nullable": True},
                    "category": {"$ref": "#/definitions/Category"},
                },
            },
            "Category": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
    }


def test_conversion_of_the_parts_that_make_tools():
    converted = swagger2_to_openapi3(swagger_petstore("pets.example:8080"))
    assert converted["openapi"] == "3.0.3"
    assert converted["servers"] == [{"url": "http://pets.example:8080"}]
    schemas = converted["components"]["schemas"]
    assert schemas["Pet"]["properties"]["category"] == {"$ref": "#/components/schemas/Category"}
    assert schemas["Pet"]["properties"]["tag"] == {"type": "string", "nullable": True}
    assert converted["components"]["securitySchemes"]["petstore_auth"]["flows"]["implicit"][
        "scopes"
    ] == {"write:pets": "modify pets", "read:pets": "read your pets"}

    add = converted["paths"]["/pets"]["post"]
    assert add["requestBody"] == {
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}},
        "required": True,
    }
    assert "parameters" not in add

    upload = converted["paths"]["/pet/{petId}/uploadImage"]["post"]
    assert upload["parameters"] == [{"$ref": "#/components/parameters/petId"}]
    form = upload["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert form["properties"]["file"] == {"type": "string", "format": "binary"}
    assert form["required"] == ["file"] and upload["requestBody"]["required"] is True
    assert converted["components"]["parameters"]["petId"]["schema"] == {"type": "integer"}

    find = converted["paths"]["/pets"]["get"]
    status, tags = find["parameters"]
    assert (status["style"], status["explode"]) == ("form", True)
    assert (tags["style"], tags["explode"]) == ("form", False)  # Swagger's default: csv
    assert set(find["responses"]["200"]["content"]) == {"application/json", "application/xml"}

    relative = swagger2_to_openapi3({"swagger": "2.0", "basePath": "/v2", "paths": {}})
    assert relative["servers"] == [{"url": "/v2"}]


async def test_a_swagger_document_makes_working_tools(petstore: PetStore):
    host = petstore.base_url.removeprefix("http://")
    document = swagger_petstore(host)
    document["paths"]["/pet/{petId}/uploadImage"]["post"]["consumes"] = ["application/octet-stream"]
    del document["paths"]["/pet/{petId}/uploadImage"]["post"]["parameters"][1]
    document["paths"]["/pet/{petId}/uploadImage"]["post"]["parameters"][1] = {
        "in": "body",
        "name": "body",
        "schema": {"type": "string", "format": "binary"},
    }
    registry = ToolRegistry()
    attach_openapi(registry, document)
    assert registry.names() == ["upload_file", "find_pets_by_status", "add_pet"]
    add_schema = registry.get("add_pet").spec.input_schema["properties"]["body"]
    assert add_schema["required"] == ["name"]  # id is readOnly
    context = ToolContext(tool_call_id="c", tool_name="t", idempotency_key="r/c")

    created = await registry.invoke("add_pet", {"body": {"name": "Nemo"}}, context)
    assert created.structured["name"] == "Nemo"
    await registry.invoke("find_pets_by_status", {"status": ["sold", "available"]}, context)
    assert petstore.requests[-1].query == {"status": ["sold", "available"]}
    assert petstore.requests[-1].headers["accept"] == "application/json"  # from `produces`
    data = b"\x89PNG\r\n\x1a\n..."
    uploaded = await registry.invoke(
        "upload_file",
        {"petId": 1, "body": {"content_base64": base64.b64encode(data).decode()}},
        context,
    )
    assert uploaded.structured["sha256"] == hashlib.sha256(data).hexdigest()
