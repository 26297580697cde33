"""Budget rows at random: InvalidBudget naming the field, or a budget that gives a window that fits."""

from __future__ import annotations

import copy
import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxasm.core import budget as budgets
from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.errors import CtxasmError, InvalidBudget
from ctxasm.local import pgconn
from ctxasm.services.assemble import assemble, parse_time

from .conftest import SCENARIOS, SCOPE

AT = parse_time("2026-09-28T12:00:00")
DEMO = json.loads((SCENARIOS / "acme_demo.json").read_text())
BASE = next(m for m in DEMO["tenants"][0]["memories"]
            if m["type"] == "guideline" and m.get("guideline_key") == "context_budget" and not m.get("thread_id"))
NUMBERS = st.one_of(st.integers(-10, 10), st.integers(-10**6, 10**7), st.floats(-2, 2, allow_nan=False),
                    st.sampled_from([0, 1, 0.5, 1e30, "100", None, True, [], {}]))
_ids = itertools.count(1)
tried = {"cases": 0, "invalid": 0, "other_errors": 0, "windows": 0}


@st.composite
def budget_json(draw):
    data = copy.deepcopy(BASE["content_json"])
    for _ in range(draw(st.integers(1, 4))):
        key = draw(st.sampled_from(sorted(data) + ["unknown_field", "tier_limits"]))
        choice = draw(st.sampled_from(["number", "delete", "nested"]))
        if choice == "delete":
            data.pop(key, None)
        elif choice == "number" or not isinstance(data.get(key), dict):
            data[key] = draw(NUMBERS)
        else:
            # a copy: NUMBERS hands out the same {} object every time, and mutating it would change later draws
            inner = data[key] = dict(data[key])
            sub = draw(st.sampled_from(sorted(inner) + ["bogus"]))
            inner[sub] = draw(st.one_of(NUMBERS, st.dictionaries(st.sampled_from(
                ["durable_facts", "evidence", "recalled_history", "volatile_tail", "bogus", "full", "summary"]),
                NUMBERS, max_size=4)))
    return data


@given(data=budget_json())
def test_parse_names_the_field_or_accepts(data):
    try:
        parsed = budgets.parse_budget(data)
    except InvalidBudget as exc:
        assert exc.field and exc.field.split(".")[0].split("[")[0] in set(data) | {"$"} | set(BASE["content_json"]), (
            exc.field, data)
        assert str(exc).startswith(f"invalid_budget: {exc.field}: ")
        return
    assert parsed.usable_context >= 0


@pytest.mark.slow  # many examples, each written and assembled
@given(data=budget_json())
def test_a_budget_row_gives_a_named_error_or_a_window_that_fits(two_tenants, data):
    tried["cases"] += 1
    with pgconn.connect(two_tenants, pgconn.app_login()) as connection:
        store = PostgresStore(connection)
        store.set_tenant("acme")
        # A narrower budget for Jane's thread only, in this transaction: the narrowest budget in effect wins. The
        # database refuses one whose token counts are out of its range as it is written (ctxasm.check_record).
        try:
            store.put_memory("guideline", {"id": f"budget_prop_{next(_ids)}", "guideline_key": "context_budget",
                                           "content": "random budget", "content_json": data, **SCOPE,
                                           "valid_from": "2026-09-01T00:00:00Z"})
        except InvalidBudget as exc:
            tried["invalid"] += 1
            assert str(exc).startswith("invalid_budget: guideline.content_json."), str(exc)
            assert str(exc).split(".content_json.")[1].split(":")[0] in data
            connection.rollback()
            return
        spec = WindowSpec(tenant_id="acme", intent="fact_check", question="Is Helios-RAG still the one to beat?",
                          **SCOPE)
        try:
            window = assemble(store, spec, AT)  # commits the row with the manifest: supersede it away below
        except InvalidBudget as exc:
            tried["invalid"] += 1
            assert "invalid_budget: " in str(exc)
            return
        except CtxasmError as exc:
            tried["other_errors"] += 1  # unknown_intent, fixed_slice_overflow, required_does_not_fit, ...
            assert str(exc).split(":")[0].strip(), str(exc)
            return
        finally:
            connection.rollback()
        # It was committed with the manifest: retire it so the next example starts from the demo's budgets.
        store.set_tenant("acme")
        connection.execute("SELECT ctx_memory.delete_memory(in_memory_type => 'guideline', in_id => %s)",
                           (window.manifest["budget_ref"][1],))
        connection.commit()
    tried["windows"] += 1
    assert window.manifest["request_tokens"] <= window.manifest["request_limit"]
    budgets.parse_budget(data)  # the database accepted it and so did Python
