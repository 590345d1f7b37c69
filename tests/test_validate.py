"""The shared input checks: each names the argument, the value and the rule."""

from __future__ import annotations

import numpy as np
import pytest

from paperlab._validate import check_bool


def test_check_bool_takes_python_and_numpy_bools_and_refuses_look_alikes():
    assert check_bool("flag", True) is True and check_bool("flag", np.bool_(False)) is False
    for value in (1, 0, "yes", None, 1.0):
        with pytest.raises(TypeError, match=rf"^flag must be a bool, got {type(value).__name__} {value!r}$"):
            check_bool("flag", value)


def test_configs_refuse_non_bool_flags_with_a_type_error():
    from paperlab.experiments.latent_cot import LatentCoTConfig
    from paperlab.models.lm import LMConfig
    from paperlab.reasoning.train import ReasonerConfig

    builds = {"teacher_thoughts": lambda v: ReasonerConfig(teacher_thoughts=v),
              "tie_embeddings": lambda v: LMConfig(vocab_size=8, d_model=8, n_layers=1, n_heads=1, tie_embeddings=v),
              "latent_from_cot": lambda v: LatentCoTConfig(latent_from_cot=v)}
    for name, build in builds.items():
        with pytest.raises(TypeError, match=f"^{name} must be a bool, got int 1$"):
            build(1)
