"""`scripts/bench`: scale, load and fault figures for the assembler (printed, not asserted).

generate: synthetic tenants of 1e3..1e6 rows; naive: the read-everything baseline; runner: latency, round
trips, phase split and memory per size and assembler; load: concurrent assemblies over a pool; report: the
tables. See `python -m ctxasm.bench --help`.
"""
