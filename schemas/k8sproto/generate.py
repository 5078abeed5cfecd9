"""Regenerates the protobuf modules here from Kubernetes' own `generated.proto` files.

    python -m pip install grpcio-tools   # protoc, as a library (a generator, not a dependency)
    python schemas/k8sproto/generate.py

Takes k8s.io/api and k8s.io/apimachinery at VERSION from the Go module proxy, compiles the
files PROTOS names with grpc_tools' protoc, and rewrites the generated imports so the modules
live under `schemas.k8sproto` (protoc names them after the proto package, `k8s.io.…`). Also
gnostic's `OpenAPIv2.proto` at the version Kubernetes VERSION builds with (GNOSTIC): the
message of `/openapi/v2` in protobuf, the form kubectl and client-go read it in. The
proto files do not say which fields Go's JSON inlines (a Probe's handler, a Volume's source):
`inline.json` lists them, read from the `json:",inline"` tags of the same packages' types.go.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

VERSION = "v0.35.0"  # Kubernetes 1.35
MODULES = ("api", "apimachinery")
PROTOS = (
    "k8s.io/api/core/v1/generated.proto",
    "k8s.io/api/authorization/v1/generated.proto",
    "k8s.io/api/policy/v1/generated.proto",
    "k8s.io/apimachinery/pkg/api/resource/generated.proto",
    "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto",
    "k8s.io/apimachinery/pkg/runtime/generated.proto",
    "k8s.io/apimachinery/pkg/runtime/schema/generated.proto",
    "k8s.io/apimachinery/pkg/util/intstr/generated.proto",
)
# github.com/google/gnostic-models, as k8s.io/apimachinery VERSION's go.mod requires it.
GNOSTIC = ("github.com/google/gnostic-models", "v0.7.0", "openapiv2/OpenAPIv2.proto")
HERE = Path(__file__).resolve().parent
PACKAGE = "schemas.k8sproto"


def _fetch(work: Path) -> Path:
    include = work / "include" / "k8s.io"
    include.mkdir(parents=True)
    for module in MODULES:
        url = f"https://proxy.golang.org/k8s.io/{module}/@v/{VERSION}.zip"
        with urllib.request.urlopen(url, timeout=60) as answer:
            archive = zipfile.ZipFile(io.BytesIO(answer.read()))
        prefix = f"k8s.io/{module}@{VERSION}/"
        for name in archive.namelist():
            if name.startswith(prefix) and name.endswith(("generated.proto", "/types.go")):
                target = include / module / name.removeprefix(prefix)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(name))
    module, version, proto = GNOSTIC
    url = f"https://proxy.golang.org/{module}/@v/{version}.zip"
    with urllib.request.urlopen(url, timeout=60) as answer:
        archive = zipfile.ZipFile(io.BytesIO(answer.read()))
    (work / "include" / proto).parent.mkdir(parents=True)
    (work / "include" / proto).write_bytes(archive.read(f"{module}@{version}/{proto}"))
    return work / "include"


_STRUCT = re.compile(r"^type (\w+) struct")
_INLINE = re.compile(r'json:",inline" protobuf:"bytes,(\d+),')


def _inline_fields(include: Path) -> dict[str, list[int]]:
    """{proto message: field numbers whose message Go's JSON inlines} for PROTOS' packages."""
    found: dict[str, list[int]] = {}
    for proto in PROTOS:
        types = include / Path(proto).parent / "types.go"
        package = str(Path(proto).parent).replace("/", ".")
        if not types.exists():
            continue
        struct = ""
        for line in types.read_text().splitlines():
            if match := _STRUCT.match(line):
                struct = match.group(1)
            elif (match := _INLINE.search(line)) and struct:
                found.setdefault(f"{package}.{struct}", []).append(int(match.group(1)))
    return found


def main() -> int:
    from importlib.resources import files

    from grpc_tools import protoc

    well_known = files("grpc_tools") / "_proto"  # google/protobuf/any.proto, for gnostic
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        include = _fetch(work)
        out = work / "out"
        out.mkdir()
        protos = [*PROTOS, GNOSTIC[2]]
        args = ["protoc", f"-I{include}", f"-I{well_known}", f"--python_out={out}", *protos]
        if protoc.main(args) != 0:
            return 1
        shutil.rmtree(HERE / "k8s", ignore_errors=True)
        shutil.rmtree(HERE / "openapiv2", ignore_errors=True)
        for generated in sorted(out.rglob("*_pb2.py")):
            text = re.sub(
                r"^from k8s\.io\.", f"from {PACKAGE}.k8s.io.", generated.read_text(), flags=re.M
            )
            target = HERE / generated.relative_to(out)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        inline = _inline_fields(include)
        (HERE / "inline.json").write_text(json.dumps(inline, indent=1, sort_keys=True) + "\n")
        for directory in [HERE / "k8s", *(p for p in (HERE / "k8s").rglob("*") if p.is_dir())]:
            (directory / "__init__.py").touch()
        (HERE / "openapiv2" / "__init__.py").touch()
    print(f"generated {len(protos)} modules (k8s.io {VERSION}, gnostic {GNOSTIC[1]}) under {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
