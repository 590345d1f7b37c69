"""Pure tensor ops; each fast path has a slow reference sibling it is tested against."""

from paperlab.ops.delta_rule import delta_rule_chunk, delta_rule_recurrent, delta_rule_step, kla_beta

__all__ = ["delta_rule_chunk", "delta_rule_recurrent", "delta_rule_step", "kla_beta"]
