"""CLI: help everywhere, unknown options listed, reproduce writes a report."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from paperlab import cli


def test_help_on_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name in sub.choices:
        with pytest.raises(SystemExit) as exc:
            cli.main([name, "--help"])
        assert exc.value.code == 0
        assert "usage: paperlab " + name in capsys.readouterr().out


def test_unknown_option_lists_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["reproduce", "--bogus"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--bogus" in err and "valid options for 'paperlab reproduce'" in err and "--seeds" in err


def test_typed_option_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["reproduce", "--seeds", "many"])
    assert "invalid int value" in capsys.readouterr().err


def test_list_prints_every_claim(capsys: pytest.CaptureFixture[str]) -> None:
    from paperlab.experiments import PAPERS

    assert cli.main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    for paper in PAPERS.values():
        for claim in paper.claims:
            assert f"{paper.id}\t{paper.key}\t{claim.id}\t" in out


def test_import_is_side_effect_free() -> None:
    code = ("import sys, paperlab, paperlab.experiments, paperlab.cli; "
            "print('sklearn' in sys.modules, 'matplotlib.pyplot' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"] and out.stderr == ""


def test_console_script_runs(tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "paperlab"
    if not exe.exists():
        pytest.skip("console script not installed in this environment")
    out = subprocess.run([str(exe), "data", "--help"], capture_output=True, text=True, check=True)
    assert "download" in out.stdout


def test_readme_command_rewrites_benchmark_blocks_from_json(tmp_path) -> None:
    import json

    from paperlab.bench import write_results

    results = tmp_path / "bench"
    results.mkdir()
    write_results(results / "toy.json", {"n": 3}, [{"impl": "ours", "fwd_s": 0.012345}, {"impl": "peer"}])
    env = json.loads((results / "toy.json").read_text())["environment"]
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- bench:toy -->\nold 9.9\n<!-- /bench:toy -->\n<!-- bench:absent -->\nkeep\n"
                      "<!-- /bench:absent -->\nb\n")
    assert cli.main(["readme", str(readme), "--benchmarks", str(results)]) == 0
    text = readme.read_text()
    assert "old 9.9" not in text and "keep" in text and text.startswith("a\n") and text.endswith("b\n")
    assert "| impl | fwd_s |\n|---|---|\n| ours | 0.0123 |\n| peer |  |\n<!-- /bench:toy -->" in text
    assert f"torch {env['torch']}, {env['threads']} threads" in text and env["date"] in text


def test_forecast_model_is_written_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    def broken(obj, f, *args, **kwargs):  # a crash half-way through serializing
        if hasattr(f, "write"):
            f.write(b"partial")
        else:
            Path(f).write_bytes(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken)
    args = ["forecast", "train", "--model", "dlinear", "--data", "national_illness", "--horizon", "24", "--epochs",
            "1", "--allow-generated", "--no-progress", "--out", str(tmp_path)]
    with pytest.raises(OSError, match="disk full"):
        cli.main(args)  # an OSError is no user error: it propagates
    assert not (tmp_path / "model.pt").exists()
    capsys.readouterr()


# argv (TMP: a fresh folder holding an empty subfolder and a CSV without a compute column) -> a regex that the
# one-line message must match: user mistakes the library rejects, reported without a traceback.
USER_ERRORS = {
    "lm-eval-missing-folder": (["lm", "eval", "TMP/nothing"], "config.json"),
    "lm-generate-missing-folder": (["lm", "generate", "TMP/empty", "--prompt", "a"], "config.json"),
    "lm-train-zero-steps": (["lm", "train", "--steps", "0", "--out", "TMP/r"], "steps"),
    "lm-train-unknown-mixer": (["lm", "train", "--mixer", "lstm", "--out", "TMP/r"], "mixer"),
    "reproduce-unknown-paper": (["reproduce", "nope", "--out", "TMP/rep"], "nope"),
    "scaling-bad-columns": (["scaling", "fit", "TMP/runs.csv", "--columns", "oops"], "columns"),
    "readme-missing-results": (["readme", "TMP/README.md", "--results", "TMP/r.json"], "README.md|r.json"),
}


@pytest.mark.parametrize("case", sorted(USER_ERRORS))
def test_user_errors_print_one_line_and_exit_2(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "runs.csv").write_text("N,D,loss\n1e6,2e7,3.0\n")
    template, pattern = USER_ERRORS[case]
    argv = [a.replace("TMP", str(tmp_path)) for a in template]
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("paperlab: error: "), captured.err
    assert "Traceback" not in captured.err and re.search(pattern, lines[0]), lines[0]
    with pytest.raises((ValueError, TypeError, FileNotFoundError)):  # --debug shows the traceback
        cli.main(["--debug", *argv])
