"""save_pretrained / from_pretrained (safetensors) and the conversions LM <-> PaperlabForCausalLM keep the logits."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")
pytest.importorskip("safetensors")

import torch  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

from paperlab.checkpoint import save_checkpoint  # noqa: E402
from paperlab.hf import PaperlabForCausalLM, from_lm, from_run, load_lm, to_lm  # noqa: E402
from tests.hf.conftest import tiny_lm  # noqa: E402


def _logits(model, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        out = model(ids)
    return out[0] if isinstance(out, tuple) else out.logits


@pytest.mark.parametrize(("mixer", "tied"), [("kla", True), ("gdn", False), ("attention", True)])
def test_save_pretrained_round_trip_keeps_the_logits(tmp_path, ids, mixer: str, tied: bool) -> None:
    lm = tiny_lm(mixer, tie_embeddings=tied)
    model = from_lm(lm)
    model.save_pretrained(tmp_path)
    stored = load_file(tmp_path / "model.safetensors")
    assert ("model.lm_head.weight" in stored) is not tied  # a tied matrix is stored once
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "paperlab"
    for loaded in (PaperlabForCausalLM.from_pretrained(tmp_path), AutoModelForCausalLM.from_pretrained(tmp_path)):
        assert isinstance(loaded, PaperlabForCausalLM)
        assert torch.equal(_logits(loaded.eval(), ids), _logits(lm, ids))
        head, emb = loaded.model.lm_head.weight, loaded.model.embedding.weight
        assert (head is emb) is tied and (tied or not torch.equal(head, emb))
    again = load_lm(tmp_path)  # safetensors alone, no transformers
    assert again.config == lm.config and torch.equal(_logits(again, ids), _logits(lm, ids))
    assert (again.lm_head.weight is again.embedding.weight) is tied


def test_lm_conversions_copy_or_share_the_weights(ids) -> None:
    lm = tiny_lm("kla")
    copied, shared = from_lm(lm), from_lm(lm, copy=False)
    assert shared.model is lm and copied.model is not lm
    assert torch.equal(_logits(copied, ids), _logits(lm, ids))
    back = to_lm(copied)
    assert back.config == lm.config and torch.equal(_logits(back, ids), _logits(lm, ids))
    assert to_lm(shared, copy=False) is lm
    with torch.no_grad():
        copied.model.final_norm.weight.mul_(2.0)
    assert torch.equal(_logits(back, ids), _logits(lm, ids))  # the copies are independent
    f64 = from_lm(tiny_lm("gdn", dtype=torch.float64))
    assert f64.dtype == torch.float64
    with pytest.raises(TypeError, match="paperlab LM"):
        from_lm(copied)


def test_from_run_reads_paperlab_checkpoints(tmp_path, ids) -> None:
    lm = tiny_lm("gdn")
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"model": lm.config.to_dict()}))
    save_checkpoint(run / "checkpoint.pt", model=lm, step=3)
    assert torch.equal(_logits(from_run(run), ids), _logits(lm, ids))  # a `paperlab lm train` folder
    bare = from_run(run / "checkpoint.pt", config=lm.config)  # one checkpoint file and its LMConfig
    assert torch.equal(_logits(bare, ids), _logits(lm, ids))
    with pytest.raises(ValueError, match="needs its LMConfig"):
        from_run(run / "checkpoint.pt")


def test_load_lm_refuses_a_folder_that_does_not_match(tmp_path) -> None:
    model = from_lm(tiny_lm("kla", tie_embeddings=False))
    model.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config["n_layers"] = 1
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="unexpected"):
        load_lm(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({**config, "model_type": "llama"}))
    with pytest.raises(ValueError, match="model_type"):
        load_lm(tmp_path)
