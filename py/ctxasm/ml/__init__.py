"""The models that run in this process: the question embedding and the optional cross-encoder reranker. Each
loads once per process, on first use, from local files only."""
