"""Hybrid retrieval over the research corpus: embeddings at load, lexical + vector fused, bounded, replayable."""

from __future__ import annotations

import json

import pytest

from ctxasm.core.compose import WindowSpec
from ctxasm.engines.postgres import PostgresStore
from ctxasm.local import pgconn
from ctxasm.services import load
from ctxasm.services.assemble import assemble, parse_time
from ctxasm.services.replay import replay

from ..conftest import REPO

CORPUS = REPO / "db" / "tests" / "corpus"
QUERIES = {q["id"]: q for q in json.loads((CORPUS / "queries.json").read_text())["queries"]}


@pytest.fixture()
def corpus_target(corpus_once):
    """The demo and the research corpus, loaded once for the module: these tests add manifests only."""
    return corpus_once


def window(target, question: str, intent: str = "fact_check"):
    spec = WindowSpec(tenant_id="acme", user_id="jane", agent_id="research-assistant",
                      thread_id="thread_jane_research", intent=intent, question=question)
    with pgconn.connect(target, pgconn.app_login()) as connection:
        return assemble(PostgresStore(connection), spec, parse_time("2026-09-28T12:00:00"))


@pytest.mark.slow  # embeds the 137 chunks of the corpus
def test_chunks_are_embedded_at_load(demo_target):
    # the corpus file itself, which carries no embedding: the loader computes every one
    report = load.load_file(demo_target, CORPUS / "research_corpus.json")
    assert report.rows[("acme", "kb_chunk")] == 137
    with pgconn.connect(demo_target, pgconn.owner_login()) as connection:
        PostgresStore(connection).set_tenant("acme")
        missing, total = connection.execute(
            "SELECT count(*) FILTER (WHERE embedding IS NULL), count(*) FROM ctxasm.knowledge_base_chunk").fetchone()
    assert (missing, total) == (0, 137)


def test_paraphrase_is_found_by_the_vector_half(corpus_target):
    query = QUERIES["q17"]  # shares few words with the retention chunk
    best = {ref for ref, grade in query["relevant"].items() if grade == 2}
    items = window(corpus_target, query["query"]).manifest["retrieval"]["items"]
    by_vector = sorted((i for i in items if i["slice"] == "evidence" and i.get("vector_rank") is not None),
                       key=lambda i: i["vector_rank"])
    assert {i["ref"][1] for i in by_vector[:5]} & best


def test_retrieval_is_hybrid_bounded_and_ordered(corpus_target):
    manifest = window(corpus_target, QUERIES["q01"]["query"], intent="comparison").manifest
    retrieval = manifest["retrieval"]
    assert retrieval["method"] == "hybrid-bm25-hnsw-rrf-60"
    items = [i for i in retrieval["items"] if i["origin"] == "retrieval" and i["slice"] == "evidence"]
    limit = manifest["candidate_limits"]["evidence"]
    # Each retriever reads at least its depth (or the slice's limit); the fused list is cut to the limit.
    assert 0 < len(items) <= 2 * max(retrieval["depth"], limit)
    cut = sum(c["rows"] for c in manifest["candidate_cuts"] if c["slice"] == "evidence")
    assert len(items) - cut <= limit
    fused = [i["fused"] for i in items]
    assert fused == sorted(fused, reverse=True)
    assert any(i["lexical_rank"] and i["vector_rank"] for i in items)
    evidence = [m for m in manifest["memories"] if m["slice"] == "evidence"]
    retrieved = {tuple(i["ref"]) for i in items}
    assert evidence and all(tuple(m["ref"]) in retrieved for m in evidence)
    cited_docs = {m["ref"][1].rsplit("_", 1)[0] for m in evidence}
    assert {"chunk_letta_paper", "chunk_agentcore_memory"} <= cited_docs


def test_a_corpus_window_replays(corpus_target):
    recorded = window(corpus_target, QUERIES["q02"]["query"])
    with pgconn.connect(corpus_target, pgconn.app_login()) as connection:
        result = replay(PostgresStore(connection), "acme", recorded.manifest_id)
    assert result.status == "match", result.reason


def test_comparison_under_a_small_evidence_budget_degrades(corpus_target):
    """Jane's first question, in the thread whose own (narrower) budget leaves little room for evidence and
    caps it at three chunks in full and two summaries: the rest enter as pointers while room lasts, then are
    excluded by budget. The comparison intent's shares size the slices."""
    spec = WindowSpec(tenant_id="acme", user_id="jane", agent_id="research-assistant",
                      thread_id="thread_jane_tight", intent="comparison", question=QUERIES["q01"]["query"])
    with pgconn.connect(corpus_target, pgconn.app_login()) as connection:
        manifest = assemble(PostgresStore(connection), spec, parse_time("2026-09-28T11:51:00")).manifest
    assert manifest["budget_ref"] == ["guideline", "context_budget_small_evidence", 1]
    allocation = manifest["allocation"]
    # 0.57 of the remainder, plus at most the few tokens the other slices lost to flooring.
    assert 0 <= allocation["slices"]["evidence"]["share"] - int(allocation["remainder"] * 0.57) < 4
    evidence = [m for m in manifest["memories"] if m["slice"] == "evidence"]
    tiers = [m["tier"] for m in evidence]
    assert tiers.count("full") == 3 and tiers.count("summary") == 2 and tiers.count("pointer") >= 1
    assert tiers == sorted(tiers, key=["full", "summary", "pointer"].index), "degradation follows rank"
    assert all(m["tier_rule"] == "tier_limit" for m in evidence if m["tier"] != "full")
    assert any(x["rule"] == "slice_budget" and x["slice"] == "evidence" for x in manifest["excluded"])
    for summary in (m for m in evidence if m["tier"] == "summary"):
        assert summary["summary_ref"] == ["compression", f"cmp_{summary['ref'][1]}", 1]
    used = manifest["allocation"]["slices"]["evidence"]["used"]
    assert used == sum(m["tokens"] for m in evidence) <= manifest["allocation"]["slices"]["evidence"]["allowance"]


def test_a_reranked_window_with_candidates_cut_by_its_limit_replays(corpus_target):
    """The reranker's second pass scores only the candidates the first pass kept; those its limit cut rank
    after every scored one. The recorded sources carry exactly that, so replay rebuilds the same window."""
    class ByLength:
        name = "test-reranker:length"

        def logits(self, question, texts):
            return [round(len(text) / 100.0, 6) for text in texts]

    spec = WindowSpec(tenant_id="acme", user_id="jane", agent_id="research-assistant",
                      thread_id="thread_jane_research", intent="comparison", question=QUERIES["q01"]["query"])
    with pgconn.connect(corpus_target, pgconn.app_login()) as connection:
        window = assemble(PostgresStore(connection), spec, parse_time("2026-09-28T12:00:00"), reranker=ByLength())
    assert window.manifest["scorer"] == ByLength.name
    assert any(cut["slice"] == "evidence" and cut["rows"] > 0 for cut in window.manifest["candidate_cuts"])
    with pgconn.connect(corpus_target, pgconn.app_login()) as connection:
        result = replay(PostgresStore(connection), "acme", window.manifest_id)
    assert result.status == "match", result.reason


#: Words the corpus lacks: with them the question has more terms than matched_idf_sql writes out as tests.
_MANY_WORDS = " ".join(f"zyzzo{chr(97 + i)}{chr(97 + j)}" for i in range(5) for j in range(8))


@pytest.mark.parametrize(("extra", "form"), [(" zyzzogeton", "tests"), (_MANY_WORDS, "set")])
def test_matched_idf_sums_the_weights_of_the_question_lexemes_a_row_holds(corpus_target, extra, form):
    # ctxasm.matched_idf_sql writes one lexeme test per term of the row's type, or, for a question of many terms,
    # calls ctxasm.matched_idf (the row's lexemes as a set); the plain definition compares every lexeme of the row
    # with every term. Each over every chunk, for a question with words the corpus has and words it lacks, under
    # the weights of each searchable type, and a type no term has.
    question = QUERIES["q01"]["query"] + extra
    with pgconn.connect(corpus_target, pgconn.owner_login()) as connection:
        PostgresStore(connection).set_tenant("acme")
        types, lexemes, idf = connection.execute(
            "SELECT array_agg(t.memory_type), array_agg(t.lexeme), array_agg(t.idf) "
            "FROM ctxasm.question_terms('acme', %s) AS t", (question,)).fetchone()
        expression = connection.execute(
            "SELECT ctxasm.matched_idf_sql('c.search_text', 'k.kind', ARRAY['kb_chunk', 'entity', 'no_such_type'], "
            "                              %s, %s, ARRAY[1, 2, 3, 4])", (types, lexemes)).fetchone()[0]
        assert ("ctxasm.matched_idf(" in expression) == (form == "set"), expression[:200]
        assert "zyzzo" not in expression  # the lexemes stay parameters
        rows = _matched_rows(connection, expression, types, lexemes, idf)
    assert len(rows) == 3 * 137
    assert [(i, kind, round(fast, 9)) for i, kind, fast, _, _ in rows] == [
        (i, kind, round(plain, 9)) for i, kind, _, plain, _ in rows]
    # to the last bit, as the set's sum: the scores a window records do not move
    assert [fast for _, _, fast, _, _ in rows] == [as_set for *_, as_set in rows]
    assert any(fast == 0 for _, _, fast, _, _ in rows) and any(fast > 0 for _, _, fast, _, _ in rows)
    assert all(fast == 0 for _, kind, fast, _, _ in rows if kind == "no_such_type")


def _matched_rows(connection, expression, types, lexemes, idf):
    """Each chunk under each kind: (id, kind, the expression's sum, the plain definition's sum, the sum of the
    row's matched lexemes taken as a set in their tsvector order)."""
    queries = connection.execute("SELECT ctxasm.term_queries(%s)::text[]", (lexemes,)).fetchone()[0]
    # The parameters in the positions matched_idf_sql was given ($1 types, $2 lexemes, $3 weights, $4 queries),
    # typed once.
    return connection.execute(
        "WITH p AS (SELECT %s::varchar[] AS t, %s::text[] AS l, %s::double precision[] AS i, %s::tsquery[] AS q) "
        f"SELECT c.id, k.kind, ({expression})::double precision, "
        "(SELECT coalesce(sum(x.idf), 0) FROM unnest($1, $2, $3) AS x(kind, lexeme, idf) "
        "  WHERE x.kind = k.kind AND x.lexeme = ANY (tsvector_to_array(c.search_text))), "
        # the row's lexemes as a set, summed in the tsvector's order
        "(SELECT coalesce(sum($3[p.at]), 0) "
        "   FROM unnest(tsvector_to_array(ts_filter(setweight(c.search_text, 'A', $2), '{a}'))) AS m(l) "
        "  CROSS JOIN LATERAL unnest(array_positions($2, m.l)) AS p(at) WHERE $1[p.at] = k.kind) "
        "FROM p, ctxasm.knowledge_base_chunk AS c "
        "CROSS JOIN unnest(ARRAY['kb_chunk', 'entity', 'no_such_type']) AS k(kind) ORDER BY c.id, k.kind",
        (types, lexemes, idf, queries)).fetchall()


@pytest.mark.parametrize("lexeme", ["plain", "o'brien", "back\\slash", "sp ace", "co:lon", "a:*", "a&b|!c", "x''y",
                                    "ünï", "*"])
def test_a_lexeme_query_matches_that_lexeme_and_no_other(corpus_target, lexeme):
    # Lexemes are matched as they are: quotes, backslashes, operators and a prefix mark are part of the lexeme.
    with pgconn.connect(corpus_target, pgconn.owner_login()) as connection:
        own, longer, probe = connection.execute(
            "SELECT array_to_tsvector(ARRAY[%(l)s]) @@ ctxasm.lexeme_query(%(l)s), "
            "       array_to_tsvector(ARRAY[%(l)s || 'z']) @@ ctxasm.lexeme_query(%(l)s), "
            "       array_to_tsvector(ARRAY[%(l)s]) @@ ctxasm.probe_query(ARRAY[%(l)s, 'other'], NULL, 250000, 500)",
            {"l": lexeme}).fetchone()
    assert own and not longer and probe


@pytest.mark.parametrize(("lexemes", "df", "probe"), [
    # no statistics: every lexeme probes
    (["oracl", "flashback"], [None, None], "'flashback' | 'oracl'"),
    # rare lexemes while their rows stay within the 500 the probe may visit
    (["oracl", "flashback", "scn"], [90000, 300, 150], "'flashback' | 'scn'"),
    # every single too common for the rows, a pair of the rarest within the postings bound
    (["oracl", "flashback", "scn"], [90000, 9000, 8000], "'scn' & 'flashback'"),
    # the rarest alone when no pair is left within the bound, if retrieval can score all it matches
    (["oracl", "flashback"], [90000, 900], "'flashback'"),
    (["oracl", "flashback"], [90000, 1500], None),
    (["oracl", "flashback"], [90000, 15000], None),
    # pairs while the postings they read together stay within the bound: two of three pairs fit the rows
    (["alpha", "beta", "gamma"], [6000, 7000, 8000], "'alpha' & 'beta'"),
    # every lexeme in more rows than the index may read for a clause: no probe at all
    (["oracl", "flashback", "queri"], [90000, 30000, 135000], None),
])
def test_the_probe_reads_no_clause_over_the_postings_bound(corpus_target, lexemes, df, probe):
    with pgconn.connect(corpus_target, pgconn.owner_login()) as connection:
        got = connection.execute("SELECT ctxasm.probe_query(%s::text[], %s::double precision[], 250000, 500)::text",
                                 (lexemes, df)).fetchone()[0]
    assert got == probe
