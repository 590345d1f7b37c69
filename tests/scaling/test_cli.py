"""``paperlab scaling`` commands print tables and save plots."""

from __future__ import annotations

import pytest

from paperlab.cli import main


def test_scaling_fit_isoflop_allocate(tmp_path, capsys, kyo):
    from paperlab.data import path

    csv = str(path("chinchilla_kyo"))
    assert main(["scaling", "fit", csv, "--law", "chinchilla", "--starts", "3", "--bootstrap", "0",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "alpha" in out and "AIC" in out and (tmp_path / "fit_chinchilla.png").exists()
    assert main(["scaling", "isoflop", csv, "--bins", "8", "--bootstrap", "5", "--out", str(tmp_path)]) == 0
    assert "approximate" in capsys.readouterr().out
    assert main(["scaling", "allocate", "--compute", "1e21", "--law", "chinchilla"]) == 0
    out = capsys.readouterr().out
    assert "N_opt" in out and "capacity" in out or "coverage" in out


def test_scaling_allocate_frontier_needs_data():
    with pytest.raises(ValueError, match="--data"):
        main(["scaling", "allocate", "--compute", "1e21", "--law", "frontier"])
