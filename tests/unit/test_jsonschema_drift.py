"""The committed JSON Schemas are exactly what the models generate."""

from __future__ import annotations

from schemas import jsonschema


def test_committed_schemas_match_the_models() -> None:
    wanted = jsonschema.generated()
    committed = {p.name: p.read_text() for p in jsonschema.OUT.glob("*.schema.json")}
    assert sorted(committed) == sorted(wanted), "run: python -m schemas.jsonschema"
    for name, schema in wanted.items():
        assert committed[name] == jsonschema.render(schema), (
            f"{name} drifted from the models; run: python -m schemas.jsonschema"
        )


def test_schemas_carry_topic_and_version() -> None:
    for name, schema in jsonschema.generated().items():
        if name != "Envelope.schema.json":
            assert schema["x-inplace-topic"] in {
                "pods",
                "nodes",
                "policy",
                "k8s-events",
                "workloads",
            }
            assert schema["x-inplace-schema-version"] >= 1
