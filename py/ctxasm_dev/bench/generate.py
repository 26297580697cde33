"""Benchmark tenants: N memory rows of every type, with corpus-like text, loaded in batches.

The fixed slices (the demo's budget, guidelines, persona and tools) go through the write API, after the
tenant is registered with ctx_admin.register_tenant (which may also make the tenant's partitions). The bulk
rows bypass the write API for speed: ctx_memory.put_memory is one PL/pgSQL call per row (about 2,000 rows/s
here), which would take ten minutes for 1e6 rows before any index work. Instead each batch is COPYed into a
temporary staging table and moved with one multi-row INSERT ... SELECT into the memory table, as the owner
role with the tenant set: row-level security (WITH CHECK), the table's constraints, the generated tsvector
and the indexes all apply, and superseded / deleted versions are made by UPDATEs, so the history triggers
copy the retired versions exactly as the write API's own UPDATEs do. What assembly reads is the same rows
the write API would have written: the same columns, constraints, history and stored token counts.

Text comes from a word-bigram model of the research corpus (text_model.py): realistic word frequencies and
lengths. Every memory table with an `embedding` column (found in the catalog) gets synthetic embeddings in
the same space as the benchmark questions (synthetic_embedding.py). From REBUILD_INDEX_FROM rows, the vector
indexes found in the catalog are dropped before the load and built again after it (catalog.py).
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from ctxasm.engines.postgres import PostgresStore
from ctxasm.progress import progress
from ctxasm_dev.bench import catalog, synthetic_embedding, text_model
from ctxasm_dev.bench.text_model import DEMO

AGENT = "research-assistant"
OTHER_AGENTS = ("support-bot", "ops-agent")
#: The evaluation time of every benchmark assembly; rows are dated in the 400 days before it.
EVALUATION_TIME = datetime(2026, 9, 28, 12, 0, tzinfo=timezone.utc)
BATCH = 20_000
#: From this size the vector indexes are dropped before the load and built again after it: one HNSW build
#: is far cheaper than 250,000 single inserts into the graph.
REBUILD_INDEX_FROM = 100_000
#: Marks a finished tenant (in ctx_tenant.display_name); a tenant made by another generator is made again.
GENERATOR = "generator 2"

#: Share of the bulk rows per memory type (kb_document/kb_chunk/compression are derived from the chunk share).
MIX = {"entity": 0.20, "workflow": 0.01, "kb_document": 0.04, "kb_chunk": 0.25, "conversation": 0.40,
       "summary": 0.05, "compression": 0.05}
#: Rows per user: the tenant grows by adding users (and their threads), as a real tenant does.
ROWS_PER_USER = 1_000
TURNS_PER_THREAD = 20
#: Tenant-wide facts (no user): a fixed number, so a user's candidates stop growing once the tenant is large.
SHARED_FACTS = 500
#: The scope every benchmark assembly uses: the first user and the first thread (its first 20 turns).
SCOPE = {"user_id": "u00000", "agent_id": AGENT, "thread_id": "t000000"}


@dataclass
class TenantPlan:
    tenant_id: str
    rows: int
    users: int
    seed: int


@dataclass
class BuildReport:
    tenant_id: str
    rows: dict[str, int] = field(default_factory=dict)
    history_rows: int = 0
    seconds: float = 0.0
    index_seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.rows.values())


def plan(size: int, seed: int = 8) -> TenantPlan:
    return TenantPlan(tenant_id=f"bench_{size_label(size)}", rows=size, users=max(5, size // ROWS_PER_USER),
                      seed=seed)


def size_label(size: int) -> str:
    exponent = len(str(size)) - 1
    return f"1e{exponent}" if size == 10 ** exponent else str(size)


def questions(count: int, seed: int = 8) -> list[str]:
    """`count` different benchmark questions, from the same text model as the rows."""
    return text_model.questions(count, seed)


def fixed_rows() -> list[dict[str, Any]]:
    """The demo's budget, guidelines, persona and tools of the research assistant (agent-wide rows)."""
    document = json.loads(DEMO.read_text())
    keep = []
    for memory in document["tenants"][0]["memories"]:
        if memory["type"] in ("guideline", "persona", "toolbox") and memory.get("agent_id") == AGENT \
                and not memory.get("thread_id") and not memory.get("user_id"):
            keep.append({k: v for k, v in memory.items() if k not in ("versions", "deleted_at")})
    return keep


def _counts(texts: list[str]) -> list[int]:
    from ctxasm.core.tokens import encoding

    return [len(tokens) for tokens in encoding().encode_ordinary_batch(texts, num_threads=2)]


#: staging columns, in COPY order; every memory table takes the columns it has
_STAGE = ("id", "version", "user_id", "agent_id", "thread_id", "valid_from", "valid_until", "content",
          "content_tokens", "content_json", "key1", "key2", "num1", "num2", "ts1", "retire", "embedding")
_STAGE_DDL = ("CREATE TEMPORARY TABLE IF NOT EXISTS bench_stage (id text, version int, user_id text, agent_id text, "
              "thread_id text, valid_from timestamptz, valid_until timestamptz, content text, content_tokens int, "
              "content_json jsonb, key1 text, key2 text, num1 numeric, num2 numeric, ts1 timestamptz, retire text, "
              "embedding text)")
_RETIRE = _STAGE.index("retire")
#: memory type -> (table, type-specific columns, the staging expressions that fill them)
_TARGETS = {
    "entity": ("entity_memory", "subject, predicate, confidence", "s.key1, s.key2, s.num1"),
    "workflow": ("workflow_memory", "workflow_key", "s.key1"),
    "kb_document": ("knowledge_base_document", "title, collection, source_uri, published_at",
                    "s.key1, s.key2, 'bench://' || s.id, s.ts1"),
    "kb_chunk": ("knowledge_base_chunk", "document_id, document_version, chunk_index, title",
                 "s.key1, 1, s.num1::int, s.key2"),
    "conversation": ("conversation_memory", "turn_index, role, event_type", "s.num1::int, s.key1, 'message'"),
    "summary": ("summarization_memory", "summary_key, period_start, period_end",
                "s.key1, s.ts1, s.valid_from"),
    "compression": ("context_compression",
                    "source_type, source_id, source_version, source_hash, generating_model, prompt_version",
                    "'kb_chunk', s.key1, 1, s.key2, 'extractive-lead-1', 'bench'"),
}


def _move(connection: Any, tenant_id: str, kind: str, rows: list[tuple[Any, ...]], embedded: bool) -> None:
    """One batch: COPY into staging, one INSERT ... SELECT, then the UPDATEs that retire versions."""
    table, columns, expressions = _TARGETS[kind]
    if embedded:
        columns, expressions = columns + ", embedding", expressions + ", s.embedding::vector"
    with connection.transaction():
        PostgresStore(connection).set_tenant(tenant_id)
        connection.execute(_STAGE_DDL)
        connection.execute("TRUNCATE bench_stage")
        with connection.cursor().copy(f"COPY bench_stage ({', '.join(_STAGE)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        connection.execute("ANALYZE bench_stage")  # a temporary table has no statistics otherwise
        # The memory tables' statistics lag far behind a bulk load (a tenant of one row, says the planner),
        # which makes a nested loop over the staging rows look cheap; hash joins are right for batches.
        connection.execute("SET LOCAL enable_nestloop = off")
        retiring = {row[_RETIRE] for row in rows}
        insert = (f"INSERT INTO ctxasm.{table} (tenant_id, id, version, user_id, agent_id, thread_id, valid_from, "
                  f"valid_until, content, content_tokens, content_json, {columns}) "
                  f"SELECT %s, s.id, s.version, s.user_id, s.agent_id, s.thread_id, s.valid_from, "
                  f"CASE WHEN s.retire = 'superseded' THEN NULL ELSE s.valid_until END, "
                  f"s.content, s.content_tokens, s.content_json, {expressions} FROM bench_stage s ")
        # Versions to retire are written active first, then retired by UPDATE as ctx_memory.supersede does,
        # so keep_row_version copies them to history; then their successors (one active version per id).
        if "superseded" in retiring:
            connection.execute(insert + "WHERE s.retire = 'superseded'", (tenant_id,))
            connection.execute(
                f"UPDATE ctxasm.{table} t SET status = 'superseded', valid_until = s.valid_until "
                f"FROM bench_stage s WHERE s.retire = 'superseded' AND t.tenant_id = %s AND t.id = s.id "
                f"AND t.version = s.version", (tenant_id,))
        connection.execute(insert + "WHERE s.retire IS DISTINCT FROM 'superseded'", (tenant_id,))
        if "deleted" in retiring:
            connection.execute(
                f"UPDATE ctxasm.{table} t SET status = 'deleted', deleted_at = s.valid_from + interval '1 day' "
                f"FROM bench_stage s WHERE s.retire = 'deleted' AND t.tenant_id = %s AND t.id = s.id "
                f"AND t.version = s.version", (tenant_id,))


@dataclass
class _Sources:
    """What later row types take from earlier ones: each chunk's compression lead and source hash, and each
    document's title (a chunk carries its document's title)."""

    chunks: dict[str, tuple[str, str]] = field(default_factory=dict)
    titles: dict[int, str] = field(default_factory=dict)

    def title(self, seed: int, document: int) -> str:
        if document not in self.titles:
            self.titles[document] = text_model.corpus_model().text(random.Random(f"{seed}:title:{document}"),
                                                                    "title")
        return self.titles[document]


#: words of a chunk's compression (its summary tier): the lead of the chunk
COMPRESSION_WORDS = 30


def _rows(plan_: TenantPlan, kind: str, count: int, sources: _Sources) -> Iterator[tuple[Any, ...]]:
    """`count` staging rows of one type (later versions and retirements included in the count), without the
    embedding (added per batch)."""
    rng = random.Random(f"{plan_.seed}:{kind}")
    model = text_model.corpus_model()
    users = [f"u{n:05d}" for n in range(plan_.users)]

    def when(max_days: int = 400) -> datetime:
        return EVALUATION_TIME - timedelta(days=rng.uniform(1, max_days))

    def agent() -> str:
        return AGENT if rng.random() < 0.8 else rng.choice(OTHER_AGENTS)

    def lifecycle(start: datetime) -> tuple[datetime | None, str | None]:
        roll = rng.random()
        if roll < 0.03:
            return start + timedelta(days=rng.uniform(0.5, 30)), None  # expired (if before evaluation time)
        if roll < 0.05:
            return None, "deleted"
        return None, None

    made = 0
    n = 0
    while made < count:
        n += 1
        row_id = f"{kind}_{n:07d}"
        start = when()
        if kind == "entity":
            user = None if n <= SHARED_FACTS else rng.choice(users)
            subject, predicate = f"model:m{n % 5000:04d}", f"metric_{n:07d}"
            versions = 2 if rng.random() < 0.2 and made + 2 <= count else 1
            until, retire = lifecycle(start) if versions == 1 else (None, None)
            for version in range(1, versions + 1):
                at = start + timedelta(days=30 * (version - 1))
                is_old = version < versions
                yield (row_id, version, user, agent(), None, at,
                       at + timedelta(days=30) if is_old else until, model.fact(rng), None, None, subject, predicate,
                       round(rng.uniform(0.3, 1.0), 3), None, None, "superseded" if is_old else retire)
                made += 1
        elif kind == "workflow":
            until, retire = lifecycle(start)
            yield (row_id, 1, None if n <= SHARED_FACTS // 10 else rng.choice(users), agent(), None, start, until,
                   model.text(rng, "workflow"), None, None, f"workflow_{n}", None, None, None, None, retire)
            made += 1
        elif kind == "kb_document":
            until, retire = lifecycle(start)
            yield (row_id, 1, None if rng.random() < 0.6 else rng.choice(users), None, None, start, until,
                   model.text(rng, "kb_document"), None, None, sources.title(plan_.seed, n), "bench", None, None,
                   start, retire)
            made += 1
        elif kind == "kb_chunk":
            until, retire = lifecycle(start)
            text = model.text(rng, "kb_chunk")
            lead = " ".join(text.split()[:COMPRESSION_WORDS]).rstrip(".,;:") + "."
            sources.chunks[row_id] = (lead, hashlib.sha256(text.encode("utf-8")).hexdigest())
            document = 1 + n // 6
            yield (row_id, 1, None if rng.random() < 0.6 else rng.choice(users), None, None, start, until,
                   text, None, None, f"kb_document_{document:07d}", sources.title(plan_.seed, document), n % 6,
                   None, None, retire)
            made += 1
        elif kind == "conversation":
            block = (n - 1) // TURNS_PER_THREAD
            user = users[(block // 10) % len(users)]
            thread = f"t{block:06d}"
            turn = (n - 1) % TURNS_PER_THREAD
            at = EVALUATION_TIME - timedelta(days=400) + timedelta(minutes=n)
            yield (row_id, 1, user, AGENT, thread, at, None, model.text(rng, "conversation"), None, None,
                   "user" if turn % 2 == 0 else "assistant", None, turn, None, None, None)
            made += 1
        elif kind == "summary":
            until, retire = lifecycle(start)
            yield (row_id, 1, rng.choice(users), AGENT, None, start, until, model.text(rng, "summary"), None, None,
                   f"summary_{n}", None, None, None, start - timedelta(days=30), retire)
            made += 1
        elif kind == "compression":
            if not sources.chunks:
                return
            source = f"kb_chunk_{rng.randint(1, len(sources.chunks)):07d}"
            if source not in sources.chunks:
                continue
            lead, source_hash = sources.chunks[source]
            yield (f"cmp_{source}_{n}", 1, None, None, None, start, None, lead, None, None, source, source_hash,
                   None, None, None, None)
            made += 1


def build_tenant(connection: Any, plan_: TenantPlan, log: Callable[[str], None],
                 watcher_connect: Callable[[], Any]) -> BuildReport:
    """Register the tenant, write its fixed rows through the write API, then bulk-load the rest.
    `watcher_connect` opens a second connection, one that may read pg_stat_progress_create_index (it watches
    index builds)."""
    report = BuildReport(plan_.tenant_id)
    started = time.perf_counter()
    store = PostgresStore(connection)
    store.register_tenant(plan_.tenant_id, f"benchmark tenant, {plan_.rows} rows")
    store.commit()
    store.set_tenant(plan_.tenant_id)
    fixed = fixed_rows()
    for record in fixed:
        store.put_memory(record["type"], {k: v for k, v in record.items() if k != "type"})
    store.commit()
    report.rows["fixed"] = len(fixed)
    widths = catalog.embedding_tables(connection)
    connection.commit()
    log(f"{plan_.tenant_id}: synthetic embeddings for " + (", ".join(f"{t} ({w})" for t, w in widths.items())
                                                            or "no table (no embedding column found)"))
    sources = _Sources()
    bulk = plan_.rows - len(fixed)
    order = ["kb_chunk", "compression", "entity", "workflow", "kb_document", "conversation", "summary"]
    indexes: list[catalog.VectorIndex] = []
    if plan_.rows >= REBUILD_INDEX_FROM:
        indexes = catalog.vector_indexes(connection)
        catalog.drop(connection, indexes)
        log(f"{plan_.tenant_id}: dropped {len(indexes)} vector index(es) until the load is done: "
            + ", ".join(index.name for index in indexes))
    with progress(f"building {plan_.tenant_id}", total=bulk) as tick:
        for kind in order:
            count = int(bulk * MIX[kind]) if kind != "summary" else bulk - sum(report.rows.get(k, 0) for k in order
                                                                               if k != "summary")
            width = widths.get(_TARGETS[kind][0])
            batch: list[tuple[Any, ...]] = []
            for row in _rows(plan_, kind, count, sources):
                batch.append(row)
                if len(batch) >= BATCH:
                    _flush(connection, plan_.tenant_id, kind, batch, width, tick)
                    report.rows[kind] = report.rows.get(kind, 0) + len(batch)
                    batch = []
            if batch:
                _flush(connection, plan_.tenant_id, kind, batch, width, tick)
                report.rows[kind] = report.rows.get(kind, 0) + len(batch)
            log(f"{plan_.tenant_id}: {kind} {report.rows.get(kind, 0)} rows, "
                f"{time.perf_counter() - started:.0f} s")
    if indexes:
        report.index_seconds = catalog.rebuild(connection, watcher_connect, indexes, log)
        log(f"{plan_.tenant_id}: {len(indexes)} vector index(es) built in {report.index_seconds:.0f} s")
    with connection.transaction():
        store.set_tenant(plan_.tenant_id)
        report.history_rows = sum(connection.execute(
            f"SELECT count(*) FROM ctxasm.{table}_history WHERE tenant_id = %s", (plan_.tenant_id,)).fetchone()[0]
            for table, _, _ in _TARGETS.values())
    connection.execute("ANALYZE")
    connection.commit()
    report.seconds = time.perf_counter() - started
    return report


def _flush(connection: Any, tenant_id: str, kind: str, batch: list[tuple[Any, ...]], width: int | None,
           tick: Callable) -> None:
    counts = _counts([row[7] for row in batch])
    vectors: list[str | None] = [None] * len(batch)
    if width:
        # a chunk is embedded with its title, as the loader embeds real chunks
        texts = [f"{row[11]} {row[7]}" if kind == "kb_chunk" else row[7] for row in batch]
        vectors = synthetic_embedding.literals(synthetic_embedding.space(width).embed(texts))
    rows = [row[:8] + (tokens,) + row[9:] + (vector,) for row, tokens, vector in zip(batch, counts, vectors)]
    _move(connection, tenant_id, kind, rows, width is not None)
    tick(len(rows))


def text_profile(connection: Any, tenant_id: str, questions: list[str], sample: int = 20_000) -> dict[str, Any]:
    """What the generated text looks like in the database: median words of chunks, turns and facts (over a
    sample of rows), and how many of the tenant's chunks a question's words match lexically (any of them,
    as lexical retrieval asks), median over `questions`."""
    words_sql = ("SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY w) FROM ("
                 "SELECT array_length(regexp_split_to_array(btrim(content), '\\s+'), 1) AS w "
                 "FROM ctxasm.{table} WHERE tenant_id = %s {extra} LIMIT %s) AS sample")
    matches_sql = ("SELECT count(*) FROM ctxasm.knowledge_base_chunk AS c WHERE c.tenant_id = %s AND c.search_text @@ "
                   "(SELECT string_agg(quote_literal(t.lexeme), ' | ') FROM unnest(to_tsvector('english', %s)) AS t)"
                   "::tsquery")
    with connection.transaction():
        PostgresStore(connection).set_tenant(tenant_id)
        profile: dict[str, Any] = {}
        for name, table, extra in (("chunk_words", "knowledge_base_chunk", ""),
                                   ("turn_words", "conversation_memory", "AND event_type = 'message'"),
                                   ("fact_words", "entity_memory", "")):
            profile[name] = connection.execute(words_sql.format(table=table, extra=extra),
                                               (tenant_id, sample)).fetchone()[0]
        chunks = connection.execute("SELECT count(*) FROM ctxasm.knowledge_base_chunk WHERE tenant_id = %s",
                                    (tenant_id,)).fetchone()[0]
        matches = sorted(connection.execute(matches_sql, (tenant_id, q)).fetchone()[0] for q in questions)
    median = matches[len(matches) // 2] if matches else None
    profile.update(chunks=chunks, question_matches=median,
                   question_match_share=(median / chunks if chunks and median is not None else None),
                   question_matches_range=[matches[0], matches[-1]] if matches else None)
    return profile


def clear_assemblies(connection: Any, tenant_id: str) -> int:
    """Remove what earlier benchmark assemblies recorded in the tenant (manifest events, their source refs
    and the history copies the deletes make), so every run measures the tenant at its built size: each
    assembly adds a manifest and hundreds of source refs, which a kept database would otherwise pile up run
    after run. Returns the rows removed (history copies not counted)."""
    removed = 0
    with connection.transaction():
        PostgresStore(connection).set_tenant(tenant_id)
        for table, predicate in (("context_source_ref", "derived_type = 'manifest'"),
                                 ("conversation_memory", "event_type = 'context_manifest'")):
            removed += connection.execute(f"DELETE FROM ctxasm.{table} WHERE tenant_id = %s AND {predicate}",
                                          (tenant_id,)).rowcount
            connection.execute(f"DELETE FROM ctxasm.{table}_history WHERE tenant_id = %s AND {predicate}",
                               (tenant_id,))
    return removed
