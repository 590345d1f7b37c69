"""``paperlab lm train``: a thin argparse -> LMRunConfig -> train_run; defaults come from the dataclasses only."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
import torch

from paperlab import cli
from paperlab.cli import lm as lm_cli
from paperlab.models.lm_train import LMRunConfig, LMTrainConfig, train_run


def _train_parser():
    parser = cli.build_parser()
    args = parser.parse_args(["lm", "train", "--out", "unused"])
    return args._parser, args


def test_options_cover_the_configs_and_copy_no_default() -> None:
    parser, args = _train_parser()
    assert lm_cli._run_config(args) == LMRunConfig()  # nothing given: exactly the dataclass defaults
    for name in lm_cli._TRAIN_OPTIONS:  # a second copy of a default (even an equal one) fails here
        assert isinstance(parser.get_default(name), lm_cli._FromConfig), name
    exposed = set(lm_cli._TRAIN_OPTIONS)
    run_fields = {f.name for f in dataclasses.fields(LMRunConfig)} - {"train"}
    train_fields = {f.name for f in dataclasses.fields(LMTrainConfig)}
    assert run_fields <= exposed and train_fields - exposed == {"min_lr_ratio", "betas", "grad_clip"}
    for name, (level, kind, _help) in lm_cli._TRAIN_OPTIONS.items():
        default = getattr(LMRunConfig().train if level == "train" else LMRunConfig(), name)
        assert type(default) is kind, name


def test_given_options_reach_the_right_config() -> None:
    args = cli.build_parser().parse_args(["lm", "train", "--out", "x", "--steps", "7", "--d-model", "32",
                                          "--optimizer", "nora", "--checkpoint-every", "0"])
    cfg = lm_cli._run_config(args)
    assert cfg == LMRunConfig(d_model=32, train=LMTrainConfig(steps=7, optimizer="nora", checkpoint_every=0))
    bad = cli.build_parser().parse_args(["lm", "train", "--out", "x", "--tokenizer", "word"])
    with pytest.raises(ValueError, match="tokenizer='word'.*byte"):
        lm_cli._run_config(bad)


def test_help_shows_every_default(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # "(default: X)" never wraps
    for command in ("train", "eval", "generate"):
        with pytest.raises(SystemExit):
            cli.main(["lm", command, "--help"])
        options = capsys.readouterr().out.split("options:")[1]
        # one entry per option: its line plus the indented lines its help wraps onto
        lines = {m.group(1): " ".join(m.group(2).split())
                 for m in re.finditer(r"^  (--[a-z-]+)(.*(?:\n {4,}.*)*)", options, flags=re.MULTILINE)}
        if command == "train":
            run = LMRunConfig()
            for name, (level, _kind, _help) in lm_cli._TRAIN_OPTIONS.items():
                value = getattr(run.train if level == "train" else run, name)
                assert lines["--" + name.replace("_", "-")].endswith(f"(default: {value})"), name
        silent = {"--help", "--out", "--resume", "--overwrite", "--no-progress", "--prompt"}  # required, flags
        for flag, line in lines.items():
            assert flag in silent or "default" in line, (command, flag)


TINY = ["--data", "pydoc", "--d-model", "16", "--n-layers", "1", "--mlp-ratio", "2.0", "--steps", "3",
        "--batch-size", "4", "--seq-len", "16", "--warmup", "1", "--eval-every", "3", "--eval-tokens", "64",
        "--seed", "2"]


def test_cli_equals_the_python_recipe(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    config = LMRunConfig(data="pydoc", d_model=16, n_layers=1, mlp_ratio=2.0,
                         train=LMTrainConfig(steps=3, batch_size=4, seq_len=16, warmup=1, eval_every=3,
                                             eval_tokens=64, seed=2))
    run = train_run(config, out_dir=tmp_path / "py", progress=False)
    assert cli.main(["lm", "train", *TINY, "--no-progress", "--out", str(tmp_path / "cli")]) == 0
    assert "val ppl at init" in capsys.readouterr().out
    by_cli = json.loads((tmp_path / "cli" / "history.json").read_text())
    assert by_cli["history"][-1]["loss"] == run.result.history[-1]["loss"]  # same seed, same final loss
    assert by_cli["evals"] == run.result.evals
    weights = torch.load(tmp_path / "cli" / "checkpoint.pt", weights_only=True)["model"]
    for name, value in run.model.state_dict().items():
        assert torch.equal(weights[name], value), name
    saved = json.loads((tmp_path / "cli" / "config.json").read_text())
    assert LMTrainConfig(**saved["train"]) == config.train and saved["data"] == "pydoc"


def test_overwrite_starts_a_run_folder_over(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    out = ["--no-progress", "--out", str(tmp_path)]
    assert cli.main(["lm", "train", *TINY, *out]) == 0
    capsys.readouterr()
    assert cli.main(["lm", "train", *TINY, *out]) == 2  # a rerun neither resumes nor destroys the run
    assert "--resume" in capsys.readouterr().err
    with pytest.raises(FileExistsError, match="--overwrite"):
        cli.main(["--debug", "lm", "train", *TINY, *out])
    assert cli.main(["lm", "train", *TINY, "--lr", "0.5", "--resume", *out]) == 2
    assert re.search(r"lr.*0\.001.*0\.5", capsys.readouterr().err)
    assert cli.main(["lm", "train", *TINY, "--seed", "4", "--overwrite", *out]) == 0
    assert json.loads((tmp_path / "config.json").read_text())["train"]["seed"] == 4
    capsys.readouterr()
