"""``paperlab scaling`` commands print tables and save plots."""

from __future__ import annotations

from unittest import mock

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


def test_scaling_allocate_frontier_needs_data(capsys):
    assert main(["scaling", "allocate", "--compute", "1e21", "--law", "frontier"]) == 2
    assert "paperlab: error: --law frontier has no published constants: pass --data" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--data"):
        main(["--debug", "scaling", "allocate", "--compute", "1e21", "--law", "frontier"])


def test_scaling_starts_default_is_the_librarys(tmp_path, capsys, kyo):
    from paperlab.data import path
    from paperlab.scaling import fit

    seen, real = [], fit.fit_law

    def spy(*args, n_starts, **kw):  # records the start count, fits with 2 starts to stay fast
        seen.append(n_starts)
        return real(*args, n_starts=2, **kw)

    csv = str(path("chinchilla_kyo"))
    with mock.patch.object(fit, "fit_law", spy):
        assert main(["scaling", "fit", csv, "--bootstrap", "0", "--out", str(tmp_path)]) == 0
        for flag in ([], ["--starts", "3"], ["--starts", "0"]):
            assert main(["scaling", "allocate", "--compute", "1e21", "--data", csv, *flag]) == 0
    capsys.readouterr()
    assert seen == [fit.DEFAULT_STARTS, fit.DEFAULT_STARTS, 3, None]  # 0: every start
