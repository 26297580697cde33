"""A recorded window and the records of the agent loop as the inspector reads them (ctxasm.services.inspection,
ctxasm.services.records), and the budget rules it explains exclusions by (ctxasm.services.budgets). The
inspector reaches the services only through ctxasm.api (tests/unit/test_layers.py)."""

from __future__ import annotations

from ctxasm.services.budgets import SCOPE_FIELDS, Scope, is_budget, scope_level, scope_of, standing
from ctxasm.services.inspection import (FIXED, INSTRUCTIONS, REQUEST_LAYOUT, RESERVE_ORDER, TOOL_RESULTS, Inspection,
                                        ManifestNotFound, RefKey, annotation_notes, citation_id, exclusions_by_rule,
                                        load_inspection, ordered, overflow_order, overflow_receivers, ref_key,
                                        ref_text, referenced_refs, slices_in_request_order)
from ctxasm.services.records import Record, RecordErased, inspection_of_request, load_by_id, load_record, rows_then

__all__ = ["FIXED", "INSTRUCTIONS", "REQUEST_LAYOUT", "RESERVE_ORDER", "SCOPE_FIELDS", "TOOL_RESULTS", "Inspection",
           "ManifestNotFound", "Record", "RecordErased", "RefKey", "Scope", "annotation_notes", "citation_id",
           "exclusions_by_rule", "inspection_of_request", "is_budget", "load_by_id", "load_inspection",
           "load_record", "ordered", "overflow_order", "overflow_receivers", "ref_key", "ref_text", "referenced_refs",
           "rows_then", "scope_level", "scope_of", "slices_in_request_order", "standing"]
