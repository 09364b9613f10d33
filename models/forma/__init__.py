"""Forma: the paper's tuple-set transformer (docs/forma.md).

Modules: tokens (embeddings, sinusoidal encoding), batching (Arrow tuple windows ->
padded tensors, the ex-ante future grid), masking (identity-aware grouped masking,
pinned-future masking), network (the encoder and its two heads), losses (beta-NLL),
train (curriculum, checkpoints, DDP), predict (forecasts and mixtures), scenario
(conditioning on pinned future values), presets (`paper`, `small`).
"""

from proforma.models.forma.presets import PRESETS, FormaConfig, preset

__all__ = ["PRESETS", "FormaConfig", "preset"]
