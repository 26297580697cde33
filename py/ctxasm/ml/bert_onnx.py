"""A BERT sentence encoder as an ONNX graph, written from its safetensors weights without torch.

The graph computes what sentence-transformers computes for all-MiniLM-L6-v2 (Transformer -> mean Pooling ->
Normalize): BERT's embeddings (word + position + token type 0, then LayerNorm), N encoder layers (multi-head
self-attention with the padding masked out, residual + LayerNorm, a GELU feed-forward, residual + LayerNorm),
the mean of the token vectors over the attention mask, and L2 normalisation. Inputs `input_ids` and
`attention_mask` (int64, [batch, sequence]); output `sentence_embedding` (float32, [batch, hidden]).

Building the graph by hand rather than tracing the PyTorch model keeps torch out of the default install: the
export needs only numpy, safetensors and onnx. The result is checked against sentence-transformers by the
model tests (cosine at least 0.999 on every text of the research corpus).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: Bumped whenever the graph changes, so cached exports are made again.
GRAPH_VERSION = "bert-mean-normalize-1"
OPSET = 17
#: What BERT adds to the attention scores of padding positions (transformers uses the float32 minimum too).
MASKED_SCORE = float(np.finfo(np.float32).min)


@dataclass(frozen=True)
class BertShape:
    hidden: int
    layers: int
    heads: int
    intermediate: int
    layer_norm_eps: float

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> BertShape:
        model_type = config.get("model_type")
        if model_type != "bert":
            raise ValueError(f"config.json: model_type is {model_type!r}, this exporter writes BERT graphs only")
        activation = config.get("hidden_act", "gelu")
        if activation != "gelu":
            raise ValueError(f"config.json: hidden_act is {activation!r}, only the exact (erf) gelu is supported")
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("config.json: position_embedding_type must be absolute")
        shape = cls(hidden=int(config["hidden_size"]), layers=int(config["num_hidden_layers"]),
                    heads=int(config["num_attention_heads"]), intermediate=int(config["intermediate_size"]),
                    layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)))
        if shape.hidden % shape.heads:
            raise ValueError(f"config.json: hidden_size {shape.hidden} is not a multiple of "
                             f"num_attention_heads {shape.heads}")
        return shape


class _Graph:
    """Nodes and initializers under construction, with generated names."""

    def __init__(self) -> None:
        from onnx import helper

        self.helper = helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def constant(self, hint: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        name = self.name(hint)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], hint: str | None = None, **attributes: Any) -> str:
        out = self.name(hint or op_type.lower())
        self.nodes.append(self.helper.make_node(op_type, inputs, [out], **attributes))
        return out


def _weight(weights: Mapping[str, np.ndarray], name: str) -> np.ndarray:
    # Checkpoints saved from BertModel have bare names; some saved from a task model prefix them with "bert.".
    for key in (name, f"bert.{name}"):
        if key in weights:
            return np.asarray(weights[key], dtype=np.float32)
    raise ValueError(f"the weights have no tensor {name!r}")


def build_sentence_encoder(weights: Mapping[str, np.ndarray], shape: BertShape, *,
                           producer: str = "ctxasm") -> Any:
    """The ONNX ModelProto of the sentence encoder (see the module docstring)."""
    from onnx import TensorProto, checker, helper

    g = _Graph()
    w = lambda name: _weight(weights, name)  # noqa: E731 (a short local alias reads better in the graph code)

    def linear(x: str, prefix: str) -> str:
        # torch.nn.Linear keeps weight as [out, in]; MatMul wants [in, out].
        product = g.op("MatMul", [x, g.constant(f"{prefix}.weight", w(f"{prefix}.weight").T)])
        return g.op("Add", [product, g.constant(f"{prefix}.bias", w(f"{prefix}.bias"))])

    def layer_norm(x: str, prefix: str) -> str:
        return g.op("LayerNormalization", [x, g.constant(f"{prefix}.weight", w(f"{prefix}.weight")),
                                           g.constant(f"{prefix}.bias", w(f"{prefix}.bias"))],
                    axis=-1, epsilon=shape.layer_norm_eps)

    def scalar(hint: str, value: float) -> str:
        return g.constant(hint, np.array(value, dtype=np.float32))

    def ints(hint: str, values: list[int]) -> str:
        return g.constant(hint, np.array(values, dtype=np.int64))

    head_size = shape.hidden // shape.heads

    # Embeddings: word + position + token type 0 (one sentence per input, so every token type is 0).
    words = g.op("Gather", [g.constant("word_embeddings", w("embeddings.word_embeddings.weight")), "input_ids"])
    # The first `sequence` rows of the position table, a Slice with 1-D bounds (onnxruntime's optimiser turns a
    # Gather over Range(0, n) into a Slice with scalar bounds, which its own Slice kernel then refuses).
    length = g.op("Slice", [g.op("Shape", ["input_ids"]), ints("from_1", [1]), ints("to_2", [2])])
    position_vectors = g.op("Slice", [g.constant("position_embeddings", w("embeddings.position_embeddings.weight")),
                                      ints("from_0", [0]), length, ints("axis_0", [0])])
    token_type = g.constant("token_type_0", w("embeddings.token_type_embeddings.weight")[0])
    x = g.op("Add", [g.op("Add", [words, position_vectors]), token_type])
    x = layer_norm(x, "embeddings.LayerNorm")

    # Padding: a large negative score before the softmax, [batch, 1, 1, sequence].
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    padding = g.op("Sub", [scalar("one_f", 1.0), mask])
    score_bias = g.op("Unsqueeze", [g.op("Mul", [padding, scalar("masked", MASKED_SCORE)]), ints("axes_1_2", [1, 2])])

    split_heads = ints("split_heads", [0, 0, shape.heads, head_size])
    merge_heads = ints("merge_heads", [0, 0, shape.hidden])
    scale = scalar("scale", 1.0 / math.sqrt(head_size))
    root_half = scalar("inv_sqrt2", 1.0 / math.sqrt(2.0))
    half, one = scalar("half", 0.5), scalar("one_gelu", 1.0)

    for i in range(shape.layers):
        p = f"encoder.layer.{i}"
        q = g.op("Transpose", [g.op("Reshape", [linear(x, f"{p}.attention.self.query"), split_heads])],
                 perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [linear(x, f"{p}.attention.self.key"), split_heads])],
                 perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [linear(x, f"{p}.attention.self.value"), split_heads])],
                 perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), score_bias])
        probabilities = g.op("Softmax", [scores], axis=-1)
        context = g.op("Reshape", [g.op("Transpose", [g.op("MatMul", [probabilities, v])], perm=[0, 2, 1, 3]),
                                   merge_heads])
        attended = linear(context, f"{p}.attention.output.dense")
        x = layer_norm(g.op("Add", [attended, x]), f"{p}.attention.output.LayerNorm")
        inner = linear(x, f"{p}.intermediate.dense")
        # gelu(u) = 0.5 * u * (1 + erf(u / sqrt(2))), the exact form BERT's "gelu" names.
        gelu = g.op("Mul", [g.op("Mul", [inner, half]),
                            g.op("Add", [g.op("Erf", [g.op("Mul", [inner, root_half])]), one])])
        x = layer_norm(g.op("Add", [linear(gelu, f"{p}.output.dense"), x]), f"{p}.output.LayerNorm")

    # Mean pooling over real tokens: sum(h * mask) / max(sum(mask), 1e-9), as sentence-transformers' Pooling.
    mask3 = g.op("Unsqueeze", [mask, ints("axis_2", [2])])
    axis_1 = ints("axis_1", [1])
    summed = g.op("ReduceSum", [g.op("Mul", [x, mask3]), axis_1], keepdims=0)
    counted = g.op("Max", [g.op("ReduceSum", [mask3, axis_1], keepdims=0), scalar("min_count", 1e-9)])
    mean = g.op("Div", [summed, counted])
    # L2 normalisation: v / max(|v|, 1e-12), as torch.nn.functional.normalize.
    norm = g.op("Sqrt", [g.op("ReduceSum", [g.op("Mul", [mean, mean]), axis_1], keepdims=1)])
    g.nodes.append(helper.make_node("Div", [mean, g.op("Max", [norm, scalar("min_norm", 1e-12)])],
                                    ["sentence_embedding"]))

    graph = helper.make_graph(
        g.nodes, "sentence_encoder",
        inputs=[helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
                helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])],
        outputs=[helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", shape.hidden])],
        initializer=g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name=producer)
    model.ir_version = 8  # the IR version of opset 17: readable by every onnxruntime that runs opset 17
    checker.check_model(model)
    return model


def read_model_dir(model_dir: Path) -> tuple[dict[str, np.ndarray], BertShape]:
    """The weights (model.safetensors) and the shape (config.json) of a BERT model directory."""
    from safetensors.numpy import load_file

    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    weights_file = model_dir / "model.safetensors"
    if not weights_file.is_file():
        raise ValueError(f"{model_dir}: no model.safetensors")
    return load_file(str(weights_file)), BertShape.from_config(config)


def export(model_dir: Path, output: Path, *, metadata: Mapping[str, str] | None = None) -> Path:
    """Write the sentence encoder of `model_dir` to `output` (through a temporary file, so a reader never sees
    half a model)."""
    import onnx

    weights, shape = read_model_dir(model_dir)
    model = build_sentence_encoder(weights, shape)
    for key, value in (metadata or {}).items():
        model.metadata_props.add(key=key, value=value)
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(f".{output.name}.{os.getpid()}.partial")  # one per exporting process
    onnx.save_model(model, str(partial))
    partial.replace(output)
    return output
