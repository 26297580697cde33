"""ctxasm: context assembly for multi-tenant agent memory."""

__version__ = "0.1.0"
