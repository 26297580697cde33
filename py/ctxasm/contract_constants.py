"""The numbers both engines and Python agree on: generated from contract/constants.toml; edit the catalogue, then regenerate (python -m ctxasm_dev.contract.generate)."""

from __future__ import annotations

#: the longest question select_window accepts, in characters; bounds the work one call can ask for
MAX_QUESTION_CHARS = 8000
#: the longest turn add_turn accepts, in characters: as long as a question (a question becomes its thread's next turn), so every turn can be seated in a window
MAX_TURN_CHARS = 8000
#: the most fact row versions read_facts returns a call: an adapter lists, gets and ranks its facts within this
MAX_FACT_ROWS = 1000
#: rows each retriever ranks at least (a slice's candidate limit when larger)
RETRIEVAL_DEPTH = 50
#: PostgreSQL: the estimated rows the lexical probe may visit
PROBE_ROWS = 500
#: the postings the lexical probe may read: Oracle keeps words while their Oracle Text postings stay within it (always the rarest word); PostgreSQL probes no clause whose lexemes appear in more of the tenant's rows together (every lexeme that common: no lexical probe)
PROBE_POSTINGS = 20000
#: Oracle: the question's distinct words the lexical probe reads at most
PROBE_WORDS = 12
#: durable facts are enumerated while the scope holds at most this many row versions of them
FACTS_ENUMERATED = 100
#: a slice's default candidate limit counts records of this many tokens in its share
TOKENS_PER_CANDIDATE = 25
#: the smallest default candidate limit of a slice
MIN_CANDIDATES = 10
#: the largest default candidate limit of a slice (as large as a budget may set, so large budgets fill)
MAX_CANDIDATES = 1000
#: the largest candidate limit a budget's candidate_limits may set
MAX_CANDIDATE_LIMIT = 1000
#: the largest whole number of a context budget (usable_context, a reserve, max_rounds, a tier or compression limit; candidate_limits have their own): above any model's context window, far below what the engines' integer arithmetic over a budget holds
MAX_BUDGET_TOKENS = 10000000
#: the most items search_memory returns
SEARCH_MAX_LIMIT = 20
#: the length of every embedding (all-MiniLM-L6-v2)
EMBEDDING_DIMENSIONS = 384
#: the characters of a pointer line, before its ellipsis (PostgreSQL: ctxasm.pointer_line, a stored generated column's expression)
POINTER_LENGTH = 60
#: how far below its thread neighbour's logit a recalled turn may score (adjacent turns, live hybrid scoring)
ADJACENT_MARGIN = 2.5
#: the share of its thread's best logit a recalled turn's logit gains (live hybrid scoring)
THREAD_WEIGHT = 0.3
#: what a recalled turn's logit gains when the question names its speaker (live hybrid scoring)
SPEAKER_WEIGHT = 1.0
#: what a recalled turn's logit gains when it was said in the time the question names: a day, or a month and the week after it (live hybrid scoring)
DATE_WEIGHT = 1.5
#: the most a recalled turn's length moves its logit either way: ln(its tokens / the mean of the recalled turns of its voice, role and speaker, it competes with), within this (live hybrid scoring)
LENGTH_CAP = 1.0
#: confidence and recency count at this share of their weights, times 4 r (1 - r) for a candidate of rerank r (recency in full when the question asks about the present): they break near-ties of relevance, near in logits
TIE_SHARE = 0.005
#: the longest free text a memory row stores in one field (a fact, a turn, a summary, a tool's notes), in characters; a kb_document's content may be max_document_chars
MAX_TEXT_CHARS = 100000
#: the longest content of a kb_document row, in characters
MAX_DOCUMENT_CHARS = 2000000
#: the longest JSON value a memory row stores in one field (content_json, a tool schema, an access policy), serialized, in characters
MAX_JSON_CHARS = 2000000
#: the most dependency references record_manifest writes for one window (a context_source_ref row each): room for the largest budgets' rendered and excluded rows, and no call writes hundreds of thousands
MAX_MANIFEST_REFS = 20000
#: the most references a row's source_refs may hold
MAX_SOURCE_REFS = 1000
#: the most entries select_window takes in its replay inputs: the recorded sources (in_sources) and the recorded scores (in_scores)
MAX_REPLAY_ITEMS = 10000
#: the selection steps in the order both engines run them (step_<name> in select_window; contract/selection.toml)
SELECTION_STEPS: tuple[str, ...] = ('scope', 'lifecycle', 'dedup', 'conflict', 'score', 'priority', 'tie_break', 'limit')
