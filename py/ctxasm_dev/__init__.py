"""Development tools that are not shipped with ctxasm: the benchmark (bench), the static gates (gates) and the
retrieval and conversation evaluations (evaluation), and the phase timing they share (timing)."""
