"""``PaperlabConfig``: a Hugging Face config (model_type ``"paperlab"``) holding the fields of an ``LMConfig``.

The LMConfig fields keep their names (``d_model``, ``n_layers``, ``n_heads``, ``mixer``, ...); the usual
Hugging Face names are aliases (``hidden_size``, ``num_hidden_layers``, ``num_attention_heads``,
``max_position_embeddings``), and ``tie_embeddings`` is stored as Hugging Face's ``tie_word_embeddings``.
Needs the extra: ``pip install 'paperlab[hf]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from paperlab.hf._compat import AVAILABLE, missing_base
from paperlab.models.lm import LMConfig

if TYPE_CHECKING or AVAILABLE:
    from transformers import PreTrainedConfig
else:
    PreTrainedConfig = missing_base("PreTrainedConfig")

__all__ = ["PaperlabConfig"]


class PaperlabConfig(PreTrainedConfig):
    """Architecture of a ``PaperlabForCausalLM``: the fields of ``paperlab.models.LMConfig``.

    Args (keywords, defaults as in ``LMConfig`` where it has one):
        vocab_size, d_model, n_layers, n_heads: the sizes (``LMConfig`` requires them; small defaults here so
            that ``PaperlabConfig()`` builds, as Hugging Face expects of a config class).
        mixer: a key of ``paperlab.layers.MIXERS`` ("kla", "gdn", "attention", ...).
        mlp_ratio, norm_eps, max_seq_len, init_std, mixer_options: as in ``LMConfig``.
        tie_word_embeddings: ``LMConfig.tie_embeddings`` (``tie_embeddings=`` is accepted too).
        use_cache, pad_token_id, bos_token_id, eos_token_id: the usual Hugging Face fields.

    The fields are checked by building the ``LMConfig`` (``lm_config()``), so a bad value raises the same
    ``ValueError`` / ``TypeError`` as ``LMConfig`` does.
    """

    model_type: ClassVar[str] = "paperlab"
    attribute_map: ClassVar[dict[str, str]] = {
        "hidden_size": "d_model",
        "num_hidden_layers": "n_layers",
        "num_attention_heads": "n_heads",
        "max_position_embeddings": "max_seq_len",
        "tie_embeddings": "tie_word_embeddings",
    }

    vocab_size: int = 256
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 2
    mixer: str = "kla"
    mlp_ratio: float = 4.0
    tie_word_embeddings: bool = True
    norm_eps: float = 1e-6
    max_seq_len: int = 2048
    init_std: float = 0.02
    mixer_options: dict[str, Any] | None = None
    use_cache: bool = True
    pad_token_id: int | None = None
    bos_token_id: int | None = None
    eos_token_id: int | list[int] | None = None

    def __post_init__(self, **kwargs: Any) -> None:
        if "tie_embeddings" in kwargs:
            self.tie_word_embeddings = kwargs.pop("tie_embeddings")
        self.mixer_options = dict(self.mixer_options or {})
        super().__post_init__(**kwargs)
        self.lm_config()  # validate every field now, with LMConfig's messages

    def lm_config(self) -> LMConfig:
        """The ``LMConfig`` these fields describe."""
        return LMConfig(vocab_size=self.vocab_size, d_model=self.d_model, n_layers=self.n_layers,
                        n_heads=self.n_heads, mixer=self.mixer, mlp_ratio=self.mlp_ratio,
                        tie_embeddings=self.tie_word_embeddings, norm_eps=self.norm_eps,
                        max_seq_len=self.max_seq_len, init_std=self.init_std,
                        mixer_options=dict(self.mixer_options or {}))

    @classmethod
    def from_lm_config(cls, config: LMConfig, **kwargs: Any) -> PaperlabConfig:
        """The config of ``config`` (an ``LMConfig``); ``kwargs`` set Hugging Face fields such as ``eos_token_id``."""
        if not isinstance(config, LMConfig):
            raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
        fields = config.to_dict()
        fields["tie_word_embeddings"] = fields.pop("tie_embeddings")
        return cls(**fields, **kwargs)
