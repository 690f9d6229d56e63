"""Transformer of the IDM: an encoder over both frames' tokens, a decoder over learned queries."""

from __future__ import annotations

import torch
from torch import nn


class IDMTransformer(nn.Module):
    """Pre-norm encoder-decoder (torch's layers) that returns every decoder layer's output.

    Args:
        d_model / n_heads / enc_layers / dec_layers / ffn_dim / dropout: sizes.
    """

    def __init__(self, d_model: int, n_heads: int, enc_layers: int, dec_layers: int, ffn_dim: int,
                 dropout: float) -> None:
        super().__init__()
        enc = nn.TransformerEncoderLayer(d_model, n_heads, ffn_dim, dropout, batch_first=True, norm_first=True)
        dec = nn.TransformerDecoderLayer(d_model, n_heads, ffn_dim, dropout, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(enc, enc_layers, norm=nn.LayerNorm(d_model),
                                             enable_nested_tensor=False)
        self.decoder_layers = nn.ModuleList(
            [nn.TransformerDecoderLayer(d_model, n_heads, ffn_dim, dropout, batch_first=True, norm_first=True)
             for _ in range(dec_layers)]) if dec_layers else nn.ModuleList()
        del dec
        self.decoder_norm = nn.LayerNorm(d_model)

    def forward(self, tokens: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
        """Encode ``tokens`` (B, N, d) and decode ``queries`` (Q, d) against them.

        Returns:
            (L, B, Q, d): the normalised output of each of the L decoder layers (last = final).
        """
        memory = self.encoder(tokens)
        x = queries.unsqueeze(0).expand(tokens.shape[0], -1, -1)
        outs = []
        for layer in self.decoder_layers:
            x = layer(x, memory)
            outs.append(self.decoder_norm(x))
        return torch.stack(outs)
