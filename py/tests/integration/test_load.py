"""Concurrent assemblies over a connection pool: every success has exactly one manifest, none are lost."""

from __future__ import annotations

from ctxasm_dev.bench import load


def test_eight_threads_three_assemblies_each(demo_target):
    before = load.manifest_rows(demo_target)
    result = load.run_load(demo_target, concurrency=8, per_worker=3, warm_up=2)
    assert result.errors == []
    assert result.succeeded == 24 and result.failed == 0
    assert len(set(result.manifest_ids)) == 24
    after = load.manifest_rows(demo_target)
    # Counted in the database: the 24 timed manifests, each once, each one a success returned, and two
    # untimed warm-up manifests per worker (made before the run's own count starts).
    new = set(after) - set(before)
    assert len(after) == len(before) + 24 + 16 and len(new) == 24 + 16
    assert set(result.manifest_ids) <= new
    assert result.manifests_counted == 24 and result.lost == 0 and result.duplicated == 0
    assert result.summary()["warm_up"] == 2
