"""The rule schema as JSON Schema, built from the same vocabulary the loader checks against.

``rules/schema.json`` is this module's output (``python -m crashcart.engine.schema``); a test
keeps the two in step. Editors use it to validate and complete rule files, e.g. with the YAML
language server's ``# yaml-language-server: $schema=schema.json`` comment.
"""

from __future__ import annotations

import json
from typing import Any

from .facts import COMMON_FIELDS, FACT_KINDS
from .fixes import FRAMEWORKS
from .rules import (
    FIX_KEYS,
    MAX_CONDITIONS,
    MAX_COUNT,
    MAX_FIXES,
    MAX_IN_VALUES,
    MAX_REGEX_CHARS,
    MAX_TEMPLATE_CHARS,
    OPERATORS,
    PROBES,
    SETTINGS,
    TIERS,
)
from .vocabulary import CATEGORIES

SCHEMA_ID = "https://crashcart.dev/schema/rule.json"


_TEST = {
    "description": "a value (equality) or {operator: value}",
    "oneOf": [
        {"type": ["string", "number", "boolean"]},
        {
            "type": "object",
            "propertyNames": {"enum": list(OPERATORS)},
            "minProperties": 1,
            "properties": {
                "in": {"type": "array", "minItems": 1, "maxItems": MAX_IN_VALUES},
                "not_in": {"type": "array", "minItems": 1, "maxItems": MAX_IN_VALUES},
                "exists": {"type": "boolean"},
                "matches": {"type": "string", "maxLength": MAX_REGEX_CHARS},
                "not_matches": {"type": "string", "maxLength": MAX_REGEX_CHARS},
            },
        },
    ],
}


def _condition(kind: str) -> dict[str, Any]:
    fields = {**COMMON_FIELDS, **FACT_KINDS[kind]}
    where: dict[str, Any] = {
        "type": "object",
        "properties": {
            name: {"$ref": "#/$defs/test", "description": doc} for name, doc in fields.items()
        },
    }
    if kind != "line":  # a line condition's fields are its regex's named groups
        where["additionalProperties"] = False
    properties: dict[str, Any] = {
        "fact": {"const": kind},
        "as": {
            "type": "string",
            "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
            "description": "name for placeholders and 'after'",
        },
        "where": where,
        "same": {
            "description": "fields that must equal those of the first condition's fact",
            "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
        },
        "after": {"type": "string", "description": "name of a condition this fact follows"},
        "count": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_COUNT,
            "description": "at least this many facts",
        },
    }
    if kind == "line":
        properties["regex"] = {
            "type": "string",
            "maxLength": MAX_REGEX_CHARS,
            "description": "RE2; named groups are fields",
        }
    return {
        "type": "object",
        "required": ["fact", "regex"] if kind == "line" else ["fact"],
        "additionalProperties": False,
        "properties": properties,
    }


def build_schema() -> dict[str, Any]:
    """The JSON Schema of one rule document."""
    text = {"type": "string", "maxLength": MAX_TEMPLATE_CHARS}
    fix = {
        "type": "object",
        "required": ["title"],
        "additionalProperties": False,
        "properties": {
            "title": text,
            "env": {"type": "object", "additionalProperties": {"type": "string"}},
            "set": {
                "type": "object",
                "propertyNames": {"enum": list(SETTINGS)},
                "description": "framework-neutral settings; half, double and tenth are relative",
            },
            "command": text,
            "code": text,
            "patch": text,
            "note": text,
            "frameworks": {
                "type": "array",
                "items": {"enum": list(FRAMEWORKS)},
                "description": "show this fix only for logs of these frameworks (flags of one "
                "trainer, such as --save_total_limit)",
            },
        },
        "anyOf": [
            {"required": [key]} for key in FIX_KEYS if key not in ("title", "note", "frameworks")
        ],
    }
    conditions = {
        "type": "array",
        "minItems": 1,
        "maxItems": MAX_CONDITIONS,
        "items": {"$ref": "#/$defs/condition"},
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "crashcart rule",
        "description": "One YAML document per rule; see docs/rules.md.",
        "type": "object",
        "required": ["id", "category", "title", "confidence", "when", "summary", "fixes"],
        "additionalProperties": False,
        "properties": {
            "id": {"type": "string", "pattern": r"^[a-z][a-z0-9_]*\.[a-z0-9_]+(?:\.[a-z0-9_]+)*$"},
            "category": {"enum": list(CATEGORIES)},
            "title": {"type": "string", "maxLength": 90},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "tier": {
                "enum": list(TIERS),
                "description": "specific (default) or vocabulary: recognised from a message's "
                "words, ranked below every specific rule",
            },
            "when": {
                "type": "object",
                "additionalProperties": False,
                "minProperties": 1,
                "properties": {
                    name: {"$ref": "#/$defs/conditions"} for name in ("all", "any", "none")
                },
            },
            "summary": {"type": "string", "minLength": 1, "maxLength": MAX_TEMPLATE_CHARS},
            "fixes": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_FIXES,
                "items": {"$ref": "#/$defs/fix"},
            },
            "explains": {"type": "array", "items": {"enum": list(CATEGORIES)}},
            "probe": {"enum": list(PROBES)},
            "references": {"type": "array", "items": {"type": "string", "format": "uri"}},
            "examples": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "fires": {"type": "array", "items": {"type": "string"}},
                    "quiet": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
        "$defs": {
            "test": _TEST,
            "fix": fix,
            "conditions": conditions,
            "condition": {"oneOf": [{"$ref": f"#/$defs/fact_{kind}"} for kind in FACT_KINDS]},
            **{f"fact_{kind}": _condition(kind) for kind in FACT_KINDS},
        },
    }


def main() -> None:
    """Print the schema (``python -m crashcart.engine.schema > rules/schema.json``)."""
    print(json.dumps(build_schema(), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
