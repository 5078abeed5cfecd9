"""JSON Schemas of the envelope and every event, generated from the models.

`python -m schemas.jsonschema` rewrites `schemas/json/`; a test fails when the committed files
drift from the code, so a payload change is always a visible, reviewed schema change.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from schemas.envelope import Envelope
from schemas.events import event_types

OUT = Path(__file__).with_name("json")


def generated() -> dict[str, dict[str, Any]]:
    """File name → schema, for the envelope and each event type (with its topic/version)."""
    files: dict[str, dict[str, Any]] = {}
    envelope = Envelope.model_json_schema(by_alias=True)
    envelope["properties"]["payload"] = {
        "description": "one of the event payloads; `type` says which",
        "type": "object",
    }
    envelope.pop("$defs", None)
    files["Envelope.schema.json"] = envelope
    for name, cls in sorted(event_types().items()):
        schema = cls.model_json_schema(by_alias=True)
        schema["x-inplace-topic"] = cls.TOPIC
        schema["x-inplace-schema-version"] = cls.VERSION
        files[f"{name}.schema.json"] = schema
    return files


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main() -> int:
    OUT.mkdir(exist_ok=True)
    wanted = generated()
    for stale in OUT.glob("*.schema.json"):
        if stale.name not in wanted:
            stale.unlink()
    for name, schema in wanted.items():
        (OUT / name).write_text(render(schema))
    print(f"wrote {len(wanted)} schemas to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
