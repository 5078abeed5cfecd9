"""OpenAPI documents (`/openapi/v2`, `/openapi/v3`, `/openapi/v3/<group-version>`) as
kube-apiserver publishes them, so that kubectl validates, applies and explains.

Built once from two sources and nothing hand-written: Kubernetes' own definitions
(`schemas.kubeschema`, the same ones the request validation uses) and the discovery tables of
the resources we serve (`discovery.RESOURCES`, `discovery.WORKLOAD_RESOURCES`); the CloneSet
schema comes from its pydantic model, with its pod template pointing at Kubernetes'
PodTemplateSpec. What kubectl reads from them:

- every PATCH operation carries `x-kubernetes-group-version-kind` and the `fieldValidation`
  query parameter: that is how kubectl (`resource.QueryParamVerifierV3`) learns the server
  validates fields itself, and then sends `fieldValidation=Strict` instead of validating
  client-side;
- `components.schemas` keep the `x-kubernetes-patch-merge-key` / `-patch-strategy` extensions
  (client-side apply computes its strategic merge patch from them) and the descriptions
  (`kubectl explain`).

The documents are pure functions of those inputs; `OpenAPIDocuments` serializes each once.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from schemas.kubeschema import KUBERNETES_VERSION, REF_PREFIX, definitions, gvk_definition
from schemas.workload import CloneSet
from services.apiserver import discovery, openapiproto

__all__ = [
    "JSON",
    "OpenAPIDocuments",
    "ServedResource",
    "served_resources",
    "v2_document",
    "v2_media_type",
    "v3_document",
]

JSON = "application/json"
V3_REF = "#/components/schemas/"
V2_REF = "#/definitions/"
CORE = "api/v1"
WORKLOADS = f"apis/{discovery.WORKLOAD_GROUP}/{discovery.WORKLOAD_VERSION}"
POLICY = f"apis/{discovery.POLICY_GROUP}/{discovery.POLICY_VERSION}"
CLONESET_DEFINITION = "dev.inplace.apps.v1alpha1.CloneSet"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
# Definitions every group-version document needs besides its kinds (errors, deletes, patches,
# watches, discovery).
_ALWAYS = [
    _META + name
    for name in ("Status", "DeleteOptions", "Patch", "WatchEvent", "APIResourceList", "Table")
]
_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


@dataclass(frozen=True)
class ServedResource:
    """One resource (or subresource) path, from the discovery tables."""

    prefix: str  # "api/v1" or "apis/<group>/<version>"
    group: str
    version: str
    name: str  # "pods", "pods/resize"
    kind: str
    namespaced: bool
    verbs: tuple[str, ...]
    definition: str  # schema of the kind, e.g. io.k8s.api.core.v1.Pod


def served_resources() -> list[ServedResource]:
    out: list[ServedResource] = []
    for prefix, group, version, table in (
        (CORE, "", "v1", discovery.RESOURCES),
        (
            WORKLOADS,
            discovery.WORKLOAD_GROUP,
            discovery.WORKLOAD_VERSION,
            discovery.WORKLOAD_RESOURCES,
        ),
        (POLICY, discovery.POLICY_GROUP, discovery.POLICY_VERSION, discovery.POLICY_RESOURCES),
    ):
        for entry in table:
            g, v = entry.get("group", group), entry.get("version", version)
            definition = (
                CLONESET_DEFINITION
                if entry["kind"] == "CloneSet"
                else gvk_definition(g, v, entry["kind"])
            )
            if definition is None:
                continue
            out.append(
                ServedResource(
                    prefix, g, v, entry["name"], entry["kind"], entry["namespaced"],
                    tuple(entry["verbs"]), definition,
                )
            )  # fmt: skip
    return out


# --- schema conversion ------------------------------------------------------------------------


def convert(schema: Any, ref_prefix: str, *, v2: bool) -> Any:
    """One definition from JSON Schema 2020-12 (as shipped) into OpenAPI form: `$ref`s
    rewritten, `[T, "null"]` types back to `T` (OpenAPI has no null type; Kubernetes treats
    null as unset), and the int-or-string unions (oneOf, or anyOf as pydantic writes them)
    as kube-openapi writes them."""
    if isinstance(schema, list):
        return [convert(item, ref_prefix, v2=v2) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("$schema", "$id"):
            continue
        if key == "$ref" and isinstance(value, str) and value.startswith(REF_PREFIX):
            out[key] = ref_prefix + value[len(REF_PREFIX) :]
        elif key == "type" and isinstance(value, list):
            kinds = [t for t in value if t != "null"]
            if kinds:
                out[key] = kinds[0] if len(kinds) == 1 else kinds
        elif key in ("oneOf", "anyOf") and _is_int_or_string(value):
            out["type"] = "string"
            out["format"] = "int-or-string"
        elif key in ("properties", "$defs", "definitions"):
            out[key] = {name: convert(sub, ref_prefix, v2=v2) for name, sub in value.items()}
        else:
            out[key] = convert(value, ref_prefix, v2=v2)
    if v2 and "$ref" in out and len(out) > 1:
        # Swagger 2.0 ignores siblings of $ref; kube-openapi wraps them in allOf.
        ref = out.pop("$ref")
        out["allOf"] = [{"$ref": ref}]
    return out


def _is_int_or_string(branches: Any) -> bool:
    kinds = set()
    for branch in branches if isinstance(branches, list) else []:
        t = branch.get("type") if isinstance(branch, dict) else None
        kinds.update(t if isinstance(t, list) else [t])
    return {"string"} <= kinds and bool(kinds & {"integer", "number"})


def _refs(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF_PREFIX):
            yield ref[len(REF_PREFIX) :]
        for value in schema.values():
            yield from _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _refs(value)


def reachable(roots: Iterable[str], defs: dict[str, Any]) -> list[str]:
    """The named definitions and every definition they reference, transitively (sorted)."""
    seen: set[str] = set()
    todo = [r for r in roots if r in defs]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(r for r in _refs(defs[name]) if r not in seen and r in defs)
    return sorted(seen)


@functools.cache
def _cloneset_schemas() -> dict[str, Any]:
    """CloneSet and its own sub-objects, from the pydantic models; metadata and the pod
    template point at Kubernetes' definitions (JSON Schema form, converted with the rest)."""
    raw = CloneSet.model_json_schema(by_alias=True, ref_template=REF_PREFIX + "{model}")
    kube = {
        "ObjectMeta": _META + "ObjectMeta",
        "PodTemplateSpec": "io.k8s.api.core.v1.PodTemplateSpec",
        "LabelSelector": _META + "LabelSelector",
    }
    prefix = "dev.inplace.apps.v1alpha1."

    def rename(node: Any) -> Any:
        if isinstance(node, dict):
            branches = node.get("anyOf")
            if isinstance(branches, list):  # Optional[X]: OpenAPI has no null type
                kept = [b for b in branches if b != {"type": "null"}]
                if len(kept) == 1:
                    node = {**{k: v for k, v in node.items() if k != "anyOf"}, **kept[0]}
            if "const" in node:  # OpenAPI 3.0 has no const
                node = {**{k: v for k, v in node.items() if k != "const"}, "enum": [node["const"]]}
            new = {k: rename(v) for k, v in node.items() if k != "title"}
            ref = new.get("$ref")
            if isinstance(ref, str) and ref.startswith(REF_PREFIX):
                local = ref[len(REF_PREFIX) :]
                new["$ref"] = REF_PREFIX + kube.get(local, prefix + local)
            return new
        if isinstance(node, list):
            return [rename(v) for v in node]
        return node

    own = {prefix + name: rename(schema) for name, schema in raw.pop("$defs", {}).items()}
    own = {name: schema for name, schema in own.items() if name.removeprefix(prefix) not in kube}
    cloneset = rename(raw)
    cloneset["x-kubernetes-group-version-kind"] = [
        {
            "group": discovery.WORKLOAD_GROUP,
            "version": discovery.WORKLOAD_VERSION,
            "kind": "CloneSet",
        }
    ]
    return {CLONESET_DEFINITION: cloneset, **own}


@functools.cache
def all_definitions() -> dict[str, Any]:
    """Kubernetes' definitions plus the CloneSet ones (JSON Schema form, `#/$defs/` refs)."""
    return {**definitions(), **_cloneset_schemas()}


# --- paths ------------------------------------------------------------------------------------


def _param(
    name: str, where: str, description: str, *, v2: bool, required: bool = False
) -> dict[str, Any]:
    param: dict[str, Any] = {"name": name, "in": where, "description": description}
    if required or where == "path":
        param["required"] = True
    if v2:
        param["type"] = "string"
        param["uniqueItems"] = True
    else:
        param["schema"] = {"type": "string", "uniqueItems": True}
    return param


def _dry_run_param(*, v2: bool) -> dict[str, Any]:
    text = "When present, the write is checked and answered but not persisted: All."
    return _param("dryRun", "query", text, v2=v2)


def _write_params(*, v2: bool) -> list[dict[str, Any]]:
    return [
        _dry_run_param(v2=v2),
        _param("fieldManager", "query", "A name for the actor making these changes.", v2=v2),
        _param(
            "fieldValidation",
            "query",
            "How the server handles unknown fields: Ignore, Warn (default) or Strict.",
            v2=v2,
        ),
    ]


def _op_id(action: str, r: ServedResource) -> str:
    group = "".join(
        p.capitalize() for p in (r.group.split(".")[0] if r.group else "core", r.version)
    )
    name, _, sub = r.name.partition("/")
    scope = "Namespaced" if r.namespaced else ""
    suffix = r.kind + (sub.capitalize() if sub else "")
    plural = "Collection" if action == "deletecollection" else ""
    return f"{action}{group}{scope}{suffix}{plural}" if name else action


def _operation(
    r: ServedResource,
    action: str,
    ref: str,
    *,
    v2: bool,
    body: str | None = None,
    list_kind: bool = False,
) -> dict[str, Any]:
    target = {"$ref": ref + r.definition}
    op: dict[str, Any] = {
        "operationId": _op_id(action, r),
        "tags": [r.prefix.replace("/", "_")],
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.kind},
    }
    params: list[dict[str, Any]] = []
    if action in ("post", "put", "patch"):
        params += _write_params(v2=v2)
    if action == "delete":
        params.append(_dry_run_param(v2=v2))
    if action == "patch":
        params.append(_param("force", "query", "Force an apply to take conflicting fields.", v2=v2))
    if action == "list":
        params += [
            _param(name, "query", text, v2=v2)
            for name, text in (
                ("labelSelector", "A selector on labels."),
                ("fieldSelector", "A selector on fields."),
                ("resourceVersion", "Where a list or watch starts."),
                ("watch", "Watch for changes instead of listing."),
            )
        ]
    if params:
        op["parameters"] = params
    status = {"$ref": ref + _META + "Status"}
    if v2:
        op["consumes"] = list(_PATCH_TYPES) if action == "patch" else ["*/*"]
        op["produces"] = ["application/json", "application/yaml"]
        if body is not None:
            op.setdefault("parameters", []).insert(
                0, {"name": "body", "in": "body", "required": True, "schema": {"$ref": ref + body}}
            )
        op["responses"] = {"200": {"description": "OK", "schema": target}}
        if action == "post":
            op["responses"]["201"] = {"description": "Created", "schema": target}
        op["responses"]["401"] = {"description": "Unauthorized"}
        return op
    if body is not None:
        types = _PATCH_TYPES if action == "patch" else ("*/*",)
        op["requestBody"] = {
            "content": {t: {"schema": {"$ref": ref + body}} for t in types},
            "required": True,
        }
    content = {"application/json": {"schema": status if list_kind else target}}
    op["responses"] = {"200": {"description": "OK", "content": content}}
    if action == "post":
        op["responses"]["201"] = {"description": "Created", "content": content}
    op["responses"]["401"] = {"description": "Unauthorized"}
    return op


def _paths(resources: Iterable[ServedResource], ref: str, *, v2: bool) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for r in resources:
        base = f"/{r.prefix}/namespaces/{{namespace}}/" if r.namespaced else f"/{r.prefix}/"
        name, _, sub = r.name.partition("/")
        scope = (
            [_param("namespace", "path", "object name and auth scope", v2=v2)]
            if r.namespaced
            else []
        )
        item_params = [*scope, _param("name", "path", f"name of the {r.kind}", v2=v2)]
        verbs = set(r.verbs)
        if not sub:
            collection: dict[str, Any] = {"parameters": scope} if scope else {}
            if "list" in verbs:
                collection["get"] = _operation(r, "list", ref, v2=v2, list_kind=True)
            if "create" in verbs:
                collection["post"] = _operation(r, "post", ref, v2=v2, body=r.definition)
            if len(collection) > (1 if scope else 0):
                paths[base + name] = collection
            item_path = f"{base}{name}/{{name}}"
        else:
            item_path = f"{base}{name}/{{name}}/{sub}"
        item: dict[str, Any] = {"parameters": item_params}
        if "get" in verbs:
            item["get"] = _operation(r, "get", ref, v2=v2)
        if "update" in verbs:
            item["put"] = _operation(r, "put", ref, v2=v2, body=r.definition)
        if "patch" in verbs:
            item["patch"] = _operation(r, "patch", ref, v2=v2, body=_META + "Patch")
        if "delete" in verbs:
            item["delete"] = _operation(r, "delete", ref, v2=v2, body=_META + "DeleteOptions")
        paths[item_path] = item
    return paths


_INFO = {"title": "Kubernetes", "version": f"v{KUBERNETES_VERSION}"}


def v3_document(prefix: str) -> dict[str, Any]:
    """The OpenAPI 3.0 document of one group-version (`api/v1`, `apis/<group>/<version>`)."""
    resources = [r for r in served_resources() if r.prefix == prefix]
    defs = all_definitions()
    names = reachable([*_ALWAYS, *(r.definition for r in resources)], defs)
    return {
        "openapi": "3.0.0",
        "info": _INFO,
        "paths": _paths(resources, V3_REF, v2=False),
        "components": {
            "schemas": {name: convert(defs[name], V3_REF, v2=False) for name in names},
            "securitySchemes": {
                "BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}
            },
        },
    }


def v2_document() -> dict[str, Any]:
    """The Swagger 2.0 document of everything served (kube-apiserver's /openapi/v2)."""
    resources = served_resources()
    defs = all_definitions()
    names = reachable([*_ALWAYS, *(r.definition for r in resources)], defs)
    return {
        "swagger": "2.0",
        "info": _INFO,
        "paths": _paths(resources, V2_REF, v2=True),
        "definitions": {name: convert(defs[name], V2_REF, v2=True) for name in names},
        "securityDefinitions": {
            "BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}
        },
        "security": [{"BearerToken": []}],
    }


def v2_media_type(accept: str | None) -> str | None:
    """The form of /openapi/v2 an Accept header asks for, as kube-openapi chooses it: its
    media types by preference (q), the first the server has, a wildcard meaning JSON; JSON or
    `openapiproto.MEDIA_TYPE`, None when it names neither (406)."""
    clauses = []
    for place, part in enumerate((accept or "*/*").split(",")):
        media, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if q > 0:
            clauses.append((-q, place, media.lower()))
    for _, _, media in sorted(clauses):
        if media in ("*/*", "application/*", JSON):
            return JSON
        if media in openapiproto.ACCEPTED:
            return openapiproto.MEDIA_TYPE
    return None


class OpenAPIDocuments:
    """Each document serialized once, on first use, with its hash (kube-apiserver's
    `?hash=` scheme: a client caches a group-version's document until the hash changes)."""

    def __init__(self) -> None:
        self._bytes: dict[str, tuple[bytes, str]] = {}

    def group_versions(self) -> list[str]:
        return sorted({r.prefix for r in served_resources()})

    def v3(self, prefix: str) -> tuple[bytes, str] | None:
        if prefix not in self.group_versions():
            return None
        return self._cached(prefix, lambda: _json(v3_document(prefix)))

    def v2(self, media_type: str = JSON) -> tuple[bytes, str]:
        """The Swagger document as JSON, or as gnostic's protobuf (`openapiproto`)."""
        if media_type == openapiproto.MEDIA_TYPE:
            return self._cached("v2.pb", lambda: openapiproto.to_protobuf(v2_document()))
        return self._cached("v2", lambda: _json(v2_document()))

    def v3_root(self) -> bytes:
        paths = {}
        for prefix in self.group_versions():
            found = self.v3(prefix)
            assert found is not None
            paths[prefix] = {"serverRelativeURL": f"/openapi/v3/{prefix}?hash={found[1]}"}
        return json.dumps({"paths": paths}).encode()

    def _cached(self, key: str, build: Callable[[], bytes]) -> tuple[bytes, str]:
        if key not in self._bytes:
            body = build()
            self._bytes[key] = (body, hashlib.sha512(body).hexdigest().upper()[:128])
        return self._bytes[key]


def _json(document: dict[str, Any]) -> bytes:
    return json.dumps(document, separators=(",", ":"), sort_keys=True).encode()
