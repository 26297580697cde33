"""The JSON Schemas ctxasm validates documents against (package data under ctxasm/schemas; the manifest's, the
budget's and the selection's are links to contract/schemas), and the one error of a validation worth reporting.

`jsonschema` reports where and why a document fails, but walks a manifest of a few hundred entries in about as
long as the whole assembly takes. `checker` compiles a schema once into plain Python closures that only say
valid or not (about ten times faster); a caller runs jsonschema for the message only when that says no. It knows
the keywords our schemas use and refuses a schema with any other, so it cannot pass what it does not check.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sized
from functools import lru_cache
from importlib.resources import files
from typing import Any

from jsonschema import Draft202012Validator, ValidationError
from jsonschema.exceptions import relevance

from ctxasm.errors import brief_message

MANIFEST = "manifest.schema.json"
BUDGET = "budget.schema.json"
SCENARIO = "scenario.schema.json"
SELECTION = "selection.schema.json"

Check = Callable[[Any], bool]


@lru_cache(maxsize=None)
def schema(name: str) -> Mapping[str, Any]:
    return json.loads((files("ctxasm") / "schemas" / name).read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def validator(name: str) -> Draft202012Validator:
    """The checked validator of schema file `name` (one of the names above)."""
    Draft202012Validator.check_schema(schema(name))
    return Draft202012Validator(schema(name))


@lru_cache(maxsize=None)
def checker(name: str) -> Check:
    """A function that says whether a document is valid against schema file `name`, as jsonschema would."""
    validator(name)  # the schema itself is checked first
    return _Compiler(schema(name)).compile(schema(name))


def problems(name: str, document: Any) -> list[tuple[str, str]]:
    """(JSON path, problem) of every place `document` breaks schema file `name`, the most specific first; [] when
    it is valid (the compiled check decides; jsonschema runs only to word a failure)."""
    if checker(name)(document):
        return []
    errors = list(validator(name).iter_errors(document))
    if not errors:
        return []
    worst = most_specific(errors)
    return [(e.json_path, brief_message(e.message, e.instance)) for e in [worst, *(e for e in errors if e is not worst)]]


def most_specific(errors: list[ValidationError]) -> ValidationError:
    """The error that points closest to the fault: the deepest path. A field that fails inside a shared schema
    also makes its siblings 'unevaluated', which says nothing useful, so those rank last."""
    return min(errors, key=lambda e: (e.validator == "unevaluatedProperties", -len(e.absolute_path),
                                      relevance(e)))


# -- the compiled checks ---------------------------------------------------------------------------------------

#: Keywords that annotate and never fail.
_ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "title", "description", "$comment", "examples", "default"})


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": _is_number,
    # JSON Schema's integer is any number with no fraction: 5000.0 is one.
    "integer": lambda v: _is_number(v) and (isinstance(v, int) or v.is_integer()),
}


class _Compiler:
    def __init__(self, root: Mapping[str, Any]):
        self.root = root
        self.refs: dict[str, Check] = {}

    def compile(self, node: Any) -> Check:
        if node is True:
            return lambda v: True
        if node is False:
            return lambda v: False
        unknown = set(node) - _ANNOTATIONS - set(_KEYWORDS)
        if unknown:
            raise ValueError(f"schema keyword(s) the compiled check does not know: {', '.join(sorted(unknown))}")
        kind = node.get("type")
        fused: Check | None = None
        handled: frozenset[str] = frozenset()
        if kind == "object":
            fused, handled = _fused_object(self, node), _OBJECT_KEYWORDS
        elif kind in ("number", "integer"):
            fused, handled = _fused_number(node), _NUMBER_KEYWORDS
        checks = [check for key in node if key in _KEYWORDS and key not in handled
                  and (check := _KEYWORDS[key](self, node)) is not None]
        if fused is not None:
            checks.insert(0, fused)
        return _every(checks)

    def ref(self, target: str) -> Check:
        if not target.startswith("#/$defs/"):
            raise ValueError(f"only local $defs references are compiled, got {target!r}")
        name = target[len("#/$defs/"):]
        if name not in self.refs:
            compiled: Check | None = None
            self.refs[name] = lambda v: compiled(v)  # type: ignore[misc]  # stands in while a definition that refers to itself compiles
            compiled = self.compile(self.root["$defs"][name])
            self.refs[name] = compiled
        return self.refs[name]


def _every(checks: list[Check]) -> Check:
    """All of `checks`, in order, stopping at the first that fails. A plain loop: a generator per call was most
    of the cost of checking a manifest of a few hundred entries."""
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)
    frozen = tuple(checks)

    def every(v: Any) -> bool:
        for check in frozen:
            if not check(v):
                return False
        return True
    return every


def _type(c: _Compiler, node: Mapping[str, Any]) -> Check:
    kinds = node["type"] if isinstance(node["type"], list) else [node["type"]]
    tests = [_TYPES[kind] for kind in kinds]
    if len(tests) == 1:
        return tests[0]
    if len(tests) == 2:
        first, second = tests
        return lambda v: first(v) or second(v)
    return lambda v: any(test(v) for test in tests)


#: The object keywords one fused check of a `"type": "object"` node does at once (ctxasm.core.schemas._fused_object).
_OBJECT_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties"})


#: The keywords one fused check of a `"type": "number"` or `"integer"` node does at once.
_NUMBER_KEYWORDS = frozenset({"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})


def _fused_number(node: Mapping[str, Any]) -> Check:
    """A number node's type and bounds in one check: once the type holds, the bounds need not ask again
    whether the value is a number."""
    is_kind = _TYPES[node["type"]]
    low, high = node.get("minimum"), node.get("maximum")
    above, below = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")

    def fused(v: Any) -> bool:
        return (is_kind(v) and (low is None or v >= low) and (high is None or v <= high)
                and (above is None or v > above) and (below is None or v < below))
    return fused


def _fused_object(c: _Compiler, node: Mapping[str, Any]) -> Check:
    """An object node's type, required keys, properties and additionalProperties in one pass over its items:
    the same verdict as the keywords checked one by one, without testing the type in each of them and walking
    the schema's properties for the keys a document has not got."""
    required = tuple(node.get("required", ()))
    properties = {key: c.compile(sub) for key, sub in node.get("properties", {}).items()}
    if "additionalProperties" in node:
        if "patternProperties" in node:
            raise ValueError("the compiled check does not know patternProperties")
        additional: Check | None = c.compile(node["additionalProperties"])
    else:
        additional = None

    def fused(v: Any) -> bool:
        if not isinstance(v, dict):
            return False
        for key in required:
            if key not in v:
                return False
        for key, item in v.items():
            check = properties.get(key, additional)
            if check is not None and not check(item):
                return False
        return True
    return fused


def _strings(values: list[Any], keyword: str) -> frozenset[str]:
    if not all(isinstance(value, str) for value in values):
        raise ValueError(f"the compiled check knows string {keyword} values only, got {values!r}")
    return frozenset(values)


def _enum(c: _Compiler, node: Mapping[str, Any]) -> Check:
    allowed = _strings(node["enum"], "enum")
    return lambda v: isinstance(v, str) and v in allowed


def _const(c: _Compiler, node: Mapping[str, Any]) -> Check:
    (wanted,) = _strings([node["const"]], "const")
    return lambda v: isinstance(v, str) and v == wanted


def _bound(test: Callable[[Any, Any], bool], keyword: str) -> Callable[[_Compiler, Mapping[str, Any]], Check]:
    def build(c: _Compiler, node: Mapping[str, Any]) -> Check:
        limit = node[keyword]
        return lambda v: not _is_number(v) or test(v, limit)
    return build


def _length(test: Callable[[int, int], bool], keyword: str, kind: type[Sized]) -> Callable[[_Compiler, Mapping[str, Any]], Check]:
    def build(c: _Compiler, node: Mapping[str, Any]) -> Check:
        limit = node[keyword]
        return lambda v: not isinstance(v, kind) or test(len(v), limit)
    return build


def _pattern(c: _Compiler, node: Mapping[str, Any]) -> Check:
    search = re.compile(node["pattern"]).search
    return lambda v: not isinstance(v, str) or search(v) is not None


def _properties(c: _Compiler, node: Mapping[str, Any]) -> Check:
    checks = {key: c.compile(sub) for key, sub in node["properties"].items()}
    return lambda v: not isinstance(v, dict) or all(check(v[key]) for key, check in checks.items() if key in v)


def _required(c: _Compiler, node: Mapping[str, Any]) -> Check:
    keys = tuple(node["required"])
    return lambda v: not isinstance(v, dict) or all(key in v for key in keys)


def _additional(c: _Compiler, node: Mapping[str, Any]) -> Check:
    known = frozenset(node.get("properties", ()))
    if "patternProperties" in node:
        raise ValueError("the compiled check does not know patternProperties")
    check = c.compile(node["additionalProperties"])
    return lambda v: not isinstance(v, dict) or all(check(item) for key, item in v.items() if key not in known)


def _property_names(c: _Compiler, node: Mapping[str, Any]) -> Check:
    check = c.compile(node["propertyNames"])
    return lambda v: not isinstance(v, dict) or all(check(key) for key in v)


def _dependent_required(c: _Compiler, node: Mapping[str, Any]) -> Check:
    rules = {key: tuple(needed) for key, needed in node["dependentRequired"].items()}
    return lambda v: not isinstance(v, dict) or all(all(n in v for n in needed)
                                                    for key, needed in rules.items() if key in v)


def _prefix_items(c: _Compiler, node: Mapping[str, Any]) -> Check:
    checks = [c.compile(sub) for sub in node["prefixItems"]]

    def prefix_items(v: Any) -> bool:
        if not isinstance(v, list):
            return True
        for check, item in zip(checks, v):
            if not check(item):
                return False
        return True
    return prefix_items


def _items(c: _Compiler, node: Mapping[str, Any]) -> Check:
    skip = len(node.get("prefixItems", ()))
    check = c.compile(node["items"])

    def items(v: Any) -> bool:
        if not isinstance(v, list):
            return True
        for item in (v[skip:] if skip else v):
            if not check(item):
                return False
        return True
    return items


_UNIQUE = Draft202012Validator({"uniqueItems": True})  # equality as JSON Schema defines it (1 == 1.0, not True)


def _unique(c: _Compiler, node: Mapping[str, Any]) -> Check | None:
    if not node["uniqueItems"]:
        return None
    return lambda v: not isinstance(v, list) or _UNIQUE.is_valid(v)


def _if(c: _Compiler, node: Mapping[str, Any]) -> Check:
    condition = c.compile(node["if"])
    then = c.compile(node.get("then", True))
    otherwise = c.compile(node.get("else", True))
    return lambda v: then(v) if condition(v) else otherwise(v)


def _any_of(c: _Compiler, node: Mapping[str, Any]) -> Check:
    checks = [c.compile(sub) for sub in node["anyOf"]]
    return lambda v: any(check(v) for check in checks)


def _all_of(c: _Compiler, node: Mapping[str, Any]) -> Check:
    return _every([c.compile(sub) for sub in node["allOf"]])


def _one_of(c: _Compiler, node: Mapping[str, Any]) -> Check:
    checks = [c.compile(sub) for sub in node["oneOf"]]
    return lambda v: sum(1 for check in checks if check(v)) == 1


_KEYWORDS: dict[str, Callable[[_Compiler, Mapping[str, Any]], Check | None]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "minimum": _bound(lambda v, limit: v >= limit, "minimum"),
    "maximum": _bound(lambda v, limit: v <= limit, "maximum"),
    "exclusiveMinimum": _bound(lambda v, limit: v > limit, "exclusiveMinimum"),
    "exclusiveMaximum": _bound(lambda v, limit: v < limit, "exclusiveMaximum"),
    "minLength": _length(lambda n, limit: n >= limit, "minLength", str),
    "maxLength": _length(lambda n, limit: n <= limit, "maxLength", str),
    "minItems": _length(lambda n, limit: n >= limit, "minItems", list),
    "maxItems": _length(lambda n, limit: n <= limit, "maxItems", list),
    "minProperties": _length(lambda n, limit: n >= limit, "minProperties", dict),
    "pattern": _pattern,
    "properties": _properties,
    "required": _required,
    "additionalProperties": _additional,
    "propertyNames": _property_names,
    "dependentRequired": _dependent_required,
    "prefixItems": _prefix_items,
    "items": _items,
    "uniqueItems": _unique,
    "if": _if,
    "then": lambda c, node: None,  # compiled with "if"
    "else": lambda c, node: None,
    "anyOf": _any_of,
    "allOf": _all_of,
    "oneOf": _one_of,
    "$ref": lambda c, node: c.ref(node["$ref"]),
}
