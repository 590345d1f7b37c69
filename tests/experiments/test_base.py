"""Verdict rules, the runner and the report, on a fake paper."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from paperlab.experiments import PAPERS, get_paper  # noqa: E402
from paperlab.experiments.base import (  # noqa: E402
    NOT_IMPLEMENTED,
    REPRODUCED,
    Claim,
    Experiment,
    Figure,
    Paper,
    Result,
)
from paperlab.experiments.cache import CacheWarning  # noqa: E402
from paperlab.experiments.protocol import NO_VERDICT_QUICK, TOO_FEW_SEEDS  # noqa: E402
from paperlab.experiments.runner import configure, run_papers  # noqa: E402
from paperlab.experiments.verdicts import verdict_from_effect  # noqa: E402
from paperlab.report import write_report  # noqa: E402
from paperlab.tables import markdown_table, save_figure  # noqa: E402


@dataclass(frozen=True, kw_only=True)
class _Config:
    n: int
    seeds: tuple[int, ...] = (0,)


def _run(config: _Config, *, out_dir: Path) -> Result:
    fig, ax = plt.subplots()
    ax.plot(range(config.n))
    rows = [{"seed": s, "effect": 1.0 + 0.1 * s} for s in config.seeds]
    return Result(experiment="exp", config={"n": config.n}, rows=rows, tables={"effects": rows},
                  figures=[Figure(file=save_figure(fig, out_dir, "curve"), caption="a curve")],
                  verdicts=[verdict_from_effect("fake-1", [r["effect"] for r in rows])], notes=["it held"])


def _boom(config: _Config, *, out_dir: Path) -> Result:
    raise RuntimeError("experiment exploded")


FAKE = Paper(id="0000.00000", name="Fake paper", key="fake", claims=(
    Claim(id="fake-1", text="effect is positive", paper_value="+1", experiment="exp"),
    Claim(id="fake-2", text="never tested", paper_value="?"),
    Claim(id="fake-3", text="tested by a broken experiment", paper_value="?", experiment="broken"),
), experiments=(
    Experiment(name="exp", title="Exp", quick=lambda: _Config(n=3), full=lambda: _Config(n=5, seeds=(0, 1, 2)),
               run=_run),
    Experiment(name="broken", title="Broken", quick=lambda: _Config(n=1), full=lambda: _Config(n=1), run=_boom),
))


def test_report_end_to_end(tmp_path: Path) -> None:
    runs = run_papers([FAKE], mode="quick", out=tmp_path, seeds=2, progress=False)
    assert runs[0].results[0].config == {"n": 3} and len(runs[0].results[0].rows) == 2
    assert "experiment exploded" in runs[0].errors["broken"]
    report = write_report(runs, tmp_path, mode="quick").read_text()
    assert "| 0000.00000 | effect is positive | +1 |" in report and NO_VERDICT_QUICK in report  # 2 seeds
    assert NOT_IMPLEMENTED in report and "experiment failed" in report and "it held" in report
    fig_file = runs[0].results[0].figures[0].file
    assert (tmp_path / fig_file).is_file() and f"]({fig_file})" in report
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["papers"][0]["claims"][0]["verdict"] == NO_VERDICT_QUICK
    three = run_papers([FAKE], mode="quick", out=tmp_path / "three", seeds=3, progress=False)
    assert three[0].results[0].verdicts[0].verdict == REPRODUCED  # quick decides only where >= 3 seeds ran


def test_resume_reuses_saved_results_and_only_selects(tmp_path: Path) -> None:
    import dataclasses

    first = run_papers([FAKE], mode="quick", out=tmp_path, progress=False)[0].results[0]
    calls = []
    counted = dataclasses.replace(FAKE.experiments[0], run=lambda *a, **k: calls.append(1) or _run(*a, **k))
    fake = dataclasses.replace(FAKE, experiments=(counted, FAKE.experiments[1]))
    resumed = run_papers([fake], mode="quick", out=tmp_path, resume=True, only=["exp"], progress=False)[0]
    assert calls == [] and resumed.results[0] == first and resumed.not_run == ["broken"] and not resumed.errors
    assert (tmp_path / resumed.results[0].figures[0].file).is_file()
    # another config (full) has another folder: it runs; without resume, a saved result is recomputed
    run_papers([fake], mode="full", out=tmp_path, resume=True, only=["exp"], progress=False)
    run_papers([fake], mode="quick", out=tmp_path, only=["exp"], progress=False)
    assert calls == [1, 1]
    report = write_report([resumed], tmp_path, mode="quick").read_text()
    assert "| tested by a broken experiment | ? |  | not run in this report |" in report
    with pytest.raises(ValueError, match=r"only=\['nope'\].*\['broken', 'exp'\]"):
        run_papers([FAKE], mode="quick", out=tmp_path, only=["nope"], progress=False)


def test_resume_recomputes_a_result_when_the_experiments_version_is_bumped(tmp_path: Path) -> None:
    import dataclasses

    run_papers([FAKE], mode="quick", out=tmp_path, only=["exp"], progress=False)
    calls: list[int] = []
    bumped = dataclasses.replace(FAKE.experiments[0], version=2, run=lambda *a, **k: calls.append(1) or _run(*a, **k))
    fake = dataclasses.replace(FAKE, experiments=(bumped, FAKE.experiments[1]))
    with pytest.warns(CacheWarning, match="result.json"):  # the old result is stale: recomputed, and said so
        run_papers([fake], mode="quick", out=tmp_path, resume=True, only=["exp"], progress=False)
    run_papers([fake], mode="quick", out=tmp_path, resume=True, only=["exp"], progress=False)
    assert calls == [1]  # recomputed once, then reused


def _counted_fake() -> tuple[Paper, list[int]]:
    import dataclasses

    calls: list[int] = []
    counted = dataclasses.replace(FAKE.experiments[0], run=lambda *a, **k: calls.append(1) or _run(*a, **k))
    return dataclasses.replace(FAKE, experiments=(counted, FAKE.experiments[1])), calls


@pytest.mark.parametrize("damage", ["truncated", "not json", "empty", "old format"])
def test_resume_recomputes_a_damaged_result_with_a_warning_naming_it(tmp_path: Path, damage: str) -> None:
    first = run_papers([FAKE], mode="quick", out=tmp_path, progress=False)[0].results[0]
    (saved,) = tmp_path.glob("fake/exp/*/result.json")
    text = {"truncated": saved.read_text()[:50], "not json": "\x00garbage", "empty": "",
            "old format": json.dumps(first.to_dict())}[damage]
    saved.write_text(text)
    fake, calls = _counted_fake()
    with pytest.warns(CacheWarning, match=re.escape(str(saved))):
        runs = run_papers([fake], mode="quick", out=tmp_path, resume=True, progress=False)[0]
    assert calls == [1] and runs.results[0].rows == first.rows  # recomputed, not a crash
    assert "experiment exploded" in runs.errors["broken"]  # the later experiment still ran
    again = run_papers([fake], mode="quick", out=tmp_path, resume=True, progress=False)[0]  # now clean: no warning
    assert calls == [1] and again.results[0].rows == first.rows


def test_resume_recomputes_a_result_computed_without_the_data_now_present(tmp_path: Path, monkeypatch) -> None:
    """A result computed while a data file was missing (experiments then run on built-in stand-ins) is not
    reused once the file is there: the files in view are part of the result's key."""
    from paperlab.data.registry import get_file

    data = tmp_path / "data"
    monkeypatch.setenv("PAPERLAB_DATA", str(data))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fake, calls = _counted_fake()
    run_papers([fake], mode="quick", out=tmp_path / "out", only=["exp"], progress=False)
    run_papers([fake], mode="quick", out=tmp_path / "out", resume=True, only=["exp"], progress=False)
    assert calls == [1]  # same files in view: reused
    shakespeare = data / get_file("tinyshakespeare").relpath
    shakespeare.parent.mkdir(parents=True)
    shakespeare.write_text("First Citizen:")
    with pytest.warns(CacheWarning):
        run_papers([fake], mode="quick", out=tmp_path / "out", resume=True, only=["exp"], progress=False)
    assert calls == [1, 1]


def test_resume_recomputes_a_result_whose_verdict_was_edited(tmp_path: Path) -> None:
    run_papers([FAKE], mode="quick", out=tmp_path, progress=False)
    (saved,) = tmp_path.glob("fake/exp/*/result.json")
    edited = saved.read_text().replace(f'"{TOO_FEW_SEEDS}"', f'"{REPRODUCED}"')  # a one-seed run "decided"
    assert edited != saved.read_text()
    saved.write_text(edited)
    fake, calls = _counted_fake()
    with pytest.warns(CacheWarning, match=re.escape(str(saved)) + ".*sha256"):
        runs = run_papers([fake], mode="quick", out=tmp_path, resume=True, progress=False)[0]
    assert calls == [1] and runs.results[0].verdicts[0].verdict == NO_VERDICT_QUICK
    assert f'"{TOO_FEW_SEEDS}"' in saved.read_text()  # the recomputed entry replaced the edited one


def test_configure_modes_and_seeds() -> None:
    exp = FAKE.experiments[0]
    assert configure(exp, "full", None) == _Config(n=5, seeds=(0, 1, 2))
    assert configure(exp, "quick", 4).seeds == (0, 1, 2, 3)
    with pytest.raises(ValueError, match="mode"):
        configure(exp, "medium", None)


def test_registry_has_six_papers_with_claims() -> None:
    assert sorted(PAPERS) == sorted(["2605.08587", "2605.03769", "2602.01150", "2602.01148", "2602.02593",
                                     "2510.25800"])
    for paper in PAPERS.values():
        assert paper.claims and get_paper(paper.key) is paper
        names = {e.name for e in paper.experiments}
        for claim in paper.claims:
            assert claim.experiment is None or claim.experiment in names, claim.id
    with pytest.raises(ValueError, match="unknown paper"):
        get_paper("nope")


def test_markdown_table() -> None:
    table = markdown_table([{"a": 1.23456789, "b": "x|y"}, {"a": 2, "c": float("nan")}])
    assert table.splitlines()[0] == "| a | b | c |"
    assert "| 1.235 | x\\|y |  |" in table and "nan" in table


def test_markdown_table_renders_a_missing_value_as_n_a() -> None:
    assert markdown_table([{"a": None, "b": 1}]).splitlines()[2] == "| n/a | 1 |"


def test_update_readme_replaces_only_marked_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import paperlab.experiments as registry
    from paperlab.report import update_readme

    monkeypatch.setitem(registry.PAPERS, FAKE.id, FAKE)
    runs = run_papers([FAKE], mode="quick", out=tmp_path, progress=False)
    write_report(runs, tmp_path, mode="quick")
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- results:fake -->\nstale 9.99\n<!-- /results:fake -->\noutro\n")
    assert update_readme(readme, tmp_path / "results.json") == ["fake"]
    text = readme.read_text()
    assert "stale" not in text and text.startswith("intro\n") and text.endswith("outro\n")
    assert f"| effect is positive | +1 | 1 (n=1), no interval | {NO_VERDICT_QUICK} |" in text
    assert "**exp: effects**" in text


def test_missing_data_is_reported_as_skipped_not_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from paperlab.data import path

    monkeypatch.delenv("PAPERLAB_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty"))

    def needs_data(config: _Config, *, out_dir: Path) -> Result:
        path("chinchilla_epoch")
        raise AssertionError("unreachable without data")

    paper = Paper(id="0000.00001", name="Data paper", key="datap", claims=(
        Claim(id="d-1", text="needs a file", paper_value="?", experiment="fit"),), experiments=(
        Experiment(name="fit", title="Fit", quick=lambda: _Config(n=1), full=lambda: _Config(n=1), run=needs_data),))
    runs = run_papers([paper], mode="quick", out=tmp_path, progress=False)
    assert runs[0].errors == {} and "paperlab data download chinchilla_epoch" in runs[0].skipped["fit"]
    report = write_report(runs, tmp_path, mode="quick").read_text()
    assert "needs data (see report)" in report and "### fit: skipped, data missing" in report


def test_corpus_and_mnist_fallbacks_without_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from paperlab.data.text import available_corpus
    from paperlab.experiments.smi import PAPER as SMI_PAPER
    from paperlab.experiments.smi.study import with_available_data

    monkeypatch.delenv("PAPERLAB_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert available_corpus("tinyshakespeare") == "pydoc" and available_corpus("pydoc") == "pydoc"
    config = SMI_PAPER.experiments[0].full()
    swapped, note = with_available_data(config)
    assert swapped.blocks == ("digits-mlp", "digits-cnn") and "MNIST not found" in note


def test_registry_and_configs_import_without_torch() -> None:
    # `paperlab reproduce --list`/`--help` and every config stay fast: the heavy modules load inside run functions.
    import subprocess
    import sys

    code = "import sys, paperlab.experiments, paperlab.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_progress_bars_only_inside_a_run_that_shows_progress() -> None:
    from tqdm.auto import tqdm

    from paperlab.experiments.base import SHOW_PROGRESS, progress

    assert not isinstance(progress([1, 2], desc="x"), tqdm) and list(progress([1, 2], desc="x")) == [1, 2]
    token = SHOW_PROGRESS.set(True)
    try:
        bar = progress([1, 2], desc="runs")
        assert isinstance(bar, tqdm) and list(bar) == [1, 2]
    finally:
        SHOW_PROGRESS.reset(token)


def _results_json(path: Path, *, claims: dict[str, tuple[str, str]], tables: dict[str, dict[str, list]]) -> Path:
    """A results.json for FAKE: claim text -> (ours, verdict); experiment -> {title: rows}."""
    rows = [{"paper": FAKE.id, "claim": c.text, "paper's number": c.paper_value, "ours": claims[c.text][0],
             "verdict": claims[c.text][1], "rule / scale note": ""} for c in FAKE.claims]
    results = [{"experiment": exp, "tables": t} for exp, t in tables.items()]
    path.write_text(json.dumps({"mode": "full", "papers": [{"id": FAKE.id, "claims": rows, "results": results}]}))
    return path


def test_update_readme_keeps_what_partial_results_did_not_measure(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import paperlab.experiments as registry
    from paperlab.report import update_readme

    monkeypatch.setitem(registry.PAPERS, FAKE.id, FAKE)
    not_run = ("", "not run in this report")
    full = _results_json(tmp_path / "full.json", claims={
        "effect is positive": ("1.05 ± 0.1 (n=3)", REPRODUCED), "never tested": ("", NOT_IMPLEMENTED),
        "tested by a broken experiment": ("0.5 (n=3)", "not reproduced")},
        tables={"exp": {"effects": [{"seed": 0, "effect": 1.05}]}, "broken": {"scores": [{"score": 0.5}]}})
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- results:fake -->\nold\n<!-- /results:fake -->\noutro\n")
    assert update_readme(readme, full) == ["fake"]
    before = readme.read_text()
    assert "| effect is positive | +1 | 1.05 ± 0.1 (n=3) |" in before and "**broken: scores**" in before
    # a results file with nothing measured for the paper leaves its block alone
    nothing = _results_json(tmp_path / "nothing.json", claims=dict.fromkeys(
        ("effect is positive", "never tested", "tested by a broken experiment"), not_run), tables={})
    assert update_readme(readme, nothing) == []
    assert readme.read_text() == before
    # a part of the paper: its rows and tables replace theirs, the rest of the block stays
    part = _results_json(tmp_path / "part.json", claims={
        "effect is positive": not_run, "never tested": ("", NOT_IMPLEMENTED),
        "tested by a broken experiment": ("0.7 (n=3)", "not reproduced")},
        tables={"broken": {"scores": [{"score": 0.7}]}})
    assert update_readme(readme, part) == ["fake"]
    text = readme.read_text()
    assert "| effect is positive | +1 | 1.05 ± 0.1 (n=3) | reproduced |" in text  # kept
    assert "**exp: effects**" in text and "| 0 | 1.05 |" in text  # kept
    assert "| 0.7 |" in text and "| 0.5 |" not in text  # replaced
    assert "not run in this report" not in text and text.startswith("intro\n") and text.endswith("outro\n")


def _quick_config() -> _Config:
    return _Config(n=3)


def _full_config() -> _Config:
    return _Config(n=4, seeds=(0, 1, 2))


def _picklable_paper(key: str) -> Paper:  # module-level functions only: a spawned worker must unpickle it
    return Paper(id=f"0000.0000{len(key)}", name=f"Fake {key}", key=key, claims=(
        Claim(id="fake-1", text="effect is positive", paper_value="+1", experiment="exp"),
        Claim(id="fake-3", text="tested by a broken experiment", paper_value="?", experiment="broken")),
        experiments=(Experiment(name="exp", title="Exp", quick=_quick_config, full=_full_config, run=_run),
                     Experiment(name="broken", title="Broken", quick=_quick_config, full=_quick_config,
                                run=_boom)))


def test_parallel_jobs_give_the_same_results_as_one_process(tmp_path: Path) -> None:
    papers = [_picklable_paper("fa"), _picklable_paper("fbb")]
    serial = run_papers(papers, mode="full", out=tmp_path / "one", progress=False)
    parallel = run_papers(papers, mode="full", out=tmp_path / "two", progress=False, jobs=2)
    assert [r.paper.key for r in parallel] == ["fa", "fbb"]  # the order of the papers asked for
    for a, b in zip(serial, parallel, strict=True):
        assert [x.rows for x in a.results] == [x.rows for x in b.results]
        assert [x.verdicts for x in a.results] == [x.verdicts for x in b.results]
        assert set(b.errors) == {"broken"} and "experiment exploded" in b.errors["broken"]
        assert (tmp_path / "two" / b.paper.key / "exp").is_dir()
    with pytest.raises(ValueError, match="jobs"):
        run_papers(papers, out=tmp_path, jobs=0)


def test_markdown_table_escapes_pipes_in_headers_and_cells() -> None:
    text = markdown_table([{"drift |log r|": "a|b", "x": 1.0}])
    header, rule, row = text.splitlines()
    assert header == "| drift \\|log r\\| | x |" and rule == "|---|---|" and row == "| a\\|b | 1 |"


def test_workers_call_the_papers_prepare_hook_with_the_experiments_that_will_compute(tmp_path: Path) -> None:
    import dataclasses

    calls = []

    def prepare(configs, *, out, workers, progress):
        calls.append((dict(configs), out, workers))

    fake = dataclasses.replace(FAKE, prepare=prepare)
    run_papers([fake], mode="quick", out=tmp_path, only=["exp"], progress=False)  # workers=1: no hook
    assert calls == []
    run_papers([fake], mode="quick", out=tmp_path, workers=2, progress=False)
    assert calls == [({"exp": _Config(n=3), "broken": _Config(n=1)}, tmp_path, 2)]
    # with --resume, an experiment whose saved result will be reused needs no models
    run_papers([fake], mode="quick", out=tmp_path, workers=2, resume=True, progress=False)
    assert calls[-1][0] == {"broken": _Config(n=1)}
    run_papers([fake], mode="quick", out=tmp_path, workers=2, resume=True, only=["exp"], progress=False)
    assert len(calls) == 2  # nothing to compute: not called
    with pytest.raises(ValueError, match="workers"):
        run_papers([fake], mode="quick", out=tmp_path, workers=0, progress=False)


def test_a_papers_review_hook_amends_verdicts_on_every_assembly(tmp_path: Path) -> None:
    """``Paper.review`` sees all of a run's results, fresh or resumed, and the saved result.json stays as computed."""
    import dataclasses

    seen = []

    def review(results: list[Result]) -> None:
        seen.append([r.experiment for r in results])
        for r in results:
            r.verdicts = [dataclasses.replace(v, verdict="amended") for v in r.verdicts]

    fake = dataclasses.replace(FAKE, review=review)
    for resume in (False, True):
        run = run_papers([fake], mode="full", out=tmp_path, only=["exp"], resume=resume, progress=False)[0]
        assert run.results[0].verdicts[0].verdict == "amended"
    assert seen == [["exp"], ["exp"]]
    saved = json.loads(next(tmp_path.rglob("result.json")).read_text())
    assert "amended" not in json.dumps(saved)
