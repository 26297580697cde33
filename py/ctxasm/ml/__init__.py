"""The models that run in this process: the question and memory embedding on onnxruntime (with its one-time
ONNX export) and the optional cross-encoder reranker. Each loads once per process, on first use, from local
files only. And the one that may not: the summarizer (ctxasm.ml.summarizer) calls an OpenAI-compatible server
when the deployment names a model, and summarizes offline when it names none.

Only the reranker needs torch (the `rerank` extra). The embedding's export reads the shipped safetensors
weights with numpy and writes the ONNX graph with the `onnx` package; at run time only onnxruntime, numpy and
the `tokenizers` package are loaded.
"""
