"""The BERT graph written with onnxruntime's fused contrib ops (domain com.microsoft).

Same weights and the same maths as bert_onnx's plain graph, in fewer, bigger kernels:
EmbedLayerNormalization (word + position + type embeddings, LayerNorm, sequence lengths),
Attention (one packed QKV GEMM, scaled dot product, softmax, context), SkipLayerNormalization
(bias + residual + LayerNorm) and BiasGelu. onnxruntime's own BERT fuser does not find the
attention in the plain graph; writing the fused ops directly needs no optimizer and no torch.
The result runs only on onnxruntime, the only runtime kb uses.
"""

from __future__ import annotations

import numpy as np

from kb_search.embedding.bert_onnx import _GraphBuilder

MS_DOMAIN = "com.microsoft"


class FusedGraphBuilder(_GraphBuilder):
    domain_opsets = ((MS_DOMAIN, 1),)

    def ms_op(self, op_type: str, inputs: list[str], hint: str, outputs: int = 1, **attrs: object):
        names = [self._name(hint) for _ in range(outputs)]
        node = self.helper.make_node(
            op_type, inputs, names, name=names[0], domain=MS_DOMAIN, **attrs
        )
        self.nodes.append(node)
        return names[0] if outputs == 1 else names

    def embeddings_and_lengths(self) -> tuple[str, str]:
        """(normalised embeddings [B, S, H], sequence lengths [B] int32 for Attention)."""
        w = self.w
        ids = self.op("Cast", ["input_ids"], "ids32", to=6)  # contrib ops take int32 ids
        types = self.op("Cast", ["token_type_ids"], "types32", to=6)
        mask = self.op("Cast", ["attention_mask"], "mask32", to=6)
        inputs = [
            ids,
            types,
            self.const("word_embeddings", w.get("embeddings.word_embeddings.weight")),
            self.const("position_embeddings", w.get("embeddings.position_embeddings.weight")),
            self.const("token_type_embeddings", w.get("embeddings.token_type_embeddings.weight")),
            self.const("embeddings.LayerNorm.weight", w.get("embeddings.LayerNorm.weight")),
            self.const("embeddings.LayerNorm.bias", w.get("embeddings.LayerNorm.bias")),
            mask,
        ]
        hidden, lengths = self.ms_op(
            "EmbedLayerNormalization",
            inputs,
            "embeddings",
            outputs=2,
            epsilon=self.cfg.layer_norm_eps,
        )
        return hidden, lengths

    def attention(self, x: str, lengths: str, prefix: str) -> str:
        parts = ("query", "key", "value")
        weight = np.concatenate([self.w.get(f"{prefix}.{p}.weight").T for p in parts], axis=1)
        bias = np.concatenate([self.w.get(f"{prefix}.{p}.bias") for p in parts])
        return self.ms_op(
            "Attention",
            [
                x,
                self.const(f"{prefix}.qkv.weight_t", weight),
                self.const(f"{prefix}.qkv.bias", bias),
                lengths,
            ],
            prefix,
            num_heads=self.cfg.num_heads,
        )

    def dense_skip_norm(self, x: str, residual: str, dense: str, norm: str) -> str:
        """LayerNorm(x @ W + b + residual) as MatMul + SkipLayerNormalization."""
        weight = self.const(f"{dense}.weight_t", self.w.get(f"{dense}.weight").T)
        projected = self.op("MatMul", [x, weight], dense)
        return self.ms_op(
            "SkipLayerNormalization",
            [
                projected,
                residual,
                self.const(f"{norm}.weight", self.w.get(f"{norm}.weight")),
                self.const(f"{norm}.bias", self.w.get(f"{norm}.bias")),
                self.const(f"{dense}.bias", self.w.get(f"{dense}.bias")),
            ],
            norm,
            epsilon=self.cfg.layer_norm_eps,
        )

    def fused_layer(self, x: str, lengths: str, index: int) -> str:
        p = f"encoder.layer.{index}"
        context = self.attention(x, lengths, f"{p}.attention.self")
        x = self.dense_skip_norm(
            context, x, f"{p}.attention.output.dense", f"{p}.attention.output.LayerNorm"
        )
        up = f"{p}.intermediate.dense"
        projected = self.op(
            "MatMul", [x, self.const(f"{up}.weight_t", self.w.get(f"{up}.weight").T)], up
        )
        hidden = self.ms_op(
            "BiasGelu", [projected, self.const(f"{up}.bias", self.w.get(f"{up}.bias"))], up
        )
        return self.dense_skip_norm(hidden, x, f"{p}.output.dense", f"{p}.output.LayerNorm")

    def encoder(self) -> str:
        x, lengths = self.embeddings_and_lengths()
        for index in range(self.cfg.num_layers):
            x = self.fused_layer(x, lengths, index)
        return x
