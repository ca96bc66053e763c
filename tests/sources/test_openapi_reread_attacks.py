"""Attacks on the OpenAPI re-read cache (`OpenApiProvider` keeps the tools of operations
whose key did not change): after every change of the document, the tools a re-read hands
back must be the tools a fresh read of the same document builds, never a stale one (old
URL, method, parameters, schema) and never another provider's."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from openapi_changing_server import ChangingApi, count_operation, document, item_operation

from durable_tools import ToolRegistry
from durable_tools.sources import OpenApiProvider, attach_openapi


async def read(provider: OpenApiProvider, registry: ToolRegistry) -> list[tuple[str, str]]:
    """What a read of `provider` offers: each tool's name and fingerprint (its spec, its
    HTTP method and URL), in order."""
    return [(d.name, d.fingerprint) for d in await provider.discover(registry)]


async def fresh(source: Any, **options: Any) -> list[tuple[str, str]]:
    """What a provider that never read the document before offers."""
    return await read(OpenApiProvider(source, **options), ToolRegistry())


async def assert_refresh_is_fresh(
    provider: OpenApiProvider, registry: ToolRegistry, source: Any, **options: Any
) -> None:
    assert await read(provider, registry) == await fresh(source, **options)


def item(version: str, operation_id: str) -> dict[str, Any]:
    path_item = item_operation(version)
    path_item["get"]["operationId"] = operation_id
    return path_item


def item_id_schema(api: ChangingApi, path: str) -> dict[str, Any]:
    parameter: dict[str, Any] = api.document["paths"][path]["get"]["parameters"][0]
    return parameter["schema"]  # type: ignore[no-any-return]


# ------------------------------------------------------------------- breaks


async def test_a_component_pointing_into_paths_rebuilds_the_operation_using_it(
    changing_api: ChangingApi,
) -> None:
    uses = item("v2", "by_component")
    uses["get"]["parameters"] = [{"$ref": "#/components/parameters/ItemId"}]
    changing_api.document = document(
        changing_api.base_url,
        {"/v1/items/{item_id}": item("v1", "get_item"), "/v2/items/{item_id}": uses},
    )
    changing_api.document["components"] = {
        "parameters": {"ItemId": {"$ref": "#/paths/~1v1~1items~1{item_id}/get/parameters/0"}}
    }
    registry = ToolRegistry()
    provider = OpenApiProvider(changing_api.document_url)
    await read(provider, registry)

    item_id_schema(changing_api, "/v1/items/{item_id}")["pattern"] = "^[0-9]+$"
    await assert_refresh_is_fresh(provider, registry, changing_api.document_url)


@pytest.mark.parametrize("spelling", ["#paths", "#//paths"])
async def test_a_reference_into_paths_spelled_otherwise_rebuilds_the_operation(
    changing_api: ChangingApi, spelling: str
) -> None:
    uses = item("v3", "by_path")
    uses["get"]["parameters"] = [{"$ref": f"{spelling}/~1v1~1items~1{{item_id}}/get/parameters/0"}]
    changing_api.document = document(
        changing_api.base_url,
        {"/v1/items/{item_id}": item("v1", "get_item"), "/v3/items/{item_id}": uses},
    )
    registry = ToolRegistry()
    provider = OpenApiProvider(changing_api.document_url)
    first = await read(provider, registry)
    assert [name for name, _ in first] == ["get_item", "by_path"]  # the reference resolves

    item_id_schema(changing_api, "/v1/items/{item_id}")["maxLength"] = 8
    await assert_refresh_is_fresh(provider, registry, changing_api.document_url)


YAML_WITH_NUMERIC_RESPONSE_KEYS = """
openapi: 3.0.3
info: {title: t, version: "1"}
servers: [{url: "http://127.0.0.1:9"}]
paths:
  /count:
    get:
      operationId: count_items
      responses: {"200": {description: a count}}
  /pets:
    get:
      operationId: list_pets
      responses:
        200: {description: ok}
        default: {description: an error}
"""


def test_a_yaml_document_with_numeric_response_keys_still_offers_its_other_tools(
    tmp_path: Path,
) -> None:
    pytest.importorskip("yaml")
    path = tmp_path / "api.yaml"
    path.write_text(YAML_WITH_NUMERIC_RESPONSE_KEYS)
    tools = attach_openapi(ToolRegistry(), path)
    assert "count_items" in [tool.spec.name for tool in tools]


YAML_WITH_ONLY_NUMERIC_RESPONSE_KEYS = """
openapi: 3.0.3
info: {title: t, version: "1"}
servers: [{url: "http://127.0.0.1:9"}]
paths:
  /pets:
    get:
      operationId: list_pets
      parameters: [{name: limit, in: query, schema: {type: integer}}]
      responses:
        200: {description: ok, content: {application/json: {schema: {type: array}}}}
        404: {description: none}
        default: {description: an error}
  /count:
    get:
      operationId: count_items
      responses: {200: {description: a count}}
"""


async def test_a_yaml_document_with_unquoted_response_codes_offers_every_operation_on_reread(
    tmp_path: Path,
) -> None:
    """YAML reads `200:` as an int: every operation still becomes a tool (it was skipped
    as malformed), and re-reading the changed or reordered file reads as fresh."""
    yaml = pytest.importorskip("yaml")
    path = tmp_path / "api.yaml"
    path.write_text(YAML_WITH_ONLY_NUMERIC_RESPONSE_KEYS)
    assert [t.spec.name for t in attach_openapi(ToolRegistry(), path)] == [
        "list_pets",
        "count_items",
    ]
    registry = ToolRegistry()
    provider = OpenApiProvider(str(path))
    assert await read(provider, registry) == await fresh(str(path))
    parsed = yaml.safe_load(YAML_WITH_ONLY_NUMERIC_RESPONSE_KEYS)
    parsed["paths"]["/pets"]["get"]["parameters"][0]["schema"]["maximum"] = 50
    path.write_text(yaml.safe_dump(parsed, sort_keys=False))
    await assert_refresh_is_fresh(provider, registry, str(path))
    parsed["paths"] = dict(reversed(list(parsed["paths"].items())))
    path.write_text(yaml.safe_dump(parsed, sort_keys=False))
    assert [name for name, _ in await read(provider, registry)] == ["count_items", "list_pets"]
    await assert_refresh_is_fresh(provider, registry, str(path))


@pytest.mark.parametrize("spelling", ["#/paths", "#paths", "#//paths", "#///paths"])
async def test_a_chain_of_components_reaching_into_paths_rebuilds_the_operation(
    changing_api: ChangingApi, spelling: str
) -> None:
    """A component that uses a component that points into `paths` (however the pointer
    is spelled): the operation using the first one is rebuilt when that path changes."""
    uses = item("v2", "by_chain")
    uses["get"]["parameters"] = [{"$ref": "#/components/parameters/Outer"}]
    changing_api.document = document(
        changing_api.base_url,
        {"/v1/items/{item_id}": item("v1", "get_item"), "/v2/items/{item_id}": uses},
    )
    changing_api.document["components"] = {
        "parameters": {
            "Outer": {"$ref": "#/components/parameters/Inner"},
            "Inner": {"$ref": f"{spelling}/~1v1~1items~1{{item_id}}/get/parameters/0"},
        }
    }
    registry = ToolRegistry()
    provider = OpenApiProvider(changing_api.document_url)
    assert [name for name, _ in await read(provider, registry)] == ["get_item", "by_chain"]

    item_id_schema(changing_api, "/v1/items/{item_id}")["enum"] = ["a", "b"]
    await assert_refresh_is_fresh(provider, registry, changing_api.document_url)


async def test_many_operations_sharing_one_path_item_all_follow_its_change(
    changing_api: ChangingApi,
) -> None:
    """Hundreds of operations whose parameter points into one path item: after that
    item changes, every one of them is rebuilt, in document order."""
    paths: dict[str, Any] = {"/v1/items/{item_id}": item("v1", "get_item")}
    for n in range(300):
        path_item = item("v2", f"shared_{n}")
        path_item["get"]["parameters"] = [
            {"$ref": "#paths/~1v1~1items~1{item_id}/get/parameters/0"}
        ]
        paths[f"/v2/items/{{item_id}}/{n}"] = path_item
    changing_api.document = document(changing_api.base_url, paths)
    registry = ToolRegistry()
    provider = OpenApiProvider(changing_api.document_url)
    assert len(await read(provider, registry)) == 301

    item_id_schema(changing_api, "/v1/items/{item_id}")["minLength"] = 3
    await assert_refresh_is_fresh(provider, registry, changing_api.document_url)


# ------------------------------------------------------------------- what holds


async def test_path_level_parameters_and_servers_changes_rebuild_the_operation(
    changing_api: ChangingApi,
) -> None:
    path_item = item("v1", "get_item")
    path_item["parameters"] = [
        {"name": "verbose", "in": "query", "schema": {"type": "boolean"}},
    ]
    changing_api.document = document(
        changing_api.base_url, {"/v1/items/{item_id}": path_item, "/count": count_operation()}
    )
    registry = ToolRegistry()
    provider = OpenApiProvider(changing_api.document_url)
    await read(provider, registry)
    url = changing_api.document_url

    path_item["parameters"][0]["schema"] = {"type": "integer"}  # path-level parameter
    await assert_refresh_is_fresh(provider, registry, url)
    path_item["get"]["servers"] = [{"url": "http://127.0.0.1:1/elsewhere"}]
    await assert_refresh_is_fresh(provider, registry, url)
    path_item["servers"] = [{"url": "http://127.0.0.1:2/other"}]
    await assert_refresh_is_fresh(provider, registry, url)
    changing_api.document["servers"] = [{"url": changing_api.base_url + "/moved"}]
    await assert_refresh_is_fresh(provider, registry, url)
    changing_api.document["security"] = [{"key": []}]
    changing_api.document["components"] = {
        "securitySchemes": {"key": {"type": "apiKey", "in": "query", "name": "verbose"}}
    }  # `verbose` becomes the API key's parameter: no longer the model's to set
    await assert_refresh_is_fresh(provider, registry, url)
    path_item["get"]["x-internal"] = True
    path_item["get"]["method"] = "post"  # noise the builder does not read
    await assert_refresh_is_fresh(provider, registry, url)
    path_item["post"] = path_item.pop("get")  # the same operation, another method
    await assert_refresh_is_fresh(provider, registry, url)


async def test_a_document_changing_back_and_forth_reads_as_fresh(
    changing_api: ChangingApi,
) -> None:
    one = document(
        changing_api.base_url,
        {"/v1/items/{item_id}": item("v1", "get_item"), "/count": count_operation()},
    )
    two = copy.deepcopy(one)
    two["paths"]["/v1/items/{item_id}"]["get"]["parameters"][0]["schema"] = {"format": "uuid"}
    registry = ToolRegistry()
    provider = OpenApiProvider(changing_api.document_url)
    for current in (one, two, one, two, one):
        changing_api.document = copy.deepcopy(current)
        await assert_refresh_is_fresh(provider, registry, changing_api.document_url)


async def test_a_reordered_document_lists_its_tools_in_document_order(
    changing_api: ChangingApi,
) -> None:
    one = document(
        changing_api.base_url,
        {"/v1/items/{item_id}": item("v1", "get_item"), "/count": count_operation()},
    )
    reordered = copy.deepcopy(one)
    reordered["paths"] = dict(reversed(list(one["paths"].items())))
    registry = ToolRegistry()
    provider = OpenApiProvider(changing_api.document_url)
    for current in (one, reordered):
        changing_api.document = copy.deepcopy(current)
        await assert_refresh_is_fresh(provider, registry, changing_api.document_url)


async def test_providers_of_one_document_with_other_base_urls_or_prefixes_keep_their_own(
    changing_api: ChangingApi,
) -> None:
    registry = ToolRegistry()
    url = changing_api.document_url
    options: list[dict[str, Any]] = [
        {},
        {"base_url": changing_api.base_url + "/mirror"},
        {"prefix": "shop"},
        {"base_url": changing_api.base_url + "/mirror", "prefix": "shop"},
    ]
    providers = [OpenApiProvider(url, **o) for o in options]
    for _ in range(2):  # the second round reads through each provider's cache
        offered = [await read(p, registry) for p in providers]
        assert offered == [await fresh(url, **o) for o in options]
        assert len({fp for tools in offered for _, fp in tools}) == 2 * len(options)
        item_id_schema(changing_api, "/v1/items/{item_id}")["minLength"] = 1


async def test_a_failed_read_between_changes_then_reads_as_fresh(
    changing_api: ChangingApi,
) -> None:
    registry = ToolRegistry()
    provider = OpenApiProvider(changing_api.document_url)
    await read(provider, registry)
    item_id_schema(changing_api, "/v1/items/{item_id}")["maxLength"] = 4
    changing_api.failing = True
    with pytest.raises(Exception, match="500"):
        await provider.discover(registry)
    changing_api.failing = False
    await assert_refresh_is_fresh(provider, registry, changing_api.document_url)
    # Another registry never gets this registry's tools handed back.
    other = ToolRegistry()
    assert await read(provider, other) == await fresh(changing_api.document_url)


# ---------------------------------------------------------- random single edits

# Sized for the slow suite's time (1,000 operations and 200 edits took 453 s on a loaded
# machine): every kind of edit still comes up a dozen times over.
OPERATIONS = 300
EDITS = 120
CHECK_EVERY = 20


def big_document(base_url: str) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for i in range(OPERATIONS):
        path_item = item("v1", f"get_item{i}")
        if i % 7 == 0:
            path_item["get"]["parameters"].append({"$ref": "#/components/parameters/Limit"})
        paths[f"/items{i}/{{item_id}}"] = path_item
    paths["/count"] = count_operation()
    doc = document(base_url, paths)
    doc["components"] = {
        "parameters": {"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}}}
    }
    return doc


def random_edit(rng: random.Random, doc: dict[str, Any], base_url: str) -> None:
    """One edit of a kind the cache's key is meant to cover."""
    paths = doc["paths"]
    path = rng.choice([p for p in paths if p != "/count"])
    path_item = paths[path]
    operation = next(iter(v for k, v in path_item.items() if k != "parameters"))
    kind = rng.randrange(9)
    if kind == 0:
        operation["description"] = f"Read one item ({rng.random():.6f})."
    elif kind == 1:
        operation["parameters"][0]["schema"] = {"type": "string", "maxLength": rng.randint(1, 99)}
    elif kind == 2:
        path_item["parameters"] = [
            {"name": f"q{rng.randint(0, 9)}", "in": "query", "schema": {"type": "string"}}
        ]
    elif kind == 3:  # the same operation under another method
        method = next(k for k in path_item if k != "parameters")
        path_item[rng.choice(["put", "delete", "get", "patch"])] = path_item.pop(method)
    elif kind == 4:
        paths.pop(path)
    elif kind == 5:
        paths[f"/new{rng.randint(0, 10**6)}/{{item_id}}"] = item("v1", f"new{rng.random()}")
    elif kind == 6:
        limit = doc["components"]["parameters"]["Limit"]
        limit["schema"] = {"type": "integer", "maximum": rng.randint(1, 1000)}
    elif kind == 7:
        doc["servers"] = [{"url": f"{base_url}/{rng.choice(['a', 'b', 'c'])}"}]
    else:
        operation["operationId"] = f"renamed{rng.randint(0, 50)}"  # names may collide


@pytest.mark.slow  # a fresh build of 300 operations costs about a second of CPU, per check
@pytest.mark.timeout(900)
async def test_hundreds_of_random_single_edits_of_a_big_document_read_as_fresh(
    changing_api: ChangingApi,
) -> None:
    rng = random.Random(20261128)
    changing_api.document = big_document(changing_api.base_url)
    registry = ToolRegistry()
    provider = OpenApiProvider(changing_api.document_url)
    await read(provider, registry)
    for edit in range(1, EDITS + 1):
        random_edit(rng, changing_api.document, changing_api.base_url)
        cached = await read(provider, registry)  # every edit goes through the cache
        if edit % CHECK_EVERY == 0:  # a stale tool stays stale until its key changes
            assert cached == await fresh(changing_api.document_url), f"after edit {edit}"


async def test_a_change_in_an_externally_referenced_file_rebuilds_the_operation(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "parameters.json"
    shared.write_text(
        json.dumps({"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}}})
    )
    main = document("http://127.0.0.1:9", {"/count": count_operation()})
    main["paths"]["/count"]["get"]["parameters"] = [{"$ref": "parameters.json#/Limit"}]
    main["components"] = {"parameters": {"Also": {"$ref": "parameters.json#/Limit"}}}
    path = tmp_path / "api.json"
    path.write_text(json.dumps(main))
    registry = ToolRegistry()
    provider = OpenApiProvider(path)
    assert await read(provider, registry) == await fresh(path)

    shared.write_text(
        json.dumps({"Limit": {"name": "limit", "in": "query", "schema": {"maximum": 5}}})
    )
    await assert_refresh_is_fresh(provider, registry, path)
