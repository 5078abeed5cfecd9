"""Kubernetes' own published API schema, for one Kubernetes version.

The definitions (`io.k8s.api.core.v1.Pod`, `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`,
…) are the OpenAPI definitions kube-apiserver publishes, as JSON Schema 2020-12 with the
`x-kubernetes-*` extensions kept (patch merge keys, list types, group-version-kind). The
`kubernetes-validate` package ships them per Kubernetes version; we read them instead of
hand-writing hundreds of fields. Optional fields are typed `[T, "null"]` there, as Go's JSON
decoding treats `null` as unset.

Both the apiserver's validation (types, enums, required and unknown fields) and its OpenAPI
documents come from here, so they cannot disagree.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

__all__ = ["KUBERNETES_VERSION", "REF_PREFIX", "definitions", "gvk_definition"]

KUBERNETES_VERSION = "1.35.0"
"""The Kubernetes release whose API we serve (core/v1 as of this version)."""

REF_PREFIX = "#/$defs/"
"""How a definition names another in the shipped schema: `{"$ref": "#/$defs/<name>"}`."""


@functools.cache
def definitions() -> dict[str, dict[str, Any]]:
    """Every definition of the Kubernetes API, by its OpenAPI name. Shared: do not mutate."""
    path = (
        resources.files("kubernetes_validate")
        / "kubernetes-json-schema"
        / f"v{KUBERNETES_VERSION}-local"
        / "_definitions.json"
    )
    document = json.loads(path.read_text(encoding="utf-8"))
    defs: dict[str, dict[str, Any]] = document["$defs"]
    return defs


def gvk_definition(group: str, version: str, kind: str) -> str | None:
    """The definition name of a kind (`("", "v1", "Pod")` → `io.k8s.api.core.v1.Pod`)."""
    return _by_gvk().get((group, version, kind))


@functools.cache
def _by_gvk() -> dict[tuple[str, str, str], str]:
    found: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            found.setdefault((gvk.get("group", ""), gvk["version"], gvk["kind"]), name)
    return found
