"""What a tool's JSON Schema must say before a tool may run: every string it takes is bounded.

A tool's arguments come from the model (or any MCP client); they reach the database and, as tool results, the
model's context again. The loader refuses a scenario whose toolbox schema leaves a string unbounded, and the
Memory Manager refuses to call a stored tool whose schema does.
"""

from __future__ import annotations

from typing import Any

_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SUBSCHEMAS = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "unevaluatedProperties",
               "unevaluatedItems", "propertyNames")


def unbounded_strings(schema: Any, path: str = "") -> list[str]:
    """The places in a tool's JSON Schema that accept a string of any length: a subschema of type string, or of
    no type at all ({} or true), with no maxLength (an enum or const is bounded). Every string a tool takes must be bounded: its arguments reach
    the database and the model's context."""
    if schema is True:  # the schema that accepts anything, a string of any length among it
        return [path or "arguments"]
    if not isinstance(schema, dict):
        return []
    found: list[str] = []
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds if isinstance(kinds, list) else []
    bounded = "maxLength" in schema or "enum" in schema or "const" in schema
    # A subschema without a type takes any type, strings of any length too, unless what it combines says
    # otherwise (allOf, anyOf, oneOf and $ref are walked or resolved on their own).
    untyped = not kinds and not any(key in schema for key in ("allOf", "anyOf", "oneOf", "$ref"))
    if ("string" in kinds or untyped) and not bounded:
        found.append(path or "arguments")
    for key in _SUBSCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            for name, sub in schema[key].items():
                found += unbounded_strings(sub, f"{path}.{name}" if path else str(name))
    for key in _SUBSCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            for index, sub in enumerate(schema[key]):
                found += unbounded_strings(sub, f"{path}[{key}:{index}]")
    for key in _SUBSCHEMAS:
        found += unbounded_strings(schema.get(key), f"{path}[{key}]" if path else f"[{key}]")
    return found
