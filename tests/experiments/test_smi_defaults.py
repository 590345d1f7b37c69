"""The SMI defaults experiment: every candidate pair on every family, abstentions counted, a shrunk run."""

from __future__ import annotations

import math

import pytest

from paperlab.experiments.smi import PAPER, DefaultsConfig
from paperlab.experiments.smi.defaults import CANDIDATES, run


def test_shrunk_run_covers_every_family_and_candidate(tmp_path):
    config = DefaultsConfig(seeds=(0,), families=("synthetic-mlp", "synthetic-forest"), n_train=300, n_forget=100,
                            n_nonmember=300, rhos=(0.0, 1.0), epochs=20, n_bootstrap=5)
    res = run(config, out_dir=tmp_path)
    got = {(r["family"], r["features"], r["estimator"]) for r in res.rows}
    assert got == {(f, *c) for f in config.families for c in CANDIDATES} - {("synthetic-forest", "penultimate",
                                                                          "mmd")}  # a forest has no features
    (table,) = res.tables.values()
    assert [(r["features"], r["estimator"]) for r in table] == list(CANDIDATES)
    assert next(r for r in table if r["features"] == "penultimate")["synthetic-forest"] == "n/a"
    for r in res.rows:
        assert math.isnan(r["estimate"]) or 0.0 <= r["estimate"] <= 1.0
    # the recommended pair reads a memorising forest's retrained-without-forget model as mostly forgotten
    rec = [r for r in res.rows if (r["family"], r["features"], r["estimator"], r["rho"]) ==
           ("synthetic-forest", "scaled_confidence", "w1", 1.0)]
    assert rec and rec[0]["estimate"] > 0.7


def test_config_rules():
    assert PAPER.experiment("defaults").quick().seeds == (0,)
    with pytest.raises(ValueError, match="family='mnist-rnn'"):
        DefaultsConfig(families=("mnist-rnn",))
    with pytest.raises(ValueError, match="n_forget"):
        DefaultsConfig(n_train=10, n_forget=10)
