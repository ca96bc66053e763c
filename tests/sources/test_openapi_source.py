"""OpenAPI tools against a real pet-store server on 127.0.0.1, and an agent run on a dev server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from petstore_server import TOKEN, PetStore
from temporalio.client import Client

from durable_tools import (
    DurableTools,
    InvalidArguments,
    NeedsAuthorization,
    RetrySpec,
    RunStatus,
    ToolContext,
    ToolExecutionError,
    ToolRegistrationError,
    ToolRegistry,
)
from durable_tools.sources import (
    BearerSecret,
    HeaderSecret,
    OAuthBearer,
    OpenAPIError,
    QuerySecret,
    attach_openapi,
    operation_tool_name,
)
from support import answer, calls, running_worker, scheduled_activities, write_script


def ctx(name: str, *, call_id: str = "c1", **kw: Any) -> ToolContext:
    return ToolContext(
        tool_call_id=call_id,
        tool_name=name,
        run_id="run-1",
        idempotency_key=f"run-1/{call_id}",
        secrets=kw.pop("secrets", {"api_token": TOKEN}),
        **kw,
    )


def pet_tools(store: PetStore, **options: Any) -> ToolRegistry:
    registry = ToolRegistry()
    attach_openapi(registry, store.document, auth=BearerSecret("api_token"), **options)
    return registry


# ------------------------------------------------------------------- schemas


def test_one_tool_per_operation_with_sanitized_names(petstore: PetStore):
    registry = pet_tools(petstore)
    assert registry.names() == [
        "upload_file",
        "add_photos",  # replacePetXml: an XML body cannot be sent, so it is skipped
        "list_pets",
        "create_pet",
        "get_pet",
        "delete_pet",
        "get_flaky",
        "post_broken",
        "get_secret",
        "put_owners_owner_id_pets_pet_id",  # no operationId: method_path
    ]
    spec = registry.get("create_pet").spec
    assert spec.description == "Create a pet.\n\nAdds a pet to the store."
    assert spec.tags == ("pets", "write")
    assert spec.transport == "http"


def test_operation_names_are_snake_case_and_bounded():
    assert operation_tool_name("listPets", "GET", "/pets") == "list_pets"
    assert operation_tool_name("getHTTPResponse", "GET", "/x") == "get_http_response"
    assert operation_tool_name("repos/get-content", "GET", "/x") == "repos_get_content"
    assert operation_tool_name("2fa.enable", "POST", "/x") == "op_2fa_enable"
    assert operation_tool_name(None, "DELETE", "/a/{b}/c") == "delete_a_b_c"
    assert operation_tool_name("listPets", "GET", "/pets", prefix="Store") == "store_list_pets"
    long = operation_tool_name("x" * 100, "GET", "/")
    assert len(long) == 64 and long.startswith("xxxx")
    assert long != operation_tool_name("x" * 99 + "y", "GET", "/")  # a digest keeps them apart
    registry = ToolRegistry()
    for name in (
        long,
        operation_tool_name("getHTTPResponse", "GET", "/x"),
        operation_tool_name(None, "GET", "/é/ü"),
    ):
        registry.register_schema(lambda arguments, ctx: None, input_schema={}, name=name)


def test_parameters_and_body_become_one_schema_with_refs_resolved(petstore: PetStore):
    registry = pet_tools(petstore)
    listing = registry.get("list_pets").spec.input_schema
    assert listing["properties"]["limit"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "description": "How many pets to return.",
    }
    # Auth headers are never in a schema: Authorization, and the apiKey scheme's header.
    assert set(listing["properties"]) == {"limit", "X-Request-Label"}
    assert listing["additionalProperties"] is False and "required" not in listing

    create = registry.get("create_pet").spec.input_schema
    assert create["required"] == ["body"]
    body = create["properties"]["body"]
    assert "$ref" not in json.dumps(create)
    assert body["required"] == ["name"]  # `id` is readOnly: not sent, not required
    assert set(body["properties"]) == {"name", "tag", "owner"}
    assert body["properties"]["tag"] == {"type": ["string", "null"]}  # 3.0 nullable
    assert body["properties"]["owner"]["properties"]["email"]["format"] == "email"

    get_pet = registry.get("get_pet").spec.input_schema  # path-level $ref parameter
    assert get_pet["required"] == ["petId"]
    assert get_pet["properties"]["petId"]["description"] == "The pet's id."
    put = registry.get("put_owners_owner_id_pets_pet_id").spec.input_schema
    assert put["required"] == ["ownerId", "petId"]
    assert set(put["properties"]) == {"ownerId", "petId", "session", "body"}


def test_safety_follows_the_http_method(petstore: PetStore):
    registry = pet_tools(petstore)

    def flags(name: str) -> tuple[bool, bool, bool]:
        s = registry.get(name).spec.safety
        return s.read_only, s.idempotent, s.networked

    assert flags("list_pets") == (True, True, True)
    assert flags("get_pet") == (True, True, True)
    assert flags("create_pet") == (False, False, True)
    assert flags("delete_pet") == (False, True, True)
    assert flags("put_owners_owner_id_pets_pet_id") == (False, True, True)
    assert registry.get("list_pets").spec.safety.side_effect == "none"


def test_include_exclude_prefix_defaults_and_overrides(petstore: PetStore):
    registry = ToolRegistry()
    tools = attach_openapi(
        registry,
        petstore.document,
        prefix="store",
        include=["pets"],
        exclude=["deletePet"],
        defaults={"start_to_close_timeout": 7},
        overrides={"createPet": {"approval": True}, "store_get_pet": {"description": "One."}},
    )
    assert [t.name for t in tools] == ["store_list_pets", "store_create_pet", "store_get_pet"]
    assert registry.get("store_create_pet").spec.approval == "always"
    assert registry.get("store_list_pets").spec.approval == "never"
    assert registry.get("store_get_pet").spec.description == "One."
    assert {t.spec.policy.start_to_close_timeout for t in tools} == {7}
    with pytest.raises(OpenAPIError, match="listPest"):
        attach_openapi(ToolRegistry(), petstore.document, overrides={"listPest": {}})
    with pytest.raises(ToolRegistrationError, match="duplicate"):
        attach_openapi(registry, petstore.document, prefix="store", include=["listPets"])


def test_document_from_a_url_a_file_and_bad_documents(petstore: PetStore, tmp_path: Path):
    registry = ToolRegistry()
    tools = attach_openapi(registry, f"{petstore.base_url}/openapi.json", include=["getPet"])
    assert [t.name for t in tools] == ["get_pet"]
    path = tmp_path / "api.json"
    path.write_text(json.dumps(petstore.document))
    assert len(attach_openapi(ToolRegistry(), path)) == 10
    relative = {**petstore.document, "servers": [{"url": "/v1"}]}
    with pytest.raises(OpenAPIError, match="base_url"):
        attach_openapi(ToolRegistry(), relative)
    assert attach_openapi(ToolRegistry(), relative, base_url="http://x")[0].name == "upload_file"
    with pytest.raises(OpenAPIError, match=r"OpenAPI 3 or Swagger 2\.0"):
        attach_openapi(ToolRegistry(), {"swagger": "1.2", "paths": {}})
    with pytest.raises(OpenAPIError, match="cannot fetch"):
        attach_openapi(ToolRegistry(), f"{petstore.base_url}/missing.json")
    yaml_file = tmp_path / "api.yaml"
    yaml_file.write_text("openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {}\n")
    try:
        import yaml  # noqa: F401
    except ImportError:
        with pytest.raises(OpenAPIError, match="PyYAML"):
            attach_openapi(ToolRegistry(), yaml_file, base_url="http://x")
    else:
        assert attach_openapi(ToolRegistry(), yaml_file, base_url="http://x") == []


# ------------------------------------------------------------------- calls


async def test_query_path_and_body_are_encoded_and_the_token_is_sent(petstore: PetStore):
    registry = pet_tools(petstore)
    listed = await registry.invoke("list_pets", {"limit": 1}, ctx("list_pets"))
    assert listed.structured == [{"id": 1, "name": "Rex", "tag": "dog"}]
    sent = petstore.requests[-1]
    assert sent.query == {"limit": ["1"]}
    assert sent.headers["authorization"] == f"Bearer {TOKEN}"
    assert "idempotency-key" not in sent.headers  # GET: nothing to deduplicate

    created = await registry.invoke(
        "create_pet", {"body": {"name": "Nemo", "tag": None}}, ctx("create_pet", call_id="c2")
    )
    assert created.structured == {"id": 3, "name": "Nemo", "tag": None}
    sent = petstore.requests[-1]
    assert sent.method == "POST" and sent.body == {"name": "Nemo", "tag": None}
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["idempotency-key"] == "run-1/c2"

    with pytest.raises(ToolExecutionError) as missing:
        await registry.invoke("get_pet", {"petId": "a/b ?#"}, ctx("get_pet"))
    assert petstore.requests[-1].path == "/pets/a%2Fb%20%3F%23"  # one segment, encoded
    assert not missing.value.retryable and "404" in missing.value.message

    put = await registry.invoke(
        "put_owners_owner_id_pets_pet_id",
        {"ownerId": "ann", "petId": "1", "session": "s 1", "body": {"x": 1}},
        ctx("put"),
    )
    assert put.structured == {"owner": "ann", "pet": "1", "body": {"x": 1}}
    assert petstore.requests[-1].headers["cookie"] == "session=s%201"

    assert (await registry.invoke("delete_pet", {"petId": "3"}, ctx("d"))).content[0].text == (
        "HTTP 204 No Content (no content)"
    )
    assert 3 not in petstore.pets


async def test_the_model_cannot_set_credentials(petstore: PetStore):
    registry = pet_tools(petstore)
    for args in ({"Authorization": "Bearer evil"}, {"X-Api-Key": "evil"}):
        with pytest.raises(InvalidArguments):
            await registry.invoke("list_pets", args, ctx("list_pets"))
    assert petstore.requests == []
    for spec in registry.specs():
        assert "authorization" not in json.dumps(spec.input_schema).lower()
        assert TOKEN not in spec.model_dump_json()
    await registry.invoke("list_pets", {"X-Request-Label": "ok"}, ctx("list_pets"))
    assert petstore.requests[-1].headers["x-request-label"] == "ok"


async def test_429_is_retryable_with_retry_after_and_400_goes_to_the_model(petstore: PetStore):
    registry = pet_tools(petstore)
    petstore.retry_after = "3"
    with pytest.raises(ToolExecutionError) as busy:
        await registry.invoke("get_flaky", {}, ctx("get_flaky"))
    assert busy.value.retryable and busy.value.retry_after == 3.0
    assert "429" in busy.value.message
    ok = await registry.invoke("get_flaky", {}, ctx("get_flaky"))
    assert ok.structured == {"ok": True, "calls": 2}

    with pytest.raises(ToolExecutionError) as refused:
        await registry.invoke("post_broken", {"body": {"species": "dragon"}}, ctx("post_broken"))
    assert not refused.value.retryable
    assert "HTTP 400" in refused.value.message and "dragon" in refused.value.message
    assert TOKEN not in refused.value.message and TOKEN not in str(refused.value.details)


async def test_auth_from_worker_secrets_only(petstore: PetStore):
    registry = pet_tools(petstore, include=["getSecret"])
    assert (await registry.invoke("get_secret", {}, ctx("get_secret"))).content[0].text == (
        "the secret is safe"
    )
    with pytest.raises(ToolExecutionError) as no_secret:
        await registry.invoke("get_secret", {}, ctx("get_secret", secrets={}))
    assert "api_token" in no_secret.value.message and not no_secret.value.retryable

    keyed = ToolRegistry()
    attach_openapi(
        keyed,
        petstore.document,
        include=["listPets"],
        auth=[HeaderSecret("X-Api-Key", "key"), QuerySecret("api_key", "key")],
    )
    await keyed.invoke("list_pets", {}, ctx("list_pets", secrets={"key": "k-123"}))
    sent = petstore.requests[-1]
    assert sent.headers["x-api-key"] == "k-123" and sent.query["api_key"] == ["k-123"]
    assert "authorization" not in sent.headers


async def test_oauth_bearer_uses_the_users_grant(petstore: PetStore):
    registry = ToolRegistry()
    attach_openapi(
        registry,
        petstore.document,
        include=["getSecret"],
        auth=OAuthBearer(provider="petauth", scopes=("pets.read",)),
    )
    spec = registry.get("get_secret").spec
    assert spec.oauth is not None and spec.oauth.provider == "petauth"
    assert spec.oauth.scopes == ("pets.read",)
    document = petstore.document
    document["components"]["securitySchemes"]["oauth"] = {"type": "oauth2", "flows": {}}
    document["paths"]["/pets"]["post"]["security"] = [{"oauth": ["pets.write", "pets.read"]}]
    scoped = ToolRegistry()
    attach_openapi(
        scoped, document, include=["createPet"], auth=OAuthBearer("petauth", ("pets.read",))
    )
    oauth = scoped.get("create_pet").spec.oauth
    assert oauth is not None and oauth.scopes == ("pets.read", "pets.write")
    ok = await registry.invoke("get_secret", {}, ctx("get_secret", access_token=TOKEN))
    assert ok.content[0].text == "the secret is safe"
    with pytest.raises(NeedsAuthorization):
        await registry.invoke("get_secret", {}, ctx("get_secret", access_token="revoked"))
    with pytest.raises(NeedsAuthorization):
        await registry.invoke("get_secret", {}, ctx("get_secret"))


# ------------------------------------------------------------ end to end


async def test_agent_run_lists_retries_after_429_and_creates(
    client: Client, task_queue: str, tmp_path: Path, petstore: PetStore
):
    registry = ToolRegistry()
    attach_openapi(
        registry,
        petstore.document,
        auth=BearerSecret("api_token"),
        defaults={"retry": RetrySpec(initial_interval=0.1, maximum_attempts=3)},
    )
    model = write_script(
        tmp_path,
        [
            calls(("c1", "list_pets", {"limit": 10})),
            calls(("c2", "get_flaky", {})),
            calls(("c3", "create_pet", {"body": {"name": "Nemo", "tag": "fish"}})),
            answer("Nemo joined Rex and Tom."),
        ],
    )
    async with running_worker(client, registry, task_queue, secrets={"api_token": TOKEN}):
        run = await DurableTools(client, task_queue).start(
            "add a fish", model=model, run_id=task_queue
        )
        result = await run.result()
        timeline = {r.call_id: r for r in await run.timeline()}
        history = await client.get_workflow_handle(run.run_id).fetch_history()
    assert result.status == RunStatus.COMPLETED, result
    assert [timeline[c].status for c in ("c1", "c2", "c3")] == ["completed"] * 3
    assert timeline["c1"].attempts == 1 and timeline["c3"].attempts == 1
    assert timeline["c2"].attempts == 2  # 429, then the retry after Retry-After
    flaky = [r for r in petstore.requests if r.path == "/flaky"]
    assert len(flaky) == 2
    assert [p["name"] for p in petstore.pets.values()] == ["Rex", "Tom", "Nemo"]
    assert {r.headers["authorization"] for r in petstore.requests} == {f"Bearer {TOKEN}"}
    posted = next(r for r in petstore.requests if r.method == "POST")
    assert posted.headers["idempotency-key"] == f"{task_queue}/c3"
    assert {"list_pets", "get_flaky", "create_pet"} <= set(scheduled_activities(history))
    assert TOKEN not in history.to_json()


def test_a_remote_operation_id_of_capitals_converts_in_linear_time() -> None:
    # The first conversion regex is quadratic on a run of capitals (30,000 took 6 s); only
    # the part that can reach the 64-character name is converted, the digest covers all.
    name = operation_tool_name("A" * 300_000 + "b", "get", "/x")
    assert len(name) <= 64 and name.startswith("aaaa")
    assert name != operation_tool_name("A" * 300_001 + "b", "get", "/x")
