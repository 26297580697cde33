"""The JSON Schemas ctxasm validates documents against (package data under ctxasm/schemas; the manifest's and the
budget's are links to contract/schemas), and the one error of a validation worth reporting."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib.resources import files

from jsonschema import Draft202012Validator, ValidationError
from jsonschema.exceptions import relevance

MANIFEST = "manifest.schema.json"
BUDGET = "budget.schema.json"
SCENARIO = "scenario.schema.json"


@lru_cache(maxsize=None)
def validator(name: str) -> Draft202012Validator:
    """The checked validator of schema file `name` (one of the names above)."""
    schema = json.loads((files("ctxasm") / "schemas" / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def most_specific(errors: list[ValidationError]) -> ValidationError:
    """The error that points closest to the fault: the deepest path. A field that fails inside a shared schema
    also makes its siblings 'unevaluated', which says nothing useful, so those rank last."""
    return min(errors, key=lambda e: (e.validator == "unevaluatedProperties", -len(e.absolute_path),
                                      relevance(e)))
