"""`scripts/bench`: scale, noisy-neighbour, load and fault figures for the assembler (printed, not asserted).

text_model: corpus-like text (a bigram model of the research corpus); synthetic_embedding: the stand-in
embedding space of the rows and the questions; catalog: embedding columns and vector indexes as the schema
has them; generate: tenants of 1e3..1e6 rows; naive: the read-everything baseline; runner: latency, round
trips, phase split and memory per size and assembler; neighbour: a small tenant alone and beside a large
one; load: concurrent assemblies over a pool; report: the tables and the scaling goals. See
`python -m ctxasm_dev.bench --help`.
"""
