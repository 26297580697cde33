"""Machine-learning runtimes: the question and memory embedding on onnxruntime, and its one-time export.

Nothing here imports torch. The export reads the shipped safetensors weights with numpy and writes the ONNX
graph with the `onnx` package; at run time only onnxruntime, numpy and the `tokenizers` package are loaded.
"""
