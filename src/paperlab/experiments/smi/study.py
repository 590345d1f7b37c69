"""The SMI unlearning-audit study behind ``paperlab reproduce smi`` (arXiv 2602.01150; experiments are ours).

Per block (dataset + architecture) and seed: class-balanced splits, models retrained without a known share
``rho`` of the forget set (ground truth), approximate unlearning of the ``rho = 0`` model, shadow models
for LiRA/RMIA, and every auditor on every model. ``run`` turns the rows into tables, figures and verdicts.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from paperlab.audit.models import TrainConfig, accuracy, fit_classifier, make_model
from paperlab.audit.registry import get_auditor
from paperlab.audit.unlearning import UnlearnConfig, unlearn
from paperlab.data import vision
from paperlab.data.registry import DatasetNotFoundError, path, present_files
from paperlab.data.vision import balanced_split
from paperlab.experiments.cache import cache_key, load_or_compute
from paperlab.experiments.smi.suite import AuditSets, Shadows, run_auditors, train_shadows
from paperlab.experiments.smi.summary import summarize

__all__ = ["BlockSplits", "available_blocks", "block_splits", "load_block", "run", "run_block", "split_sizes",
           "with_available_data"]


def load_block(dataset: str, *, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x [n, ...] float32 in [0, 1] or standardised, y [n] int64)`` for mnist | digits | synthetic."""
    if dataset == "mnist":
        images, labels = vision.load_mnist()
        return torch.as_tensor(images, dtype=torch.float32).unsqueeze(1) / 255.0, torch.as_tensor(labels)
    if dataset == "digits":
        images, labels = vision.load_digits()
        return torch.as_tensor(images).unsqueeze(1), torch.as_tensor(labels)
    if dataset == "synthetic":
        x, y = vision.make_synthetic(10000, dim=32, label_noise=0.1, seed=1000 + seed)
        return torch.as_tensor(x), torch.as_tensor(y)
    raise ValueError(f"dataset={dataset!r} is not valid; choose one of ['digits', 'mnist', 'synthetic']")


def split_sizes(config, n_avail: int) -> dict[str, int]:
    """The split sizes of ``config`` (train, forget, nonmember, test, population, member_ref, shadow_subset),
    shrunk proportionally when the dataset holds fewer than their sum."""
    want = {"train": config.n_train, "nonmember": config.n_nonmember, "test": config.n_test,
            "population": config.n_population}
    scale = min(1.0, n_avail / sum(want.values()))
    sizes = {k: int(v * scale) for k, v in want.items()}
    sizes["forget"] = max(10, int(config.n_forget * scale))
    sizes["member_ref"] = min(int(config.n_member_ref * scale), sizes["train"] - sizes["forget"])
    sizes["shadow_subset"] = min(int(config.shadow_subset * scale), sizes["population"])
    return sizes


@dataclasses.dataclass(frozen=True)
class BlockSplits:
    """One block's data for one seed: inputs (flattened for an MLP), labels, split sizes and the global index
    arrays of the class-balanced splits (the forget set is the first ``sizes["forget"]`` training points)."""

    x: torch.Tensor
    y: torch.Tensor
    arch: str
    sizes: dict[str, int]
    train: np.ndarray
    nonmember: np.ndarray
    test: np.ndarray
    population: np.ndarray
    forget: np.ndarray
    retain: np.ndarray
    sets: AuditSets


def block_splits(config, block: str, seed: int) -> BlockSplits:
    """Load ``block`` (``"<dataset>-<arch>"``) and split it for ``seed`` with the sizes of ``config``."""
    dataset, arch = block.split("-")
    x, y = load_block(dataset, seed=seed)
    if arch == "mlp" and x.dim() > 2:
        x = x.flatten(1)
    sz = split_sizes(config, len(y))
    train, nonmember, test, population = balanced_split(
        y.numpy(), [sz["train"], sz["nonmember"], sz["test"], sz["population"]], seed=seed)
    forget, retain = train[:sz["forget"]], train[sz["forget"]:]
    sets = AuditSets(member=retain[:sz["member_ref"]], nonmember=nonmember, forget=forget)
    return BlockSplits(x=x, y=y, arch=arch, sizes=sz, train=train, nonmember=nonmember, test=test,
                       population=population, forget=forget, retain=retain, sets=sets)


def run_block(config, block: str, seed: int) -> list[dict[str, Any]]:
    """All rows of one block and seed: ground-truth audits (``true_rate`` = rho) and approximate methods."""
    b = block_splits(config, block, seed)
    x, y, arch, sz, sets = b.x, b.y, b.arch, b.sizes, b.sets
    train, nonmember, test, population = b.train, b.nonmember, b.test, b.population
    forget, retain = b.forget, b.retain
    tcfg = TrainConfig(epochs=config.epochs)

    def fresh(i: int = 0) -> torch.nn.Module:
        return make_model(arch, in_shape=tuple(x.shape[1:]), seed=seed * 7919 + i)

    # untimed warm-up (lazy kernel initialisation), so the timed shadow training does not pay it
    fit_classifier(fresh(999), x[train[:256]], y[train[:256]], config=TrainConfig(epochs=1), seed=seed)
    offline = train_shadows(x, y, pool=population, k=config.k_offline, subset=sz["shadow_subset"],
                            make_model=lambda i: fresh(100 + i), config=tcfg, seed=seed)
    online = None
    if config.k_online and any(get_auditor(a).shadows == "online" for a in config.auditors):
        pool = np.concatenate([population, forget, sets.member, nonmember])
        online = train_shadows(x, y, pool=pool, k=config.k_online, subset=len(pool) // 2,
                               make_model=lambda i: fresh(200 + i), config=tcfg, seed=seed + 10_000)
    rows: list[dict[str, Any]] = []
    rng = np.random.default_rng([seed, 5])
    models = {}
    for rho in config.rhos:
        dropped = rng.permutation(forget)[:round(rho * len(forget))]
        idx = np.setdiff1d(train, dropped)
        start = time.perf_counter()
        model = fit_classifier(fresh(), x[idx], y[idx], config=tcfg, seed=seed)
        models[rho] = model
        rows += _audit_rows(config, model, x, y, sets, test, offline, online, seed,
                            base={"block": block, "seed": seed, "setting": f"rho={rho:g}", "true_rate": rho,
                                  "train_s": time.perf_counter() - start})
    ucfg = UnlearnConfig(retrain=tcfg)
    for method in config.methods:
        start = time.perf_counter()
        try:
            model = unlearn(method, models[0.0], retain=(x[retain], y[retain]), forget=(x[forget], y[forget]),
                            config=ucfg, seed=seed)
        except FloatingPointError:  # e.g. gradient ascent blowing up: recorded by its absence, named in the notes
            continue
        rows += _audit_rows(config, model, x, y, sets, test, offline, online, seed,
                            base={"block": block, "seed": seed, "setting": method, "true_rate": math.nan,
                                  "train_s": time.perf_counter() - start})
    return rows


def _audit_rows(config, model, x, y, sets: AuditSets, test, offline: Shadows, online: Shadows | None, seed: int,
                *, base: dict[str, Any]) -> list[dict[str, Any]]:
    acc = {"UA": accuracy(model, x[sets.forget], y[sets.forget]), "RA": accuracy(model, x[sets.member],
                                                                                 y[sets.member]),
           "TA": accuracy(model, x[test], y[test])}
    results = run_auditors(model, x, y, sets, names=config.auditors, offline=offline, online=online,
                           rmia_refs=config.rmia_refs, n_bootstrap=config.n_bootstrap, seed=seed)
    return [{**base, **acc, "auditor": a.result.method, "estimate": a.result.forgetting_rate, "low": a.result.low,
             "high": a.result.high, "raw": a.result.raw_rate, "residual": a.result.residual, "auc": a.result.auc,
             "audit_s": a.audit_s, "setup_s": a.setup_s, "audit_cpu_s": a.audit_cpu_s, "setup_cpu_s": a.setup_cpu_s}
            for a in results]


def _block_cached(config, block: str, seed: int, out_dir: Path) -> list[dict[str, Any]]:
    """``run_block`` through a checked cache entry per (block, seed), so an interrupted ``--full`` run resumes.
    The timings inside are those of the run that computed the entry."""
    key = cache_key(config, block, seed, present_files(), code="smi.block/1", exclude=("seeds", "blocks"))
    return load_or_compute(Path(out_dir) / "smi_runs" / f"{block}-s{seed}-{key.short}.json", key,
                           lambda: run_block(config, block, seed))


def run(config, *, out_dir: Path):
    """Run every block and seed; return the :class:`~paperlab.experiments.base.Result`."""
    config, note = with_available_data(config)
    threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)  # contended CPUs run small models faster on one thread
    try:
        rows = [row for block in config.blocks for seed in config.seeds
                for row in _block_cached(config, block, seed, Path(out_dir))]
    finally:
        torch.set_num_threads(threads)
    result = summarize(config, rows, out_dir=Path(out_dir))
    missing = [f"{m} ({b}, seed {s})" for b in config.blocks for s in config.seeds for m in config.methods
               if not any(r["block"] == b and r["seed"] == s and r["setting"] == m for r in rows)]
    if missing:
        result.notes.append(f"diverged (loss became NaN), so not audited: {', '.join(missing)}")
    if note:
        result.notes.insert(0, note)
    return result


def available_blocks(blocks: tuple[str, ...]) -> tuple[tuple[str, ...], str | None]:
    """``blocks`` with every ``mnist-*`` swapped for ``digits-*`` when the MNIST files are absent (no-data
    fallback), and a note saying so (None when nothing was swapped). Checks the files' presence, loads nothing."""
    if not any(b.startswith("mnist-") for b in blocks):
        return blocks, None
    try:
        path("mnist_test", "images")
        path("mnist_test", "labels")
    except DatasetNotFoundError:
        swapped = tuple(dict.fromkeys("digits-" + b.split("-", 1)[1] if b.startswith("mnist-") else b
                                      for b in blocks))
        return swapped, (f"MNIST not found (set PAPERLAB_DATA): blocks {list(blocks)} ran as {list(swapped)} on "
                         "scikit-learn's bundled digits instead")
    return blocks, None


def with_available_data(config):
    """``config`` with its blocks from :func:`available_blocks`, and the note (None if unchanged)."""
    blocks, note = available_blocks(config.blocks)
    return (config, None) if note is None else (dataclasses.replace(config, blocks=blocks), note)
