"""What a live window reads per memory type, on both engines, from the types' fields in contract/memory_types.toml.

CTX_SOURCES: enumerated_sources (the types with `enumerated`: "scope" ones always, "facts" ones while
facts_enumerable says the durable facts in scope are few, which counts the same types) and claim_sources (the
types that `cites`: the history rows whose source_refs are followed; on Oracle also the cited rows of every
renderable type, each with the claim it makes). CTX_SELECTION.candidate_items: each candidate's `status`
(`candidate_status`). CTX_RETRIEVAL.lexical_hits and nearest (Oracle): the text and vector queries of each
searchable type, per slice. The volatile tail of conversation turns is no type's field: it stays hand-written.

Each branch reads one table by an alias of its own: the type name's first letter (the hand-written text's).
"""

from __future__ import annotations

import re

from ctxasm_dev.contract.catalogue import TYPES_FILE, Catalogue, CatalogueError, MemoryType
from ctxasm_dev.contract.unions import renderable
from ctxasm_dev.contract.unions_oracle import EMBEDDING_SLOT, vector_format

#: the candidate status no arm names (the CASE's ELSE)
DEFAULT_STATUS = "evidence"

#: the row slots a claim is read from, where a type has columns for them (else content_json.claim)
CLAIM_SLOTS = ("subject", "predicate")

_ORACLE_SLICE = re.compile(r"^\s*(co_[a-z_]+)\s+constant\s+varchar2\(32\)\s*:=\s*'([a-z_]+)';", re.MULTILINE)


def _alias(memory_type: MemoryType) -> str:
    return memory_type.name[0]


def _enumerated(catalogue: Catalogue, how: str) -> list[MemoryType]:
    return [t for t in renderable(catalogue) if t.enumerated == how]


def _facts(catalogue: Catalogue) -> list[MemoryType]:
    facts = _enumerated(catalogue, "facts")
    if not facts:
        raise CatalogueError(f"{TYPES_FILE}: no type is enumerated = \"facts\"; facts_enumerable counts them")
    return facts


def _citing(catalogue: Catalogue) -> list[MemoryType]:
    citing = [t for t in renderable(catalogue) if t.cites]
    if not citing:
        raise CatalogueError(f"{TYPES_FILE}: no type cites; claim_sources follows the citations of history rows")
    return citing


def _status_arms(catalogue: Catalogue, when: str, then: str) -> list[str]:
    return [f"{when} '{t.name}' {then} '{t.candidate_status}'" for t in renderable(catalogue)
            if t.candidate_status != DEFAULT_STATUS]


def _wrapped(items: list[str], first: str, indent: str, width: int = 116) -> list[str]:
    lines, line = [], first
    for item in items:
        if line.strip() != first.strip() and len(line) + 1 + len(item) > width:
            lines.append(line)
            line = indent + item
        else:
            line += " " + item
    return lines + [line]


def _quoted(types: list[MemoryType]) -> str:
    return ", ".join(f"'{t.name}'" for t in types)


# -- PostgreSQL -------------------------------------------------------------------------------------------------

def _pg_triples(name: str, types: list[MemoryType]) -> str:
    """A constant of (type, table, slice) triples, flat, as enumerated_sources reads them."""
    items = [f"'{part}'" for t in types for part in (t.name, t.table, t.slice)]
    first = f"    {name} constant varchar[] := ARRAY["
    lines, line = [], first
    for i, item in enumerate(items):
        text = item + ("]::varchar[];" if i == len(items) - 1 else ",")
        if line != first and len(line) + 1 + len(text) > 116:
            lines.append(line)
            line = " " * 8 + text
        else:
            line += ("" if line == first else " ") + text
    return "\n".join(lines + [line])


def pg_enumerated(catalogue: Catalogue, how: str) -> str:
    """enumerated_sources' types enumerated `how` ("scope": always; "facts": while the facts are few), as (type,
    table, slice) triples: each is read from the tenant's own partition of its table."""
    return _pg_triples("co_scope" if how == "scope" else "co_facts", _enumerated(catalogue, how))


def pg_facts_counted(catalogue: Catalogue) -> str:
    """facts_enumerable's tables: every type enumerated as facts, as (type, table, slice) triples."""
    return _pg_triples("co_facts", _facts(catalogue))


def pg_history_types(catalogue: Catalogue) -> str:
    return f"         WHERE s.item -> 'ref' ->> 0 IN ({_quoted(_citing(catalogue))})"


def pg_candidate_status(catalogue: Catalogue) -> str:
    """candidate_items' `status`: the type's candidate_status."""
    lines = _wrapped(_status_arms(catalogue, "WHEN", "THEN"), "               'status', CASE o.memory_type",
                     " " * 29)
    return "\n".join([*lines, f"{' ' * 29}ELSE '{DEFAULT_STATUS}' END,"])


# -- Oracle -----------------------------------------------------------------------------------------------------

def oracle_slice_constants(rules_spec: str) -> dict[str, str]:
    """slice -> the CTX_RULES constant that names it (co_facts for 'durable_facts', ...)."""
    return {value: name for name, value in _ORACLE_SLICE.findall(rules_spec)}


def _slice_constant(constants: dict[str, str], memory_type: MemoryType) -> str:
    try:
        return constants[memory_type.slice]
    except KeyError:
        raise CatalogueError(f"{TYPES_FILE}: type {memory_type.name}: CTX_RULES (db/oracle/internal/ctx_rules.spec.sql) "
                             f"declares no constant for the slice {memory_type.slice!r}") from None


def _ora_scope(alias: str, indent: str) -> list[str]:
    """The window's scope on one table, each condition a line: the tenant first, then the wider-scope NULLs."""
    a = alias
    return [f"{a}.tenant_id = in_tenant_id",
            f"{indent}and ({a}.user_id is null or {a}.user_id = in_user_id)",
            f"{indent}and ({a}.agent_id is null or {a}.agent_id = in_agent_id)",
            f"{indent}and ({a}.thread_id is null or {a}.thread_id = in_thread_id)"]


def oracle_enumerated(catalogue: Catalogue, rules_spec: str, how: str) -> str:
    """enumerated_sources' branches of the types enumerated `how` (Oracle); the union's first branch names and
    types the columns."""
    constants = oracle_slice_constants(rules_spec)
    at = " " * 16
    lines = []
    for i, t in enumerate(_enumerated(catalogue, how)):
        a, constant = _alias(t), _slice_constant(constants, t)
        if how == "scope" and i == 0:
            head = [f"{at}select cast('{t.name}' as varchar2(32)) as memory_type, {a}.id, {a}.version,",
                    f"{at}       cast('scope' as varchar2(16)) as origin, cast({constant} as varchar2(32)) as slice"]
        else:
            head = [f"{at}select '{t.name}', {a}.id, {a}.version, 'scope', {constant}"]
        branch = [*head, f"{at}  from {t.table} {a}"]
        tenant, *scope = _ora_scope(a, at + "   ")
        if how == "facts":
            branch += [f"{at} where in_with_facts = 1", f"{at}   and {tenant}", *scope]
        else:
            branch += [f"{at} where {tenant}", *scope]
        lines += [f"{at}union all", *branch] if how == "facts" else [*branch, f"{at}union all"]
    return "\n".join(lines)


def oracle_facts_counted(catalogue: Catalogue) -> str:
    """facts_enumerable's row source (Oracle): one row per version in scope of every type enumerated as facts."""
    at = " " * 26
    branches = []
    for i, t in enumerate(_facts(catalogue)):
        a = _alias(t)
        tenant, *scope = _ora_scope(a, at + "   ")
        branches.append("\n".join([f"{at}select 1" + (" as one" if i == 0 else ""),
                                   f"{at}  from {t.table} {a}",
                                   f"{at} where {tenant}", *scope]))
    return f"\n{at}union all\n".join(branches)


def oracle_history_types(catalogue: Catalogue) -> str:
    return f"          where h.memory_type in ({_quoted(_citing(catalogue))})"


def oracle_citing_rows(catalogue: Catalogue) -> str:
    """claim_sources' citations (Oracle): the source_refs of each history row, by primary key."""
    branches = []
    for i, t in enumerate(_citing(catalogue)):
        a = _alias(t)
        branches.append("\n".join([
            f"         select json_serialize({a}.source_refs returning clob)" + (" as source_refs" if i == 0 else ""),
            "           from history h",
            f"           join {t.table} {a}",
            f"             on {a}.tenant_id = in_tenant_id",
            f"            and {a}.id = h.id",
            f"            and {a}.version = h.version",
            f"          where h.memory_type = '{t.name}'"]))
    return "\n         union all\n".join(branches)


def oracle_cited_rows(catalogue: Catalogue) -> str:
    """claim_sources' cited rows (Oracle): a cited row of any renderable type that exists, with the claim it makes:
    its subject and predicate columns where the type has them, else content_json.claim's."""
    branches = []
    for i, t in enumerate(renderable(catalogue)):
        filled = {c.row: c.name for c in t.columns if c.row}
        claim = []
        for slot in CLAIM_SLOTS:
            expression = f"t.{filled[slot]}" if slot in filled else f"json_value(t.content_json, '$.claim.{slot}')"
            claim.append(expression if i > 0 or expression == f"t.{slot}" else f"{expression} as {slot}")
        head = "         select c.memory_type, c.id, c.version, "
        one_line = head + ", ".join(claim)
        select = [one_line] if len(one_line) <= 116 else [head + claim[0] + ",", " " * 16 + claim[1]]
        branches.append("\n".join([
            *select,
            "           from cited c",
            f"           join {t.table} t on t.tenant_id = in_tenant_id and t.id = c.id and t.version = c.version",
            f"          where c.memory_type = '{t.name}'"]))
    return "\n         union all\n".join(branches)


def oracle_candidate_status(catalogue: Catalogue) -> str:
    """the document's candidates' `status` (Oracle)."""
    at = " " * 25
    return "\n".join([*(f"{at}{arm}" for arm in _status_arms(catalogue, "when", "then")),
                      f"{at}else '{DEFAULT_STATUS}'"])


# -- Oracle retrieval -------------------------------------------------------------------------------------------

#: the types recalled across the user's threads rather than in the window's scope, with the one event type that
#: counts (conversation: the user's messages of any thread; PostgreSQL's ctx_retrieval reads it the same way)
USER_RECALL = {"conversation": "message"}


def _searchable(catalogue: Catalogue) -> list[MemoryType]:
    return [t for t in renderable(catalogue) if t.searchable]


def _ora_recall_scope(memory_type: MemoryType, at: str) -> tuple[list[str], list[str]]:
    """The scope conditions of a retrieval read: (after the tenant, after the validity)."""
    if memory_type.name in USER_RECALL:
        return ([f"{at}and r.user_id = in_user_id", f"{at}and r.event_type = '{USER_RECALL[memory_type.name]}'"],
                [f"{at}and (r.agent_id is null or r.agent_id = in_agent_id)"])
    return [], [f"{at}and (r.agent_id is null or r.agent_id = in_agent_id)",
                f"{at}and (r.user_id is null or r.user_id = in_user_id)",
                f"{at}and (r.thread_id is null or r.thread_id = in_thread_id)"]


def oracle_lexical(catalogue: Catalogue, slice_name: str) -> str:
    """CTX_RETRIEVAL.lexical_hits' branches for one slice: the searchable types of the slice, each its own text
    query (a CONTAINS label per type, unique in the package) limited to the depth."""
    searchable = _searchable(catalogue)
    at, inner = " " * 29, " " * 42
    branches = []
    for t in (t for t in searchable if t.slice == slice_name):
        a, label = _alias(t), searchable.index(t) + 1
        head = (f"select cast('{t.name}' as varchar2(32)) as memory_type" if not branches else f"select '{t.name}'")
        before, after = _ora_recall_scope(t, inner)
        branches.append("\n".join([
            f"{at}{head}, {a}.id, {a}.version, {a}.text_score",
            f"{at}  from (",
            f"{at}          select r.id, r.version, score({label}) as text_score",
            f"{at}            from {t.table} r",
            f"{at}           where contains(r.content, in_probe, {label}) > 0",
            f"{inner}and r.tenant_id = in_tenant_id",
            *before,
            f"{inner}and r.status <> 'erased'",
            f"{inner}and r.deleted_at is null",
            f"{inner}and r.valid_from <= in_evaluation_time",
            f"{inner}and (r.valid_until is null or r.valid_until > in_evaluation_time)",
            *after,
            f"{at}           order by score({label}) desc, r.id, r.version",
            f"{at}           fetch first in_depth rows only",
            f"{at}       ) {a}"]))
    if not branches:
        raise CatalogueError(f"{TYPES_FILE}: no searchable type fills the slice {slice_name!r}; "
                             "CTX_RETRIEVAL.lexical_hits searches it")
    return f"\n{at}union all\n".join(branches)


def oracle_nearest(catalogue: Catalogue, slice_name: str) -> str:
    """CTX_RETRIEVAL.nearest's branches for one slice: the searchable embedded types of the slice, each its own
    approximate nearest-neighbour query on its vector index, limited to the depth."""
    at, inner = " " * 29, " " * 42
    branches = []
    for t in (t for t in _searchable(catalogue) if t.slice == slice_name and t.embedded):
        a = _alias(t)
        column = next(c for c in t.columns if c.row == EMBEDDING_SLOT)
        distance = (f"vector_distance(r.{column.name}, to_vector(in_vector, {vector_format(column, t.name)}), "
                    "cosine)")
        head = (f"select cast('{t.name}' as varchar2(32)) as memory_type" if not branches else f"select '{t.name}'")
        before, after = _ora_recall_scope(t, inner)
        branches.append("\n".join([
            f"{at}{head}, {a}.id, {a}.version, {a}.distance",
            f"{at}  from (",
            f"{at}          select r.id, r.version,",
            f"{at}                 {distance}",
            f"{at}                    as distance",
            f"{at}            from {t.table} r",
            f"{at}           where r.tenant_id = in_tenant_id",
            *before,
            f"{inner}and r.{column.name} is not null",
            f"{inner}and r.status <> 'erased'",
            f"{inner}and r.deleted_at is null",
            f"{inner}and r.valid_from <= in_evaluation_time",
            f"{inner}and (r.valid_until is null or r.valid_until > in_evaluation_time)",
            *after,
            f"{at}           order by {distance}",
            f"{at}           fetch approx first in_depth rows only",
            f"{at}       ) {a}"]))
    if not branches:
        raise CatalogueError(f"{TYPES_FILE}: no searchable embedded type fills the slice {slice_name!r}; "
                             "CTX_RETRIEVAL.nearest searches it")
    return f"\n{at}union all\n".join(branches)
