"""The models that run in this process: the question and memory embedding on onnxruntime (with its one-time
ONNX export) and the optional cross-encoder reranker. Each loads once per process, on first use, from local
files only.

Only the reranker needs torch (the `rerank` extra). The embedding's export reads the shipped safetensors
weights with numpy and writes the ONNX graph with the `onnx` package; at run time only onnxruntime, numpy and
the `tokenizers` package are loaded.
"""
