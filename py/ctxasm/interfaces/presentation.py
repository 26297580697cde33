"""Readable text for a window: the request message by message, then the manifest in short."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctxasm.api.admin import AssembledWindow


def _ref(ref) -> str:
    return f"{ref[0]}:{ref[1]} v{ref[2]}"


def describe_window(window: "AssembledWindow") -> str:
    manifest, request = window.manifest, window.request
    out = [f"== request for {request['model']} ({manifest['request_tokens']} of {manifest['request_limit']} "
           f"tokens, hash {manifest['request_hash'][:16]}) =="]
    for message in request["messages"]:
        out.append(f"--- {message['role']} ---")
        out.append(message["content"])
    for tool in request.get("tools", []):
        out.append(f"--- tool {tool['function']['name']} ---")
        out.append(tool["function"]["description"])
    out.append("")
    out.append(f"== manifest {window.manifest_id} ==")
    out.append(f"mode {manifest['mode']}  snapshot {manifest['scn']}  evaluation time {manifest['evaluation_time']}")
    out.append(f"budget {_ref(manifest['budget_ref'])}  intent {manifest['intent']}  scorer {manifest['scorer']}")
    out.append(f"required: {', '.join(_ref(r) for r in manifest['required_refs']) or 'none'}")
    out.append(f"{'pos':>3}  {'id':<12} {'slice':<17} {'tier':<8} {'status':<11} {'tokens':>6}  source")
    for memory in manifest["memories"]:
        note = ""
        if memory.get("annotation_refs"):
            note = "  (annotated: current " + ", ".join(
                _ref(a["current"]) for a in memory["annotation_refs"] if a.get("current")) + ")"
        out.append(f"{memory['position']:>3}  {memory['id']:<12} {memory['slice']:<17} {memory['tier']:<8} "
                   f"{memory['status']:<11} {memory['tokens']:>6}  {_ref(memory['ref'])}{note}")
    out.append("excluded:")
    for item in manifest["excluded"]:
        detail = item.get("detail") or (f"kept {_ref(item['kept'])}" if item.get("kept") else "")
        out.append(f"  {item['rule']:<12} {_ref(item['ref'])}  {detail}")
    out.append("allocation:")
    for name, part in manifest["allocation"]["slices"].items():
        out.append(f"  {name:<17} share {part['share']:>5}  allowance {part['allowance']:>5}  used {part['used']:>5}"
                   f"  passed on {part['passed_on']:>5}")
    fixed = manifest["allocation"]["fixed"]
    out.append("  fixed: " + ", ".join(f"{k} {v}" for k, v in fixed.items()))
    return "\n".join(out)
