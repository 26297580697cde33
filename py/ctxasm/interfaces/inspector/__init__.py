"""See what the model saw: a recorded manifest as terminal text or as one self-contained HTML page (the literal
request, every token of the budget, why each row was left out), the diff between two manifests of one tenant, and
the agent loop's records by id. `ctxasm inspect` is the command; docs/inspector.md describes the page."""

from __future__ import annotations

import tempfile
import webbrowser
from pathlib import Path

from ctxasm.errors import ConfigError
from ctxasm.interfaces.inspector.diff import ManifestDiff, diff_manifests
from ctxasm.interfaces.inspector.exclusions import why_not
from ctxasm.interfaces.inspector.page import render_page
from ctxasm.interfaces.inspector.record_view import describe_record, record_page
from ctxasm.interfaces.inspector.text import describe_diff, describe_manifest, describe_request
from ctxasm.api.inspection import (Inspection, ManifestNotFound, Record, RecordErased, inspection_of_request,
                                   load_by_id, load_inspection, load_record, ref_text, rows_then)

__all__ = ["Inspection", "ManifestDiff", "ManifestNotFound", "Record", "RecordErased", "default_page_path",
           "describe_diff", "describe_manifest", "describe_record", "describe_request", "diff_manifests", "diff_of",
           "inspection_of_request", "load_by_id", "load_inspection", "load_record", "open_page", "record_page", "ref_text",
           "render_page", "rows_then", "why_not", "write_page", "write_text"]


def diff_of(old: Inspection, new: Inspection) -> ManifestDiff:
    return diff_manifests(old.manifest, new.manifest, old_id=old.manifest_id, new_id=new.manifest_id)


def write_page(path: str | Path, inspection: Inspection, diff: ManifestDiff | None = None) -> Path:
    """Write the page; ConfigError (exit code 2) when the file cannot be written."""
    return write_text(path, render_page(inspection, diff))


def write_text(path: str | Path, page: str) -> Path:
    """Write a page; ConfigError (exit code 2) when the file cannot be written."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"config_error: cannot write {target}: {exc.strerror or exc}") from None
    return target


def default_page_path(manifest_id: str) -> Path:
    """Where `--open` without `--html` writes the page: the system temporary directory."""
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in manifest_id)[:120]
    return Path(tempfile.gettempdir()) / f"ctxasm-inspect-{safe}.html"


def open_page(path: Path) -> bool:
    """Open the page with the default browser; False when none is available."""
    try:
        return bool(webbrowser.open(path.resolve().as_uri()))
    except webbrowser.Error:
        return False
