"""Synthetic tenants for the benchmark: N memory rows of every type, loaded in batches.

The fixed slices (the demo's budget, guidelines, persona and tools) go through the write API. The bulk rows
bypass it for speed: ctx_memory.put_memory is one PL/pgSQL call per row (about 2,000 rows/s here), which
would take ten minutes for 1e6 rows before any index work. Instead each batch is COPYed into a temporary
staging table and moved with one multi-row INSERT ... SELECT into the memory table, as the owner role with
the tenant set: row-level security (WITH CHECK), the table's constraints, the generated tsvector and the
HNSW index all apply, and superseded / deleted versions are made by UPDATEs, so the history triggers copy
the retired versions exactly as the write API's own UPDATEs do. What assembly reads is the same rows the
write API would have written: the same columns, constraints, history and stored token counts.

Embeddings are synthetic and deterministic: running all-MiniLM-L6-v2 on 250,000 chunks would take hours on
two CPUs. A palette of 1,024 random unit vectors is made in SQL (seeded), and each chunk gets the normalised
sum of two palette vectors picked by hash of its id, so the HNSW index sees ~500,000 distinct points. Texts
are drawn (seeded) from the words of the demo scenario and the research corpus, so lexical retrieval and
the lexical scorer find overlaps with the benchmark questions.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..progress import progress
from ..store import PostgresStore

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "db" / "tests" / "scenarios" / "acme_demo.json"
CORPUS = REPO / "db" / "tests" / "corpus" / "research_corpus.json"

AGENT = "research-assistant"
OTHER_AGENTS = ("support-bot", "ops-agent")
#: The evaluation time of every benchmark assembly; rows are dated in the 400 days before it.
EVALUATION_TIME = datetime(2026, 9, 28, 12, 0, tzinfo=timezone.utc)
BATCH = 20_000
#: From this size the chunk embedding index is dropped before the load and built again after it, with the
#: definition of db/schema/postgresql/0060_retrieval.sql.
REBUILD_INDEX_FROM = 100_000
HNSW_INDEX = "knowledge_base_chunk_embedding"
HNSW_DDL = (f"CREATE INDEX IF NOT EXISTS {HNSW_INDEX} ON ctxasm.knowledge_base_chunk "
            "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)")

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

    @property
    def total(self) -> int:
        return sum(self.rows.values())


def plan(size: int, seed: int = 8) -> TenantPlan:
    return TenantPlan(tenant_id=f"bench_{size_label(size)}", rows=size, users=max(5, size // ROWS_PER_USER),
                      seed=seed)


def size_label(size: int) -> str:
    exponent = len(str(size)) - 1
    return f"1e{exponent}" if size == 10 ** exponent else str(size)


def vocabulary() -> list[str]:
    words: set[str] = set()
    for path in (DEMO, CORPUS):
        document = json.loads(path.read_text())
        for tenant in document["tenants"]:
            for memory in tenant["memories"]:
                words.update(w.strip(".,;:()\"'?!").lower() for w in memory.get("content", "").split())
    return sorted(w for w in words if w.isalpha() and 2 < len(w) < 15)


def questions(count: int, seed: int = 8) -> list[str]:
    """Different questions of 8 to 16 words, from the same vocabulary as the data."""
    rng = random.Random(seed)
    words = vocabulary()
    return [" ".join(rng.choices(words, k=rng.randint(8, 16))).capitalize() + "?" for _ in range(count)]


def fixed_rows() -> list[dict[str, Any]]:
    """The demo's budget, guidelines, persona and tools of the research assistant (agent-wide rows)."""
    document = json.loads(DEMO.read_text())
    keep = []
    for memory in document["tenants"][0]["memories"]:
        if memory["type"] in ("guideline", "persona", "toolbox") and memory.get("agent_id") == AGENT \
                and not memory.get("thread_id") and not memory.get("user_id"):
            keep.append({k: v for k, v in memory.items() if k not in ("versions", "deleted_at")})
    return keep


class _Texts:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.words = vocabulary()

    def text(self, low: int, high: int) -> str:
        words = self.rng.choices(self.words, k=self.rng.randint(low, high))
        sentences, start = [], 0
        while start < len(words):
            end = start + self.rng.randint(6, 18)
            sentences.append(" ".join(words[start:end]).capitalize() + ".")
            start = end
        return " ".join(sentences)


def _counts(texts: list[str]) -> list[int]:
    from ..tokens import encoding

    return [len(tokens) for tokens in encoding().encode_ordinary_batch(texts, num_threads=2)]


def _iso(moment: datetime) -> str:
    return moment.isoformat()


#: staging columns, in COPY order; every memory table takes the columns it has
_STAGE = ("id", "version", "user_id", "agent_id", "thread_id", "valid_from", "valid_until", "content",
          "content_tokens", "content_json", "key1", "key2", "num1", "num2", "ts1", "retire")
_STAGE_DDL = ("CREATE TEMPORARY TABLE IF NOT EXISTS bench_stage (id text, version int, user_id text, agent_id text, "
              "thread_id text, valid_from timestamptz, valid_until timestamptz, content text, content_tokens int, "
              "content_json jsonb, key1 text, key2 text, num1 numeric, num2 numeric, ts1 timestamptz, retire text)")
#: memory type -> (table, type-specific columns, the staging expressions that fill them)
_TARGETS = {
    "entity": ("entity_memory", "subject, predicate, confidence", "s.key1, s.key2, s.num1"),
    "workflow": ("workflow_memory", "workflow_key", "s.key1"),
    "kb_document": ("knowledge_base_document", "title, collection, source_uri, published_at",
                    "s.key1, s.key2, 'bench://' || s.id, s.ts1"),
    "kb_chunk": ("knowledge_base_chunk", "document_id, document_version, chunk_index, title, embedding",
                 "s.key1, 1, s.num1::int, s.key2, "
                 "l2_normalize(p1.v + p2.v)"),
    "conversation": ("conversation_memory", "turn_index, role, event_type", "s.num1::int, s.key1, 'message'"),
    "summary": ("summarization_memory", "summary_key, period_start, period_end",
                "s.key1, s.ts1, s.valid_from"),
    "compression": ("context_compression",
                    "source_type, source_id, source_version, source_hash, generating_model, prompt_version",
                    "'kb_chunk', s.key1, 1, encode(sha256(convert_to(s.key2, 'UTF8')), 'hex'), "
                    "'extractive-lead-1', 'bench'"),
}


def _move(connection: Any, tenant_id: str, kind: str, rows: list[tuple[Any, ...]]) -> None:
    """One batch: COPY into staging, one INSERT ... SELECT, then the UPDATEs that retire versions."""
    table, columns, expressions = _TARGETS[kind]
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
        retiring = {row[-1] for row in rows}
        palette = ("JOIN bench_palette p1 ON p1.k = abs(hashtext(s.id)) %% 1024 "
                   "JOIN bench_palette p2 ON p2.k = abs(hashtext(s.id || '#')) %% 1024") if kind == "kb_chunk" else ""
        insert = (f"INSERT INTO ctxasm.{table} (tenant_id, id, version, user_id, agent_id, thread_id, valid_from, "
                  f"valid_until, content, content_tokens, content_json, {columns}) "
                  f"SELECT %s, s.id, s.version, s.user_id, s.agent_id, s.thread_id, s.valid_from, "
                  f"CASE WHEN s.retire = 'superseded' THEN NULL ELSE s.valid_until END, "
                  f"s.content, s.content_tokens, s.content_json, {expressions} FROM bench_stage s {palette} ")
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


def _rows(plan_: TenantPlan, kind: str, count: int, texts: _Texts, chunk_texts: dict[str, str]
          ) -> Iterator[tuple[Any, ...]]:
    """`count` staging rows of one type (later versions and retirements included in the count)."""
    rng = random.Random(f"{plan_.seed}:{kind}")
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
                text = texts.text(15, 40)
                at = start + timedelta(days=30 * (version - 1))
                is_old = version < versions
                yield (row_id, version, user, agent(), None, at,
                       at + timedelta(days=30) if is_old else until, text, None, None, subject, predicate,
                       round(rng.uniform(0.3, 1.0), 3), None, None, "superseded" if is_old else retire)
                made += 1
        elif kind == "workflow":
            until, retire = lifecycle(start)
            yield (row_id, 1, None if n <= SHARED_FACTS // 10 else rng.choice(users), agent(), None, start, until,
                   texts.text(20, 60), None, None, f"workflow_{n}", None, None, None, None, retire)
            made += 1
        elif kind == "kb_document":
            until, retire = lifecycle(start)
            yield (row_id, 1, None if rng.random() < 0.6 else rng.choice(users), None, None, start, until,
                   texts.text(60, 160), None, None, f"Document {n}", "bench", None, None, start, retire)
            made += 1
        elif kind == "kb_chunk":
            until, retire = lifecycle(start)
            text = texts.text(80, 250)
            chunk_texts[row_id] = text
            yield (row_id, 1, None if rng.random() < 0.6 else rng.choice(users), None, None, start, until,
                   text, None, None, f"kb_document_{1 + n // 6:07d}", f"Chunk {n}", n % 6, None, None, retire)
            made += 1
        elif kind == "conversation":
            block = (n - 1) // TURNS_PER_THREAD
            user = users[(block // 10) % len(users)]
            thread = f"t{block:06d}"
            turn = (n - 1) % TURNS_PER_THREAD
            at = EVALUATION_TIME - timedelta(days=400) + timedelta(minutes=n)
            yield (row_id, 1, user, AGENT, thread, at, None, texts.text(10, 60), None, None,
                   "user" if turn % 2 == 0 else "assistant", None, turn, None, None, None)
            made += 1
        elif kind == "summary":
            until, retire = lifecycle(start)
            yield (row_id, 1, rng.choice(users), AGENT, None, start, until, texts.text(40, 120), None, None,
                   f"summary_{n}", None, None, None, start - timedelta(days=30), retire)
            made += 1
        elif kind == "compression":
            if not chunk_texts:
                return
            source = f"kb_chunk_{rng.randint(1, len(chunk_texts)):07d}"
            full = chunk_texts.get(source)
            if full is None:
                continue
            summary = " ".join(full.split()[:30]) + "."
            yield (f"cmp_{source}_{n}", 1, None, None, None, start, None, summary, None, None, source, full,
                   None, None, None, None)
            made += 1


def build_tenant(connection: Any, plan_: TenantPlan, log: Callable[[str], None]) -> BuildReport:
    """Register the tenant, write its fixed rows through the write API, then bulk-load the rest."""
    report = BuildReport(plan_.tenant_id)
    started = time.perf_counter()
    store = PostgresStore(connection)
    store.register_tenant(plan_.tenant_id, f"benchmark tenant, {plan_.rows} rows")
    store.set_tenant(plan_.tenant_id)
    fixed = fixed_rows()
    for record in fixed:
        store.put_memory(record["type"], {k: v for k, v in record.items() if k != "type"})
    store.commit()
    report.rows["fixed"] = len(fixed)
    connection.execute("SELECT setseed(0.8)")
    connection.execute("CREATE TEMPORARY TABLE IF NOT EXISTS bench_palette AS "
                       "SELECT k, l2_normalize(array_agg(random() - 0.5 ORDER BY d)::real[]::vector) AS v "
                       "FROM generate_series(0, 1023) AS k, generate_series(1, 384) AS d GROUP BY k")
    connection.commit()
    texts = _Texts(plan_.seed)
    chunk_texts: dict[str, str] = {}
    bulk = plan_.rows - len(fixed)
    order = ["kb_chunk", "compression", "entity", "workflow", "kb_document", "conversation", "summary"]
    rebuild_index = plan_.rows >= REBUILD_INDEX_FROM
    if rebuild_index:  # one HNSW build is far cheaper than 250,000 single inserts into the graph
        connection.execute(f"DROP INDEX IF EXISTS ctxasm.{HNSW_INDEX}")
        connection.commit()
    with progress(f"building {plan_.tenant_id}", total=bulk) as tick:
        for kind in order:
            count = int(bulk * MIX[kind]) if kind != "summary" else bulk - sum(report.rows.get(k, 0) for k in order
                                                                               if k != "summary")
            batch: list[tuple[Any, ...]] = []
            for row in _rows(plan_, kind, count, texts, chunk_texts):
                batch.append(row)
                if len(batch) >= BATCH:
                    _flush(connection, plan_.tenant_id, kind, batch, tick)
                    report.rows[kind] = report.rows.get(kind, 0) + len(batch)
                    batch = []
            if batch:
                _flush(connection, plan_.tenant_id, kind, batch, tick)
                report.rows[kind] = report.rows.get(kind, 0) + len(batch)
            log(f"{plan_.tenant_id}: {kind} {report.rows.get(kind, 0)} rows, "
                f"{time.perf_counter() - started:.0f} s")
    if rebuild_index:
        index_started = time.perf_counter()
        connection.execute("SET maintenance_work_mem = '2GB'")
        connection.execute(HNSW_DDL)
        connection.commit()
        log(f"{plan_.tenant_id}: HNSW index rebuilt in {time.perf_counter() - index_started:.0f} s")
    with connection.transaction():
        store.set_tenant(plan_.tenant_id)
        report.history_rows = sum(connection.execute(
            f"SELECT count(*) FROM ctxasm.{table}_history").fetchone()[0] for table, _, _ in _TARGETS.values())
    connection.execute("ANALYZE")
    connection.commit()
    report.seconds = time.perf_counter() - started
    return report


def _flush(connection: Any, tenant_id: str, kind: str, batch: list[tuple[Any, ...]], tick: Callable) -> None:
    counts = _counts([row[7] for row in batch])
    rows = [row[:8] + (tokens,) + row[9:] for row, tokens in zip(batch, counts)]
    _move(connection, tenant_id, kind, rows)
    tick(len(rows))
