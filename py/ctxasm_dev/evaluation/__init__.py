"""Retrieval evaluation on the labelled research corpus (scripts/eval-retrieval)."""
