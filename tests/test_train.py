"""The one training loop: exact resume, early stopping, checkpoint safety."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from torch import nn

from paperlab.checkpoint import CheckpointError, load_checkpoint, restore_checkpoint, save_checkpoint
from paperlab.train import EarlyStopping, train, warmup_cosine


def _setup(seed: int = 0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Dropout(0.1), nn.Linear(16, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = warmup_cosine(opt, steps=20, warmup=3)
    return model, opt, sched


def _batch(step: int):
    g = torch.Generator().manual_seed(step)
    x = torch.randn(8, 4, generator=g)
    return x, x.sum(dim=1, keepdim=True).sin()


def _loss(model: nn.Module, batch) -> torch.Tensor:
    x, y = batch
    return nn.functional.mse_loss(model(x), y)


def test_resume_is_bitwise_identical(tmp_path: Path) -> None:
    model, opt, sched = _setup()
    full = train(model, _loss, _batch, opt, steps=20, scheduler=sched, grad_clip=1.0, progress=False)
    reference = {k: v.clone() for k, v in model.state_dict().items()}

    model, opt, sched = _setup()
    train(model, _loss, _batch, opt, steps=12, scheduler=sched, grad_clip=1.0, progress=False,
          checkpoint_dir=tmp_path, checkpoint_every=4)
    torch.manual_seed(1234)  # the resumed run must restore RNG state (dropout) from the checkpoint
    model, opt, sched = _setup(seed=99)
    resumed = train(model, _loss, _batch, opt, steps=20, scheduler=sched, grad_clip=1.0, progress=False,
                    checkpoint_dir=tmp_path, resume=True)
    for k, v in model.state_dict().items():
        assert torch.equal(v, reference[k]), k
    assert [h["loss"] for h in resumed.history] == [h["loss"] for h in full.history]


def test_iterable_batches_resume_skips_consumed(tmp_path: Path) -> None:
    model, opt, _ = _setup()
    train(model, _loss, (_batch(i) for i in range(10)), opt, steps=10, progress=False)
    reference = {k: v.clone() for k, v in model.state_dict().items()}
    model, opt, _ = _setup()
    train(model, _loss, (_batch(i) for i in range(10)), opt, steps=6, progress=False, checkpoint_dir=tmp_path)
    model, opt, _ = _setup(seed=5)
    train(model, _loss, (_batch(i) for i in range(10)), opt, steps=10, progress=False, checkpoint_dir=tmp_path,
          resume=True)
    assert all(torch.equal(v, reference[k]) for k, v in model.state_dict().items())


def test_eval_and_early_stopping_restores_best() -> None:
    model, opt, _ = _setup()
    scores = iter([3.0, 1.0, 2.0, 2.5, 2.7, 9.0])
    snapshots = []

    def eval_fn(m: nn.Module) -> dict[str, float]:
        snapshots.append(m[0].weight.detach().clone())
        return {"val": next(scores)}

    result = train(model, _loss, _batch, opt, steps=100, eval_fn=eval_fn, eval_every=2, progress=False,
                   early_stopping=EarlyStopping(metric="val", patience=3))
    # best at step 4; three evaluations without improvement (steps 6, 8, 10) stop the run
    assert result.stopped_early and result.steps_done == 10
    assert [e["val"] for e in result.evals] == [3.0, 1.0, 2.0, 2.5, 2.7]
    assert result.best == {"val": 1.0}
    assert torch.equal(model[0].weight, snapshots[1])


@pytest.mark.parametrize(("mode", "scores", "target", "stop_at"), [
    ("max", [0.5, 0.9, 0.97, 0.99], 0.96, 6), ("min", [3.0, 1.0, 0.2, 0.1], 0.5, 6)])
def test_stopping_threshold_stops_once_reached(mode: str, scores: list[float], target: float, stop_at: int) -> None:
    model, opt, _ = _setup()
    it = iter(scores)
    result = train(model, _loss, _batch, opt, steps=100, eval_fn=lambda m: {"val": next(it)}, eval_every=2,
                   progress=False, early_stopping=EarlyStopping(metric="val", mode=mode, patience=50,
                                                                stopping_threshold=target))
    assert result.stopped_early and result.steps_done == stop_at and result.best == {"val": scores[2]}


def test_a_nan_metric_is_never_the_best() -> None:
    model, opt, _ = _setup()
    scores = iter([float("nan"), 2.0, float("nan"), 1.0, float("nan"), float("nan")])
    result = train(model, _loss, _batch, opt, steps=12, eval_fn=lambda m: {"val": next(scores)}, eval_every=2,
                   progress=False, early_stopping=EarlyStopping(metric="val", patience=2))
    assert result.stopped_early and result.steps_done == 12 and result.best == {"val": 1.0}
    model, opt, _ = _setup()
    result = train(model, _loss, _batch, opt, steps=10, eval_fn=lambda m: {"val": float("nan")}, eval_every=1,
                   progress=False, early_stopping=EarlyStopping(metric="val", patience=3))
    assert result.stopped_early and result.steps_done == 3 and result.best is None


def test_bad_arguments_raise() -> None:
    model, opt, _ = _setup()
    with pytest.raises(ValueError, match="grad_clip"):
        train(model, _loss, _batch, opt, steps=1, grad_clip=-1.0)
    with pytest.raises(ValueError, match="early_stopping needs an eval_fn"):
        train(model, _loss, _batch, opt, steps=1, early_stopping=EarlyStopping(metric="val"))
    with pytest.raises(ValueError, match="patience"):
        EarlyStopping(metric="val", patience=0)
    with pytest.raises(ValueError, match="stopping_threshold must be finite"):
        EarlyStopping(metric="val", stopping_threshold=float("nan"))
    with pytest.raises(FloatingPointError, match="loss became"):
        train(model, lambda m, b: torch.tensor(float("nan"), requires_grad=True), _batch, opt, steps=1,
              progress=False)


def test_corrupt_and_mismatched_checkpoints(tmp_path: Path) -> None:
    model, opt, _ = _setup()
    path = save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt, step=3)
    assert load_checkpoint(path)["step"] == 3
    bad = tmp_path / "bad.pt"
    bad.write_bytes(path.read_bytes()[:100])
    with pytest.raises(CheckpointError, match="bad.pt.*corrupt"):
        load_checkpoint(bad)
    other = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.1), nn.Linear(8, 1))
    with pytest.raises(CheckpointError, match=r"c\.pt does not match the model.*shape mismatch.*0\.weight"):
        restore_checkpoint(path, model=other)
    with pytest.raises(CheckpointError, match="missing keys"):
        restore_checkpoint(path, model=nn.Sequential(nn.Linear(4, 16), nn.Linear(16, 1), nn.Linear(1, 1)))


_KILL_SCRIPT = textwrap.dedent("""
    import sys, time, torch
    from torch import nn
    import paperlab.checkpoint as ck
    model = nn.Linear(64, 64)
    ck.save_checkpoint(sys.argv[1], model=model, step=1)
    print("first", flush=True)
    real = ck.atomic_write_bytes
    def slow(path, data):
        import paperlab.io as pio
        with pio.atomic_open(path, "wb") as f:
            f.write(data[: len(data) // 2]); f.flush()
            print("writing", flush=True)
            time.sleep(60)
            f.write(data[len(data) // 2:])
    ck.atomic_write_bytes = slow
    with torch.no_grad():
        model.weight.add_(1.0)
    ck.save_checkpoint(sys.argv[1], model=model, step=2)
""")


def test_kill_during_save_keeps_previous_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.pt"
    with subprocess.Popen([sys.executable, "-c", _KILL_SCRIPT, str(path)], stdout=subprocess.PIPE, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"}) as proc:
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "first"
            assert proc.stdout.readline().strip() == "writing"
            time.sleep(0.1)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    assert any(p.name.endswith(".tmp") for p in tmp_path.iterdir())  # the save really was cut off mid-write
    payload = load_checkpoint(path)
    assert payload["step"] == 1
    restore_checkpoint(path, model=nn.Linear(64, 64))


def test_atomic_write_uses_umask_permissions(tmp_path: Path) -> None:
    from paperlab.io import atomic_write_text

    old = os.umask(0o022)
    try:
        path = atomic_write_text(tmp_path / "x.txt", "hello")
    finally:
        os.umask(old)
    assert path.read_text() == "hello" and (path.stat().st_mode & 0o777) == 0o644


def test_flipped_bytes_in_a_checkpoint_tensor_are_detected(tmp_path: Path) -> None:
    model = nn.Linear(8, 8)
    with torch.no_grad():
        model.weight.copy_(torch.arange(64.0).view(8, 8) / 7)
    path = save_checkpoint(tmp_path / "c.pt", model=model, step=1)
    raw = bytearray(path.read_bytes())
    at = raw.find(model.weight.detach().numpy().tobytes())
    assert at > 0
    raw[at + 100 : at + 104] = bytes(b ^ 0xFF for b in raw[at + 100 : at + 104])  # 4 bytes of one weight
    bad = tmp_path / "flipped.pt"
    bad.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match=r"flipped\.pt.*checksum"):
        load_checkpoint(bad)
    with pytest.raises(CheckpointError, match="checksum"):
        restore_checkpoint(bad, model=nn.Linear(8, 8))
    assert load_checkpoint(path)["step"] == 1


def _scripted_early_stopping_run(tmp_path: Path, *, crash_at: int | None = None, resume: bool = False):
    """A run whose validation score is scripted by step: best at step 4, so patience 3 stops it at step 10."""
    scores = {2: 3.0, 4: 1.0, 6: 2.0, 8: 2.5, 10: 2.7}
    now = {"step": 0}

    def on_step(step: int, _model: nn.Module) -> None:
        if step == crash_at:
            raise KeyboardInterrupt
        now["step"] = step

    model, opt, sched = _setup(seed=7 if resume else 0)  # resumed: the weights must come from the checkpoint
    result = train(model, _loss, _batch, opt, steps=20, scheduler=sched, eval_fn=lambda m: {"val": scores.get(
        now["step"], 5.0)}, eval_every=2, early_stopping=EarlyStopping(metric="val", patience=3),
        checkpoint_dir=tmp_path, checkpoint_every=2, resume=resume, progress=False, on_step=on_step)
    return model, result


def test_early_stopping_resumes_exactly(tmp_path: Path) -> None:
    model, full = _scripted_early_stopping_run(tmp_path / "straight")
    assert full.stopped_early and full.steps_done == 10 and full.best == {"val": 1.0}
    with pytest.raises(KeyboardInterrupt):
        _scripted_early_stopping_run(tmp_path / "cut", crash_at=7)  # after the step-6 checkpoint
    again, resumed = _scripted_early_stopping_run(tmp_path / "cut", resume=True)
    assert (resumed.steps_done, resumed.stopped_early, resumed.best) == (10, True, {"val": 1.0})
    assert resumed.evals == full.evals and resumed.history == full.history
    for name, value in model.state_dict().items():  # the best (step-4) weights, restored
        assert torch.equal(again.state_dict()[name], value), name
    # resuming the finished run trains no further and restores the same best weights
    done_model, done = _scripted_early_stopping_run(tmp_path / "cut", resume=True)
    assert (done.steps_done, done.stopped_early, done.best, done.evals) == (10, True, {"val": 1.0}, full.evals)
    assert all(torch.equal(done_model.state_dict()[n], v) for n, v in model.state_dict().items())


def test_atomic_write_json_writes_non_finite_floats_as_null(tmp_path: Path) -> None:
    import json

    import numpy as np

    from paperlab.io import atomic_write_json

    def no_constants(name: str) -> None:
        raise AssertionError(f"invalid JSON literal {name}")

    obj = {"a": float("nan"), "b": [1.5, float("inf"), (-float("inf"),)], "c": np.float64("nan"),
           "d": np.array([1.0, np.nan]), "e": {"f": 2}}
    text = atomic_write_json(tmp_path / "x.json", obj).read_text()
    assert json.loads(text, parse_constant=no_constants) == {"a": None, "b": [1.5, None, [None]], "c": None,
                                                             "d": [1.0, None], "e": {"f": 2}}


def test_stale_temp_files_of_a_target_are_removed_by_the_next_write(tmp_path: Path) -> None:
    from paperlab.io import atomic_write_text

    dead = 2**22 + 12345  # above Linux's largest pid: no such process
    crashed = tmp_path / f".x.txt.{dead}.abc123.tmp"  # left by a killed writer
    mine = tmp_path / f".x.txt.{os.getpid()}.def456.tmp"  # a write in flight in this process (another thread)
    other = tmp_path / f".y.txt.{dead}.abc123.tmp"  # another target's
    old, recent = tmp_path / ".x.txt.q1w2e3.tmp", tmp_path / ".x.txt.r4t5y6.tmp"  # names without a pid
    for f in (crashed, mine, other, old, recent):
        f.write_text("partial")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    atomic_write_text(tmp_path / "x.txt", "done")
    assert (tmp_path / "x.txt").read_text() == "done"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (mine, other, recent)) + ["x.txt"]
