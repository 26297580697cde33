"""A JSON Schema compiled to Python source: one function that says whether a document is valid, as jsonschema
(Draft 2020-12) would, and nothing more (ctxasm.core.schemas runs jsonschema to word a failure).

The check of a selection document or a manifest walks every entry of a large budget's window, and a Python call
per keyword per node was most of its cost. Here a node's keywords become one boolean expression (type, bounds,
lengths, enum, const, pattern, the combinators, a `$ref` as a call), and a node that must loop (an object's
properties, an array's items) becomes one function, whose properties are read by key. The compiler knows the
keywords our schemas use and refuses a schema with any other, so it cannot pass what it does not check
(unevaluatedProperties only where the names evaluated do not depend on the document: properties, allOf, $ref).
Strings and numbers of the schema enter the source through repr(); the schemas are the package's own files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from jsonschema import Draft202012Validator

Check = Callable[[Any], bool]

#: Keywords that annotate and never fail.
_ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "title", "description", "$comment", "examples", "default"})

#: The keywords a node's expression checks in place.
_INLINE = frozenset({"type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                     "minLength", "maxLength", "minItems", "maxItems", "minProperties", "pattern", "required",
                     "uniqueItems", "if", "then", "else", "anyOf", "allOf", "oneOf", "$ref"})
#: The keywords that loop over an object's members or an array's items: the node becomes a function.
_OBJECT_LOOPS = frozenset({"properties", "additionalProperties", "propertyNames", "dependentRequired",
                           "unevaluatedProperties"})
#: The keywords that apply a subschema to the same object only on some condition, and the ones that evaluate
#: property names by pattern: where they could evaluate names, which names are evaluated depends on the document.
_CONDITIONAL = ("anyOf", "oneOf", "if", "then", "else")
_BY_PATTERN = ("patternProperties", "additionalProperties", "unevaluatedProperties")
_ARRAY_LOOPS = frozenset({"prefixItems", "items"})
_KNOWN = _INLINE | _OBJECT_LOOPS | _ARRAY_LOOPS

# The numeric tests try the exact built-in types first (what a parsed document holds), then the general test.
_NUMBER = ("(type({v}) is float or type({v}) is int "
           "or (isinstance({v}, (int, float)) and not isinstance({v}, bool)))")
#: JSON Schema's integer is any number with no fraction: 5000.0 is one.
_TYPES = {
    "object": "isinstance({v}, dict)",
    "array": "isinstance({v}, list)",
    "string": "isinstance({v}, str)",
    "boolean": "isinstance({v}, bool)",
    "null": "{v} is None",
    "number": _NUMBER,
    "integer": ("(type({v}) is int or (isinstance({v}, int) and not isinstance({v}, bool)) "
                "or (isinstance({v}, float) and {v}.is_integer()))"),
}
#: How deep `$ref`s to definitions without loops are written out in place instead of called.
_INLINE_DEPTH = 3
_BOUNDS = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
#: (the type a length applies to, the comparison)
_LENGTHS = {"minLength": ("str", ">="), "maxLength": ("str", "<="), "minItems": ("list", ">="),
            "maxItems": ("list", "<="), "minProperties": ("dict", ">=")}
_KIND_OF_CLASS = {"str": "string", "list": "array", "dict": "object"}

_UNIQUE = Draft202012Validator({"uniqueItems": True})  # equality as JSON Schema defines it (1 == 1.0, not True)


def compile_check(root: Mapping[str, Any]) -> Check:
    """A function that says whether a document is valid against `root` (its `$ref`s point into its `$defs`)."""
    return _Generator(root).build()


class _Generator:
    def __init__(self, root: Mapping[str, Any]):
        self.root = root
        self.functions: list[str] = []
        self.namespace: dict[str, Any] = {"_unique": _UNIQUE.is_valid, "_absent": object()}
        self.refs: dict[str, str] = {}
        self.count = 0
        self.inlining = 0

    def build(self) -> Check:
        entry = self.function(self.root)
        source = "\n\n".join(self.functions)
        exec(compile(source, "<compiled JSON Schema>", "exec"), self.namespace)
        check: Check = self.namespace[entry]
        return check

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def constant(self, value: Any) -> str:
        name = self.name("k")
        self.namespace[name] = value
        return name

    @staticmethod
    def definition_key(target: str) -> str:
        """The `$defs` key a `$ref` names; only local definitions are compiled."""
        if not target.startswith("#/$defs/"):
            raise ValueError(f"only local $defs references are compiled, got {target!r}")
        return target[len("#/$defs/"):]

    def ref(self, target: str) -> str:
        """The function checking `$defs` entry `target`, generated once (a definition may refer to itself)."""
        key = self.definition_key(target)
        if key not in self.refs:
            self.refs[key] = self.name("d")
            self.function(self.root["$defs"][key], self.refs[key])
        return self.refs[key]

    def function(self, node: Any, name: str | None = None) -> str:
        """Generate `def name(v)` checking `node`; its name."""
        name = name or self.name("f")
        body = [f"    if not ({self.expression(node, 'v', loops=False)}):", "        return False"]
        if isinstance(node, dict):
            if _OBJECT_LOOPS & node.keys():
                body += self.object_loops(node)
            if _ARRAY_LOOPS & node.keys():
                body += self.array_loops(node)
        self.functions.append("\n".join([f"def {name}(v):", *body, "    return True"]))
        return name

    def expression(self, node: Any, v: str, loops: bool = True) -> str:
        """A boolean expression over the variable `v` checking `node`; its looping keywords through a function
        call, or not at all when `loops` is False (the caller generates them)."""
        if node is True:
            return "True"
        if node is False:
            return "False"
        unknown = set(node) - _ANNOTATIONS - _KNOWN
        if unknown:
            raise ValueError(f"schema keyword(s) the compiled check does not know: {', '.join(sorted(unknown))}")
        if loops and (_OBJECT_LOOPS | _ARRAY_LOOPS) & node.keys():
            return f"{self.function(node)}({v})"
        kinds = node.get("type")
        kinds = [kinds] if isinstance(kinds, str) else kinds
        clauses = []
        if kinds is not None:
            clauses.append(" or ".join(_TYPES[kind].format(v=v) for kind in kinds))
        numeric_only = kinds is not None and set(kinds) <= {"number", "integer"}
        for keyword, operator in _BOUNDS.items():
            if keyword in node:
                test = f"{v} {operator} {node[keyword]!r}"
                clauses.append(test if numeric_only else f"not {_NUMBER.format(v=v)} or {test}")
        for keyword, (cls, operator) in _LENGTHS.items():
            if keyword in node:
                test = f"len({v}) {operator} {node[keyword]!r}"
                only = kinds is not None and set(kinds) == {_KIND_OF_CLASS[cls]}
                clauses.append(test if only else f"not isinstance({v}, {cls}) or {test}")
        if "enum" in node:
            clauses.append(f"isinstance({v}, str) and {v} in {self.constant(_strings(node['enum'], 'enum'))}")
        if "const" in node:
            (wanted,) = _strings([node["const"]], "const")
            clauses.append(f"isinstance({v}, str) and {v} == {wanted!r}")
        if "pattern" in node:
            clauses.append(f"not isinstance({v}, str) or {self.constant(re.compile(node['pattern']))}.search({v}) "
                           "is not None")
        if "required" in node:
            present = " and ".join(f"{key!r} in {v}" for key in node["required"]) or "True"
            clauses.append(f"not isinstance({v}, dict) or ({present})")
        if node.get("uniqueItems"):
            clauses.append(f"not isinstance({v}, list) or _unique({v})")
        if "$ref" in node:
            clauses.append(self.reference(node["$ref"], v))
        if "anyOf" in node:
            clauses.append(" or ".join(f"({self.expression(sub, v)})" for sub in node["anyOf"]))
        if "allOf" in node:
            clauses.append(" and ".join(f"({self.expression(sub, v)})" for sub in node["allOf"]))
        if "oneOf" in node:
            clauses.append(self.one_of(node["oneOf"], v))
        if "if" in node:
            clauses.append(f"({self.expression(node.get('then', True), v)}) if ({self.expression(node['if'], v)}) "
                           f"else ({self.expression(node.get('else', True), v)})")
        return " and ".join(f"({clause})" for clause in clauses) or "True"

    def reference(self, target: str, v: str) -> str:
        """A `$ref` as an expression: a definition that needs no loop written out in place (a call per value
        cost more than most such checks, an enum or a number), any other through its function."""
        definition = self.root.get("$defs", {}).get(target[len("#/$defs/"):]) if target.startswith("#/$defs/") \
            else None
        if isinstance(definition, dict) and not (_OBJECT_LOOPS | _ARRAY_LOOPS) & definition.keys() \
                and self.inlining < _INLINE_DEPTH:
            self.inlining += 1
            try:
                return self.expression(definition, v)
            finally:
                self.inlining -= 1
        return f"{self.ref(target)}({v})"

    def one_of(self, alternatives: list[Any], v: str) -> str:
        """Exactly one alternative holds. The common pair, null or a schema that null does not satisfy, cannot
        both hold, so it is written as either (the count evaluated both)."""
        nulls = [sub for sub in alternatives if isinstance(sub, dict) and set(sub) - _ANNOTATIONS == {"type"}
                 and sub["type"] == "null"]
        if len(alternatives) == 2 and len(nulls) == 1:
            (other,) = [sub for sub in alternatives if sub is not nulls[0]]
            if not Draft202012Validator({**other, "$defs": self.root.get("$defs", {})}
                                        if isinstance(other, dict) else other).is_valid(None):
                return f"{v} is None or ({self.expression(other, v)})"
        count = " + ".join(f"(1 if ({self.expression(sub, v)}) else 0)" for sub in alternatives)
        return f"{count} == 1"

    def object_loops(self, node: Mapping[str, Any]) -> list[str]:
        lines = ["    if isinstance(v, dict):"]
        properties = node.get("properties", {})
        for key, sub in properties.items():
            test = self.expression(sub, "x")
            if test != "True":
                lines += [f"        x = v.get({key!r}, _absent)",
                          f"        if x is not _absent and not ({test}):", "            return False"]
        if "additionalProperties" in node:
            lines += self.other_names(frozenset(properties), node["additionalProperties"])
        if "propertyNames" in node:
            lines += ["        for x in v:", f"            if not ({self.expression(node['propertyNames'], 'x')}):",
                      "                return False"]
        for key, needed in node.get("dependentRequired", {}).items():
            present = " and ".join(f"{n!r} in v" for n in needed) or "True"
            lines += [f"        if {key!r} in v and not ({present}):", "            return False"]
        if "unevaluatedProperties" in node:
            if "additionalProperties" in node:
                raise ValueError("the compiled check knows unevaluatedProperties without additionalProperties only")
            evaluated = self.evaluated_names({k: w for k, w in node.items() if k != "unevaluatedProperties"})
            lines += self.other_names(evaluated, node["unevaluatedProperties"])
        return lines

    def other_names(self, names: frozenset[str], sub: Any) -> list[str]:
        """The lines that check every member whose name is not in `names` against `sub`."""
        known = self.constant(names)
        other = self.expression(sub, "x")
        if other == "False":
            return [f"        if not {known}.issuperset(v):", "            return False"]
        if other == "True":
            return []
        return ["        for key, x in v.items():",
                f"            if key not in {known} and not ({other}):", "                return False"]

    def evaluated_names(self, node: Any, seen: frozenset[str] = frozenset()) -> frozenset[str]:
        """The property names an object valid against `node` has had evaluated, for unevaluatedProperties: the
        keys of its `properties` and of those of every schema it applies whatever the document (allOf, $ref).
        Every one of those must hold for the object to be valid, so their names are known without the document.
        A schema applied on a condition (anyOf, oneOf, if/then/else) that could evaluate a name, and names
        evaluated by pattern, would make the set depend on the document: refused."""
        if not isinstance(node, dict):
            return frozenset()
        found = [keyword for keyword in _BY_PATTERN if keyword in node]
        if found:
            raise ValueError(f"the compiled check knows unevaluatedProperties over properties, allOf and $ref only, "
                             f"not {', '.join(found)}")
        names = frozenset(node.get("properties", {}))
        for sub in node.get("allOf", ()):
            names |= self.evaluated_names(sub, seen)
        if "$ref" in node and node["$ref"] not in seen:
            key = self.definition_key(node["$ref"])
            names |= self.evaluated_names(self.root["$defs"][key], seen | {node["$ref"]})
        for keyword in _CONDITIONAL:
            branches = node[keyword] if isinstance(node.get(keyword), list) else [node.get(keyword)]
            if any(self.evaluated_names(sub, seen) for sub in branches if sub is not None):
                raise ValueError(f"the compiled check knows unevaluatedProperties over properties, allOf and $ref "
                                 f"only, not names a {keyword} branch evaluates")
        return names

    def array_loops(self, node: Mapping[str, Any]) -> list[str]:
        lines = ["    if isinstance(v, list):"]
        prefix = node.get("prefixItems", ())
        for at, sub in enumerate(prefix):
            lines += [f"        if len(v) > {at}:", f"            x = v[{at}]",
                      f"            if not ({self.expression(sub, 'x')}):", "                return False"]
        if "items" in node:
            rest = self.expression(node["items"], "x")
            if rest == "False":
                lines += [f"        if len(v) > {len(prefix)}:", "            return False"]
            elif rest != "True":
                lines += [f"        for x in {f'v[{len(prefix)}:]' if prefix else 'v'}:",
                          f"            if not ({rest}):", "                return False"]
        return lines


def _strings(values: list[Any], keyword: str) -> frozenset[str]:
    if not all(isinstance(value, str) for value in values):
        raise ValueError(f"the compiled check knows string {keyword} values only, got {values!r}")
    return frozenset(values)
