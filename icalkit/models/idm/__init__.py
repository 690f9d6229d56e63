"""Inverse dynamics model (ICAL appendix S4.3): a DETR-style network that reads a pair of frames
(o_t, o_{t+1}) and predicts the primitive action taken between them and the class of its target.

One file per part, as in DETR: :mod:`.configuration_idm` (the config and vocabularies),
:mod:`.backbone` (timm CNN), :mod:`.position_encoding` (fixed sinusoidal 2-D encodings),
:mod:`.transformer` (encoder/decoder) and :mod:`.modeling_idm` (model, loss, save/load, ``build``).
"""

from icalkit.models.idm.configuration_idm import IDMConfig
from icalkit.models.idm.modeling_idm import IDMCriterion, InverseDynamicsModel, build

__all__ = ["IDMConfig", "IDMCriterion", "InverseDynamicsModel", "build"]
