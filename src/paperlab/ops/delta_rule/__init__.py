"""The gated delta rule (KLA / Gated DeltaNet core): reference loop, chunkwise WY/UT form, decode step."""

from paperlab.ops.delta_rule.chunk import delta_rule_chunk
from paperlab.ops.delta_rule.reference import delta_rule_recurrent, kla_beta
from paperlab.ops.delta_rule.step import delta_rule_step

__all__ = ["delta_rule_chunk", "delta_rule_recurrent", "delta_rule_step", "kla_beta"]
