"""JSON Schema handling for structured output: checking the schema, validating the output."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema

from memex.reasoner.errors import InvalidOutput
from memex.shared.errors import InvalidArgument

MAX_SCHEMA_CHARS = 64_000


def parse_schema(text: str) -> dict[str, Any] | None:
    """The request's ``json_schema`` as a checked schema, or None when empty."""
    if not text.strip():
        return None
    if len(text) > MAX_SCHEMA_CHARS:
        raise InvalidArgument(
            f"json_schema is {len(text)} characters, the limit is {MAX_SCHEMA_CHARS}"
        )
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArgument(
            f"json_schema is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(schema, dict):
        raise InvalidArgument("json_schema must be a JSON object (a JSON Schema)")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "the top level"
        raise InvalidArgument(
            f"json_schema is not a valid JSON Schema at {where}: {exc.message}"
        ) from None
    return schema


def validate_output(text: str, schema: Mapping[str, Any]) -> None:
    """InvalidOutput unless ``text`` is JSON that satisfies ``schema``."""
    try:
        value = json.loads(text, strict=False)
    except json.JSONDecodeError as exc:
        raise InvalidOutput(f"the model's output is not valid JSON ({exc.msg})") from None
    error = jsonschema.exceptions.best_match(
        jsonschema.validators.validator_for(schema)(schema).iter_errors(value)
    )
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the top level"
        raise InvalidOutput(
            f"the model's output does not match the schema at {where}: {error.message}"
        )


def schema_instructions(schema: Mapping[str, Any]) -> str:
    """A system-prompt addition asking for JSON that satisfies ``schema`` (prompt fallback)."""
    return (
        "Reply with a single JSON value and nothing else: no prose, no code fences. "
        "It must satisfy this JSON Schema:\n" + json.dumps(schema, separators=(",", ":"))
    )


def example_instance(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """A small value that satisfies common schemas (the stub's structured reply).

    Covers what plan and answer schemas use: objects with required properties, arrays with
    minItems, enums, consts, anyOf/oneOf/allOf and local $refs. Not a general solver.
    """
    root = root if root is not None else schema
    if "$ref" in schema:
        target: Any = root
        for part in str(schema["$ref"]).removeprefix("#/").split("/"):
            if part:
                target = target[part]
        return example_instance(target, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return example_instance(schema[key][0], root)
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(part)
        return example_instance(merged, root)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties", {})
        return {
            name: example_instance(properties.get(name, {}), root)
            for name in schema.get("required", list(properties))
        }
    if kind == "array":
        count = int(schema.get("minItems", 0))
        return [example_instance(schema.get("items", {}), root) for _ in range(count)]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        return int(low) + (1 if "exclusiveMinimum" in schema else 0) if kind == "integer" else low
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "stub" + "x" * max(0, int(schema.get("minLength", 0)) - 4)
