"""The JSON Schemas ctxasm validates documents against (package data under ctxasm/schemas; the manifest's, the
budget's and the selection's are links to contract/schemas), and the one error of a validation worth reporting.

`jsonschema` reports where and why a document fails, but walks a manifest of a few hundred entries in about as
long as the whole assembly takes. `checker` compiles a schema once into Python source that only says valid or
not (ctxasm.core.schema_compiler: about ninety times faster on a large selection document); a caller runs
jsonschema for the message only when that says no.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from importlib.resources import files
from typing import Any

from jsonschema import Draft202012Validator, ValidationError
from jsonschema.exceptions import relevance

from ctxasm.core.schema_compiler import Check, compile_check
from ctxasm.errors import brief_message

MANIFEST = "manifest.schema.json"
BUDGET = "budget.schema.json"
SCENARIO = "scenario.schema.json"
SELECTION = "selection.schema.json"


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
    return compile_check(schema(name))


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
