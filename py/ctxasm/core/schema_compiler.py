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
#: An array's first items (prefixItems) are checked in place, and so is `items` when it is true or false (how
#: many may follow them); only `items` with a schema loops.
_ARRAY_ITEMS = frozenset({"prefixItems", "items"})
_KNOWN = _INLINE | _OBJECT_LOOPS | _ARRAY_ITEMS

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
            if _loops_over_items(node):
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
        if loops and _loops(node):
            return f"{self.function(node)}({v})"
        kinds = node.get("type")
        kinds = [kinds] if isinstance(kinds, str) else kinds
        clauses = []
        if kinds is not None:
            # null first: `is None` is the cheapest test, and a null is the value of many an optional field
            clauses.append(" or ".join(_TYPES[kind].format(v=v) for kind in sorted(kinds, key=lambda k: k != "null")))
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
            clauses.append(present if kinds == ["object"] else f"not isinstance({v}, dict) or ({present})")
        if node.get("uniqueItems"):
            clauses.append(f"not isinstance({v}, list) or _unique({v})")
        if "prefixItems" in node or isinstance(node.get("items"), bool):
            clauses.append(self.first_items(node, v, kinds == ["array"]))
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
        if isinstance(definition, dict) and not _loops(definition) \
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
        lines = [_guard(node, "object", "dict")]
        properties = node.get("properties", {})
        required = frozenset(node.get("required", ()))
        for key, sub in properties.items():
            test = self.expression(sub, "x")
            if test == "True":
                continue
            if key in required:  # the node's own expression, checked before the loops, found it
                lines += [f"        x = v[{key!r}]", f"        if not ({test}):", "            return False"]
            else:
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

    def first_items(self, node: Mapping[str, Any], v: str, only_arrays: bool) -> str:
        """An array's prefixItems, and `items: false` (nothing after them), as an expression: the check of a
        reference, `[type, id, version]`, is made in place of a call per reference. A position below minItems
        needs no length test: the node's expression tests minItems first."""
        prefix = node.get("prefixItems", ())
        least = node.get("minItems", 0)
        tests = []
        for at, sub in enumerate(prefix):
            test = self.expression(sub, f"{v}[{at}]")
            if test != "True":
                tests.append(f"({test})" if at < least else f"(len({v}) <= {at} or ({test}))")
        if node.get("items") is False:
            tests.append(f"len({v}) <= {len(prefix)}")
        joined = " and ".join(tests) or "True"
        return joined if only_arrays else f"not isinstance({v}, list) or ({joined})"

    def array_loops(self, node: Mapping[str, Any]) -> list[str]:
        """The loop over the items after the prefixItems, checked against `items`."""
        rest = self.expression(node["items"], "x")
        if rest == "True":
            return []
        skipped = len(node.get("prefixItems", ()))
        return [_guard(node, "array", "list"), f"        for x in {f'v[{skipped}:]' if skipped else 'v'}:",
                f"            if not ({rest}):", "                return False"]


def _loops(node: Mapping[str, Any]) -> bool:
    """Whether checking `node` takes a loop (over an object's members or an array's items): it is a function."""
    return bool(_OBJECT_LOOPS & node.keys()) or _loops_over_items(node)


def _loops_over_items(node: Mapping[str, Any]) -> bool:
    return "items" in node and not isinstance(node["items"], bool)


def _guard(node: Mapping[str, Any], kind: str, cls: str) -> str:
    """The line that opens a node's loops over an object's members or an array's items: they apply to that
    kind of value only, which the node's own expression, checked before them, already made sure of when the
    node's type is that kind alone (the test left out: a check runs once per entry of a large document)."""
    return "    if True:" if node.get("type") in (kind, [kind]) else f"    if isinstance(v, {cls}):"


def _strings(values: list[Any], keyword: str) -> frozenset[str]:
    if not all(isinstance(value, str) for value in values):
        raise ValueError(f"the compiled check knows string {keyword} values only, got {values!r}")
    return frozenset(values)
