"""Multi-process training: 2 CPU processes under torchrun (gloo) equal one process with the same global batch.

Also drives the ``paperlab lm`` CLI end to end (train, eval, generate) on the built-in corpus.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from paperlab.cli import main
from paperlab.distributed import DDP, rank_world, unwrap, wrap_ddp

ARGS = ["--mixer", "kla", "--data", "pydoc", "--steps", "3", "--eval-every", "3", "--batch-size", "4",
        "--seq-len", "16", "--d-model", "16", "--n-layers", "1", "--warmup", "1", "--eval-tokens", "64",
        "--no-progress", "--threads", "1"]



@pytest.fixture(scope="module")
def single_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("single")
    assert main(["lm", "train", *ARGS, "--out", str(out)]) == 0
    return out


def _weights(folder) -> dict[str, torch.Tensor]:
    return torch.load(folder / "checkpoint.pt", weights_only=True)["model"]


def test_two_processes_equal_one_process(single_run, tmp_path) -> None:
    out = tmp_path / "ddp"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           "-m", "paperlab.cli", "lm", "train", *ARGS, "--out", str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((out / "config.json").read_text())["world_size"] == 2
    ddp, single = _weights(out), _weights(single_run)
    assert len(torch.load(out / "checkpoint.pt", weights_only=True)["extra"]["history"]) == 3
    assert ddp.keys() == single.keys()  # no "module." prefix: DDP checkpoints load into a plain model
    for name in single:
        torch.testing.assert_close(ddp[name], single[name], atol=1e-5, rtol=1e-5, msg=name)


def test_single_process_helpers_are_no_ops() -> None:
    model = torch.nn.Linear(2, 2)
    assert rank_world() == (0, 1) and wrap_ddp(model) is model and unwrap(model) is model
    assert issubclass(DDP, torch.nn.parallel.DistributedDataParallel)


def test_cli_eval_and_generate(single_run, capsys) -> None:
    capsys.readouterr()
    assert main(["lm", "eval", str(single_run), "--lengths", "1", "2", "--max-tokens", "64",
                 "--no-progress"]) == 0
    table = capsys.readouterr().out
    assert "factor" in table and "bits_per_token" in table
    rows = json.loads((single_run / "eval.json").read_text())["rows"]
    assert [r["context"] for r in rows] == [16, 32] and rows[0]["tokens"] == rows[1]["tokens"] == 64
    assert main(["lm", "generate", str(single_run), "--prompt", "The ", "--max-new-tokens", "5",
                 "--temperature", "0", "--no-progress"]) == 0
    assert capsys.readouterr().out.startswith("The ")
    assert (single_run / "loss.png").is_file() and (single_run / "tokenizer.json").is_file()


def test_cli_resume_rejects_a_different_model(single_run, capsys) -> None:
    # the CLI prints one 'paperlab: error:' line and exits 2 (argparse's code); the library raises ValueError
    assert main(["lm", "train", *ARGS, "--d-model", "32", "--resume", "--out", str(single_run)]) == 2
    assert "different model" in capsys.readouterr().err
