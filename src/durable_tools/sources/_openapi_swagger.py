"""Swagger 2.0 documents converted to OpenAPI 3.0, for the parts that make tools.

Converted: `host`/`basePath`/`schemes` to `servers`; `definitions`, `parameters`,
`responses` and `securityDefinitions` to `components`; `body` and `formData` parameters
to a `requestBody` in the operation's `consumes` media types (form fields with a `file`
among them as `multipart/form-data`); `produces` to response `content`; parameter
types and `collectionFormat` to a `schema` with `style`/`explode`; `type: file` and
`x-nullable` in schemas. Anything else is copied as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["swagger2_to_openapi3"]

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")
# Parameter fields that belong in the OpenAPI 3 parameter's `schema`.
_SCHEMA_FIELDS = (
    "type",
    "format",
    "items",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "enum",
    "multipleOf",
)
_REFS = {
    "#/definitions/": "#/components/schemas/",
    "#/parameters/": "#/components/parameters/",
    "#/responses/": "#/components/responses/",
}


def _fix(node: Any) -> Any:
    """Rewrite `$ref`s to their OpenAPI 3 homes, `type: file` and `x-nullable`."""
    if isinstance(node, list):
        return [_fix(item) for item in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):
            for old, new in _REFS.items():
                if value.startswith(old):
                    value = new + value[len(old) :]
            out[key] = value
        elif key == "x-nullable":
            out["nullable"] = value
        elif key == "type" and value == "file":
            out["type"], out["format"] = "string", "binary"
        elif key == "discriminator" and isinstance(value, str):
            out[key] = {"propertyName": value}
        elif key == "collectionFormat":
            continue
        else:
            out[key] = _fix(value)
    return out


def _param_schema(param: Mapping[str, Any]) -> dict[str, Any]:
    schema = {k: param[k] for k in _SCHEMA_FIELDS if k in param}
    return dict(_fix(schema))


def _parameter(param: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        k: param[k] for k in ("name", "in", "description", "required") if k in param
    }
    out.update({k: v for k, v in param.items() if k.startswith("x-")})
    out["schema"] = _param_schema(param)
    if param.get("type") == "array":
        # Swagger's default is csv: one comma-separated value, OpenAPI 3's is exploded.
        fmt = param.get("collectionFormat", "csv")
        if param.get("in") in ("query", "cookie"):
            styles = {
                "multi": ("form", True),
                "ssv": ("spaceDelimited", False),
                "pipes": ("pipeDelimited", False),
            }
            style, explode = styles.get(fmt, ("form", False))
            out["style"], out["explode"] = style, explode
    return out


def _content(schema: Any, media_types: list[str]) -> dict[str, Any]:
    return {media: {"schema": _fix(schema)} if schema is not None else {} for media in media_types}


def _response(response: Any, produces: list[str]) -> Any:
    if not isinstance(response, Mapping) or "$ref" in response:
        return _fix(response)
    out: dict[str, Any] = {"description": str(response.get("description") or "")}
    if "schema" in response:
        out["content"] = _content(response["schema"], produces)
    headers = response.get("headers")
    if isinstance(headers, Mapping):
        out["headers"] = {
            name: {"description": h.get("description", ""), "schema": _param_schema(h)}
            for name, h in headers.items()
            if isinstance(h, Mapping)
        }
    return out


def _security_scheme(scheme: Mapping[str, Any]) -> dict[str, Any]:
    kind = scheme.get("type")
    out: dict[str, Any] = {k: v for k, v in scheme.items() if k == "description"}
    if kind == "basic":
        return {**out, "type": "http", "scheme": "basic"}
    if kind == "oauth2":
        names = {
            "implicit": "implicit",
            "password": "password",
            "application": "clientCredentials",
            "accessCode": "authorizationCode",
        }
        flow = {k: scheme[k] for k in ("authorizationUrl", "tokenUrl") if k in scheme}
        flow["scopes"] = dict(scheme.get("scopes") or {})
        return {
            **out,
            "type": "oauth2",
            "flows": {names.get(scheme.get("flow", ""), "implicit"): flow},
        }
    return dict(scheme)  # apiKey: the same fields


def _servers(doc: Mapping[str, Any]) -> list[dict[str, str]]:
    base = str(doc.get("basePath") or "")
    host = doc.get("host")
    if not host:
        return [{"url": base or "/"}]  # relative: against the document's URL
    schemes = [str(s) for s in doc.get("schemes") or ["https"]]
    return [{"url": f"{scheme}://{host}{base}"} for scheme in schemes]


def _operation(
    op: Mapping[str, Any],
    path_params: list[Any],
    doc: Mapping[str, Any],
) -> dict[str, Any]:
    globals_ = doc.get("parameters") or {}

    def real(param: Any) -> Any:
        ref = param.get("$ref") if isinstance(param, Mapping) else None
        if isinstance(ref, str) and ref.startswith("#/parameters/"):
            return globals_.get(ref[len("#/parameters/") :], param)
        return param

    merged: dict[tuple[str, str], tuple[Any, Any]] = {}
    for raw in [*path_params, *(op.get("parameters") or [])]:
        param = real(raw)
        if isinstance(param, Mapping):
            merged[(str(param.get("in")), str(param.get("name")))] = (raw, param)

    consumes = list(op.get("consumes") or doc.get("consumes") or ["application/json"])
    produces = list(op.get("produces") or doc.get("produces") or ["application/json"])
    out: dict[str, Any] = {
        k: _fix(v)
        for k, v in op.items()
        if k not in ("parameters", "responses", "consumes", "produces")
    }
    parameters: list[Any] = []
    form: list[Mapping[str, Any]] = []
    for (location, _), (raw, param) in merged.items():
        if location == "body":
            body: dict[str, Any] = {"content": _content(param.get("schema") or {}, consumes)}
            if param.get("description"):
                body["description"] = param["description"]
            body["required"] = bool(param.get("required"))
            out["requestBody"] = body
        elif location == "formData":
            form.append(param)
        elif raw is not param and "$ref" in raw:
            parameters.append(_fix(raw))
        else:
            parameters.append(_parameter(param))
    if form:
        files = any(p.get("type") == "file" for p in form)
        media = (
            "multipart/form-data"
            if files or "multipart/form-data" in consumes
            else "application/x-www-form-urlencoded"
        )
        properties = {}
        for p in form:
            prop = _param_schema(p)
            if p.get("description"):
                prop["description"] = p["description"]
            properties[str(p["name"])] = prop
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        required = [str(p["name"]) for p in form if p.get("required")]
        if required:
            schema["required"] = required
        out["requestBody"] = {"content": {media: {"schema": schema}}, "required": bool(required)}
    if parameters:
        out["parameters"] = parameters
    out["responses"] = {
        str(code): _response(r, produces) for code, r in (op.get("responses") or {}).items()
    }
    return out


def swagger2_to_openapi3(doc: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAPI 3.0.3 document equivalent to a Swagger 2.0 one, for making tools.

    Path-level `body`/`formData` parameters are applied to each operation; global
    `body`/`formData` parameters are inlined where operations reference them.
    """
    out: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": dict(doc.get("info") or {"title": "", "version": ""}),
        "servers": _servers(doc),
    }
    for key in ("tags", "externalDocs", "security"):
        if key in doc:
            out[key] = _fix(doc[key])
    out.update({k: v for k, v in doc.items() if k.startswith("x-")})
    produces = list(doc.get("produces") or ["application/json"])
    components: dict[str, Any] = {
        "schemas": _fix(dict(doc.get("definitions") or {})),
        "parameters": {
            name: _parameter(p)
            for name, p in (doc.get("parameters") or {}).items()
            if isinstance(p, Mapping) and p.get("in") not in ("body", "formData")
        },
        "responses": {
            name: _response(r, produces) for name, r in (doc.get("responses") or {}).items()
        },
        "securitySchemes": {
            name: _security_scheme(s)
            for name, s in (doc.get("securityDefinitions") or {}).items()
            if isinstance(s, Mapping)
        },
    }
    out["components"] = {k: v for k, v in components.items() if v}
    paths: dict[str, Any] = {}
    for path, item in (doc.get("paths") or {}).items():
        if not isinstance(item, Mapping):
            continue
        shared = list(item.get("parameters") or [])
        converted: dict[str, Any] = {
            k: _fix(v) for k, v in item.items() if k not in _METHODS and k != "parameters"
        }
        for method in _METHODS:
            if isinstance(item.get(method), Mapping):
                converted[method] = _operation(item[method], shared, doc)
        paths[str(path)] = converted
    out["paths"] = paths
    return out
