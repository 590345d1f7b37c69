"""Turn experiment results into ``report.md`` (claims table, then one section per experiment), JSON and PNGs."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from paperlab.experiments import get_paper
from paperlab.experiments.base import NOT_IMPLEMENTED, Paper, Verdict
from paperlab.experiments.runner import PaperRun
from paperlab.io import atomic_write_json, atomic_write_text
from paperlab.tables import markdown_table

__all__ = ["claim_rows", "update_readme", "update_readme_benchmarks", "write_report"]


def claim_rows(run: PaperRun) -> list[dict[str, str]]:
    """One row per claim: the paper's number, ours with spread, the verdict and the scale note."""
    verdicts: dict[str, Verdict] = {v.claim: v for r in run.results for v in r.verdicts}
    rows = []
    for claim in run.paper.claims:
        v = verdicts.get(claim.id)
        if v is None:
            state = NOT_IMPLEMENTED
            if claim.experiment in run.errors:
                state = "experiment failed"
            elif claim.experiment in run.skipped:
                state = "needs data (see report)"
            elif claim.experiment in run.not_run:
                state = "not run in this report"
            rows.append({"paper": run.paper.id, "claim": claim.text, "paper's number": claim.paper_value,
                         "ours": "", "verdict": state, "rule / scale note": ""})
            continue
        note = v.rule + (f"; {v.scale_note}" if v.scale_note else "")
        rows.append({"paper": run.paper.id, "claim": claim.text, "paper's number": claim.paper_value,
                     "ours": v.ours, "verdict": v.verdict, "rule / scale note": note})
    return rows


def write_report(runs: Sequence[PaperRun], out: Path, *, mode: str) -> Path:
    """Write ``out/report.md`` and ``out/results.json``; return the report's path."""
    out = Path(out)
    parts = [f"# paperlab report ({mode})\n",
             "Every number below was measured by the code in this run; verdicts follow the stated rules.\n",
             "## Claims\n", markdown_table([row for run in runs for row in claim_rows(run)])]
    for run in runs:
        parts.append(_paper_section(run.paper, run))
    atomic_write_text(out / "report.md", "\n".join(parts))
    atomic_write_json(out / "results.json", {
        "mode": mode,
        "papers": [{"id": r.paper.id, "name": r.paper.name, "claims": claim_rows(r),
                    "results": [res.to_dict() for res in r.results], "errors": r.errors, "skipped": r.skipped}
                   for r in runs],
    })
    return out / "report.md"


def _paper_section(paper: Paper, run: PaperRun) -> str:
    parts = [f"## {paper.name} ({paper.id})\n"]
    if paper.scale_note:
        parts.append(paper.scale_note + "\n")
    if not paper.experiments:
        parts.append(f"_{NOT_IMPLEMENTED}: no experiment is registered for this paper._\n")
    for name, tb in run.errors.items():
        parts.append(f"### {name}: failed\n\n```\n{tb}\n```\n")
    for name, message in run.skipped.items():
        parts.append(f"### {name}: skipped, data missing\n\n{message}\n")
    for res in run.results:
        parts.append(f"### {res.experiment}\n\n_{res.seconds:.1f} s_\n")
        parts.extend(f"- {note}" for note in res.notes)
        if res.notes:
            parts.append("")
        for title, rows in res.tables.items():
            parts.append(f"**{title}**\n\n{markdown_table(rows)}")
        parts.extend(f"![{fig.caption}]({fig.file})\n\n_{fig.caption}_\n" for fig in res.figures)
    return "\n".join(parts)


# Claim verdicts without a measurement: a partial results file never overwrites a measured README row with them.
_UNMEASURED = (NOT_IMPLEMENTED, "experiment failed", "needs data (see report)", "not run in this report")


def update_readme(readme: Path, results_json: Path) -> list[str]:
    """Replace each ``<!-- results:KEY -->...<!-- /results:KEY -->`` block in ``readme`` with the measured tables.

    KEY is a paper key (``kla``, ``nora``, ...). The block gets the claims table and every experiment table from
    ``results.json`` (as written by :func:`write_report`), so README numbers always come from a run. Partial
    results (``--only``, a failed or skipped experiment) update only what they measured: a block whose paper has
    no result in the file is left alone, and in the others the claim rows without a measurement, the tables of
    experiments the file lacks and tables it has no rows for are kept as they were (never replaced by an empty
    table). Returns the keys that were updated. A ``results_json`` that is not such a file (not JSON, no
    ``papers`` list) raises ``ValueError`` naming it.
    """
    try:
        data = json.loads(Path(results_json).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{results_json} is not a JSON results file ({err}); an empty, truncated or damaged "
                         "file? write_report (paperlab reproduce) writes it") from err
    if not isinstance(data, dict) or not isinstance(data.get("papers"), list):
        got = f"keys {sorted(data)}" if isinstance(data, dict) else f"a JSON {type(data).__name__}"
        raise ValueError(f"{results_json} is not a results file of write_report: it needs a 'papers' list, got {got}")
    text = Path(readme).read_text(encoding="utf-8")
    updated = []
    for paper in data["papers"]:
        key = _paper_key(paper["id"])
        match = _block_pattern("results", key).search(text)
        if match is None or not paper["results"]:
            continue
        if "mode" not in data:
            raise ValueError(f"{results_json} is not a results file of write_report: it has no 'mode' (quick or "
                             "full), which the README block states")
        text = _replace_block(text, "results", key, _merged_block(paper, data["mode"], key, match.group(2)))
        updated.append(key)
    if updated:
        atomic_write_text(readme, text)
    return updated


def _merged_block(paper: dict[str, Any], mode: str, key: str, old: str) -> str:
    """The README block of one paper: this file's measurements over what the ``old`` block shows."""
    old_claims, old_sections = _parse_block(old)
    kept = False
    claims = []
    for row in paper["claims"]:
        row = {k: v for k, v in row.items() if k != "paper"}
        before = old_claims.get(row["claim"])
        if row["verdict"] in _UNMEASURED and before is not None and before.get("verdict") not in _UNMEASURED:
            row, kept = before, True
        claims.append(row)
    new = {(res["experiment"], title): f"**{res['experiment']}: {title}**\n\n{markdown_table(rows)}"
           for res in paper["results"] for title, rows in res["tables"].items() if rows}
    ran = {res["experiment"] for res in paper["results"]}
    titles = {(res["experiment"], title) for res in paper["results"] for title in res["tables"]}
    sections = []
    for exp_title, section in old_sections:
        if exp_title in new:
            sections.append(new.pop(exp_title))
        elif exp_title[0] not in ran or exp_title in titles:  # not run now, or run without rows: keep
            sections.append(section)
            kept = True
    sections.extend(new.values())
    head = f"_Measured by `paperlab reproduce {key} --{mode}`._"
    if mode == "quick":
        head += (" _A quick run is a pipeline check: it decides no claim that rests on fewer than 3 seeds; the "
                 "verdicts come from a `--full` run under the evidence protocol._")
    if kept:
        head += " _Rows and tables this run did not measure are kept from the previous update._"
    return "\n".join([head + "\n", markdown_table(claims), *sections])


def _parse_block(body: str) -> tuple[dict[str, dict[str, str]], list[tuple[tuple[str, str], str]]]:
    """Read back what ``_merged_block`` wrote: the claims table's rows by claim text, and the experiment sections
    ``((experiment, title), text)`` in order. Text in any other form yields nothing, so it is replaced."""
    lines = body.split("\n")
    claims: dict[str, dict[str, str]] = {}
    first = next((i for i, line in enumerate(lines) if line.startswith("| claim |")), None)
    if first is not None:
        cols = _cells(lines[first])
        for line in lines[first + 2 :]:
            if not line.startswith("|"):
                break
            row = dict(zip(cols, _cells(line), strict=False))
            claims[row.get("claim", "")] = row
    sections: list[tuple[tuple[str, str], str]] = []
    for line in lines:
        head = re.match(r"\*\*([^:*\n]+): (.*)\*\*$", line)
        if head:
            sections.append(((head.group(1), head.group(2)), line))
        elif sections:
            sections[-1] = (sections[-1][0], sections[-1][1] + "\n" + line)
    return claims, [(k, text.rstrip("\n") + "\n") for k, text in sections]


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row, with ``markdown_table``'s ``\\|`` escapes undone."""
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]


def update_readme_benchmarks(readme: Path, results_dir: Path) -> list[str]:
    """Replace each ``<!-- bench:NAME -->...<!-- /bench:NAME -->`` block in ``readme`` with the rows of
    ``results_dir/NAME.json`` (the ``{config, environment, rows}`` document a benchmark writes with ``--out``).

    Blocks without a JSON file are left alone. Returns the names that were updated.
    """
    text = Path(readme).read_text(encoding="utf-8")
    updated = []
    for name in re.findall(r"<!-- bench:([\w.-]+) -->", text):
        path = Path(results_dir) / f"{name}.json"
        if not path.is_file():
            continue
        doc = json.loads(path.read_text(encoding="utf-8"))
        env = doc["environment"]
        when = f", {env['date']}" if "date" in env else ""
        head = (f"_Measured by `python benchmarks/{name}.py --out {path.as_posix()}`: torch {env['torch']}, "
                f"{env['threads']} threads, {env['cpu']}{when}._\n")
        text = _replace_block(text, "bench", name, head + "\n" + markdown_table(doc["rows"], digits=3))
        updated.append(name)
    atomic_write_text(readme, text)
    return updated


def _block_pattern(tag: str, key: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {tag}:{re.escape(key)} -->\n)(.*?)(<!-- /{tag}:{re.escape(key)} -->)", re.S)


def _replace_block(text: str, tag: str, key: str, body: str) -> str:
    return _block_pattern(tag, key).sub(lambda m: m.group(1) + body + m.group(3), text)


def _paper_key(paper_id: str) -> str:
    return get_paper(paper_id).key
