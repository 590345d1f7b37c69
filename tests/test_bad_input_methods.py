"""Bad inputs against the audits, scaling fits, reasoning probes, losses, tokenizers and data loaders.

The same shape as ``tests/test_bad_input.py``: ``ROWS`` holds one row per case, ``(id, callable, args, kwargs,
exception type, regex the message must match)``; arguments that need files are ``Res("name")`` placeholders
built once per module by the ``resources`` fixture. ``RESULTS`` holds the degenerate inputs where returning is
legitimate: ``(id, callable, check of the result)``, each the documented result (a NaN rate for a
non-identifiable audit, a scale-invariant rate, an infinite bound).
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from paperlab.audit import SMI, NotSeparableWarning, auc
from paperlab.audit.mia import ThresholdMIA, balanced_threshold, membership_score
from paperlab.data.registry import path as data_path
from paperlab.data.text import TextBatches, available_corpus
from paperlab.data.tokenizers import ByteTokenizer, CharTokenizer, load_tokenizer, make_tokenizer
from paperlab.losses import fredf_loss, frele_loss, ifr_weights, spectral_band_errors
from paperlab.reasoning import (
    GeneratorConfig,
    WordTokenizer,
    compounding_error_bound,
    decision_margin,
    exploration_kl_lower_bound,
    fit_noise_ratio,
    generate_prosqa,
    kl_extremal,
    load_prosqa,
    margin_lower_bound,
    noise_curve,
    prosqa_tokenizer,
    symbolic_index,
)
from paperlab.report import update_readme
from paperlab.scaling import LawFitter, fit_law
from tests.bad_input_rows import Res, Row, check_row, resources_fixture

RNG = np.random.default_rng(0)
MEMBER, NONMEMBER = RNG.standard_normal((20, 2)), RNG.standard_normal((20, 2)) + 3.0
FORGET = np.concatenate([MEMBER[:10] + 0.1, NONMEMBER[:10] - 0.1])
FAST = {"n_bootstrap": 20, "n_permutations": 20}
LOGITS, LABELS = RNG.standard_normal((20, 3)), RNG.integers(0, 3, 20)
LOGITS_M, LOGITS_N = LOGITS + 2.0 * np.eye(3)[LABELS], RNG.standard_normal((20, 3)) * 0.5
N = np.array([1e6, 2e6, 4e6, 8e6, 1.6e7, 3.2e7, 6.4e7, 1.28e8])
D = N * 20 * np.array([1, 2, 0.5, 1, 2, 0.5, 1, 2])
LOSS = 1.7 + 400 / N**0.34 + 410 / D**0.28
SCALING = {"N": N, "D": D, "loss": LOSS, "n_starts": 2}
PROBS = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]], dtype=torch.float64)
Z = torch.tensor([[2.0, 0.5, -1.0]])
SIG, MARG = torch.tensor([0.0, 0.5, 1.0]), torch.tensor([1.0, 2.0])
SIGMAS, RATIOS = [0.5, 1.0, 2.0, 4.0], [0.98, 0.84, 0.6, 0.4]
PRED, TARGET = torch.randn(2, 8, 3, generator=torch.Generator().manual_seed(9)), torch.randn(
    2, 8, 3, generator=torch.Generator().manual_seed(10))
RECORD = {"question": "Tom is a wumpus. Is Tom a rempus or a gerpus?", "answer": "Tom is a rempus.", "steps": [],
          "idx_to_symbol": ["Tom", "wumpus"], "edges": [[0, 1]], "root": 0, "target": 1, "neg_target": 1}
README = "<!-- results:kla -->\n<!-- /results:kla -->\n"
FILES: dict[str, dict[str, str | bytes]] = {  # resource name -> {file name: content} of a scratch folder
    "prosqa_empty": {"p_empty.json": ""},
    "prosqa_garbage": {"p_garbage.json": "\x00\x01garbage"},
    "prosqa_truncated": {"p_truncated.json": json.dumps([RECORD])[:40]},
    "prosqa_ints": {"p_ints.json": "[1, 2]"},
    "prosqa_edges": {"p_edges.json": json.dumps([RECORD, {**RECORD, "edges": [[1]]}])},
    "prosqa_root": {"p_root.json": json.dumps([{**RECORD, "root": "x"}])},
    "tok_list": {"tokenizer.json": "[1, 2]"},
    "tok_empty": {"tokenizer.json": ""},
    "tok_truncated": {"tokenizer.json": '{"kind": "ch'},
    "tok_utf8": {"tokenizer.json": b'{"kind": "\xff"}'},
    "tok_no_chars": {"tokenizer.json": '{"kind": "char"}'},
    "tok_chars_5": {"tokenizer.json": '{"kind": "char", "chars": 5}'},
    "tok_no_bpe": {"tokenizer.json": '{"kind": "bpe", "file": "bpe.json"}'},
    "tok_bad_bpe": {"tokenizer.json": '{"kind": "bpe", "file": "bpe.json"}', "bpe.json": "garbage"},
    "readme_empty_results": {"README.md": README, "results.json": "{}"},
    "readme_garbage_results": {"README.md": README, "results.json": "garbage"},
}


def _resource(name: str, tmp: Path) -> Any:
    """Build the argument ``Res(name)`` stands for, under ``tmp``: a file's path, or a folder's for ``tok_*``."""
    folder = tmp / name
    folder.mkdir()
    for file, content in FILES[name].items():
        if isinstance(content, bytes):
            (folder / file).write_bytes(content)
        else:
            (folder / file).write_text(content)
    return folder if name.startswith(("tok_", "readme_")) else folder / next(iter(FILES[name]))


resources = resources_fixture(_resource, folder="bad_input_methods")


def _smi(member: Any = MEMBER, nonmember: Any = NONMEMBER, forget: Any = FORGET, fit_kw: dict | None = None,
         **kw: Any) -> Any:
    return SMI(**{**FAST, **kw}).fit(member, nonmember, **(fit_kw or {})).estimate(forget)


def _mia(member: Any = (LOGITS_M, LABELS), nonmember: Any = (LOGITS_N, LABELS), forget: Any = (LOGITS, LABELS),
         **kw: Any) -> Any:
    return ThresholdMIA(**{"n_bootstrap": 20, **kw}).fit(member, nonmember).estimate(forget)


def _score(logits: Any, labels: Any = LABELS, kind: str = "loss") -> Any:
    return membership_score(logits, labels, kind=kind)


def _with_label(value: int) -> np.ndarray:
    return np.r_[LABELS[:19], value]


def _readme(folder: Path) -> Any:
    return update_readme(folder / "README.md", folder / "results.json")


Result = tuple[str, Callable[[], Any], Callable[[Any], bool]]

AUDIT_ROWS: list[Row] = [  # SMI, the threshold MIA and its scores
    ("SMI-complex-member", _smi, (MEMBER.astype(complex),), {}, TypeError, r"member_features.*complex"),
    ("SMI-complex-nonmember", _smi, (MEMBER, NONMEMBER.astype(complex)), {}, TypeError,
     r"nonmember_features.*complex"),
    ("SMI-complex-forget", _smi, (), {"forget": torch.as_tensor(FORGET).to(torch.complex64)}, TypeError,
     r"forget_features.*complex"),
    ("SMI-member_labels-0.5", _smi, (), {"fit_kw": {"member_labels": np.full(20, 0.5),
                                                    "nonmember_labels": np.zeros(20)}}, ValueError,
     r"member_labels.*integer"),
    ("SMI-seed-negative", _smi, (), {"seed": -1}, ValueError, r"\bseed\b"),
    ("SMI-seed-None", _smi, (), {"seed": None}, TypeError, r"\bseed\b"),
    ("SMI-seed-float", _smi, (), {"seed": 2.5}, TypeError, r"\bseed\b"),
    ("ThresholdMIA-debias-str", _mia, (), {"debias": "yes"}, TypeError, r"\bdebias\b"),
    ("ThresholdMIA-seed-negative", _mia, (), {"seed": -1}, ValueError, r"\bseed\b"),
    ("ThresholdMIA-logits-str", _mia, (("abc", LABELS),), {}, TypeError, r"member\.logits"),
    ("ThresholdMIA-labels-letters", _mia, ((LOGITS_M, np.array(list("abc"))[LABELS]),), {}, TypeError,
     r"member\.labels"),
    ("membership_score-extra-leading-dim", _score, (LOGITS[None],), {}, ValueError, r"\blogits\b.*\[n, C\]"),
    ("membership_score-1d", _score, (LOGITS[0],), {}, ValueError, r"\blogits\b"),
    ("membership_score-None", _score, (None,), {}, TypeError, r"\blogits\b"),
    ("membership_score-str", _score, ("abc",), {"kind": "scaled_confidence"}, TypeError, r"\blogits\b"),
    ("membership_score-bool", _score, (LOGITS > 0,), {}, TypeError, r"\blogits\b.*bool"),
    ("membership_score-complex", _score, (LOGITS.astype(complex),), {"kind": "scaled_confidence"}, TypeError,
     r"\blogits\b.*complex"),
    ("membership_score-label-minus-1", _score, (LOGITS, _with_label(-1)), {}, ValueError, r"\blabels\b.*\[0, 3\)"),
    ("membership_score-label-3-of-3", _score, (LOGITS, _with_label(3)), {"kind": "entropy"}, ValueError,
     r"\blabels\b.*\[0, 3\)"),
    ("membership_score-labels-length", _score, (LOGITS, LABELS[:19]), {"kind": "m_entropy"}, ValueError,
     r"\blabels\b"),
    ("membership_score-0-classes", _score, (LOGITS[:, :0],), {}, ValueError, r"\blogits\b.*class"),
    ("membership_score-scaled-1-class", _score, (LOGITS[:, :1], LABELS * 0), {"kind": "scaled_confidence"},
     ValueError, r"scaled_confidence.*2 classes"),
    ("balanced_threshold-empty-member", balanced_threshold, (np.array([]), np.ones(3)), {}, ValueError,
     r"\bmember\b"),
    ("balanced_threshold-nan-member", balanced_threshold, (np.array([0.5, math.nan]), np.ones(3)), {}, ValueError,
     r"\bmember\b.*NaN"),
    ("auc-empty-positive", auc, (np.array([]), np.ones(3)), {}, ValueError, r"\bpositive\b"),
    ("auc-nan-positive", auc, (np.array([0.5, math.nan]), np.ones(3)), {}, ValueError, r"\bpositive\b.*NaN"),
]
SCALING_ROWS: list[Row] = [
    ("fit_law-N-bool", fit_law, ("chinchilla",), {**SCALING, "N": N > 0}, TypeError, r"\bN\b.*bool"),
    ("fit_law-N-complex", fit_law, ("chinchilla",), {**SCALING, "N": N.astype(complex)}, TypeError,
     r"\bN\b.*complex"),
    ("fit_law-loss-bool", fit_law, ("chinchilla",), {**SCALING, "loss": LOSS > 0}, TypeError, r"\bloss\b"),
    ("fit_law-loss-complex", fit_law, ("chinchilla",), {**SCALING, "loss": LOSS.astype(complex)}, TypeError,
     r"\bloss\b"),
    ("fit_law-N-str", fit_law, ("chinchilla",), {**SCALING, "N": "abc"}, TypeError, r"\bN\b"),
    ("fit_law-seed-negative", fit_law, ("chinchilla",), {**SCALING, "n_bootstrap": 3, "seed": -1}, ValueError,
     r"\bseed\b"),
    ("LawFitter.predict-N-str", lambda: LawFitter("chinchilla", n_starts=2).fit(N, D, LOSS).predict("abc", D), (),
     {}, TypeError, r"\bN\b"),
    ("LawFitter.predict-N-length", lambda: LawFitter("chinchilla", n_starts=2).fit(N, D, LOSS).predict(N[:3], D),
     (), {}, ValueError, r"\bN\b.*\bD\b"),
]
REASONING_ROWS: list[Row] = [  # the probes, bounds, ProsQA generator and loader, word tokenizer
    ("symbolic_index-float-candidates", symbolic_index, (PROBS,), {"candidates": [0.5, 1.7]}, ValueError,
     r"candidates.*integer"),
    ("symbolic_index-duplicate-candidates", symbolic_index, (PROBS,), {"candidates": [1, 1]}, ValueError,
     r"candidates.*duplicate"),
    ("symbolic_index-str-candidates", symbolic_index, (PROBS,), {"candidates": "ab"}, TypeError, r"candidates"),
    ("symbolic_index-probs-None", symbolic_index, (None,), {}, TypeError, r"\bprobs\b"),
    ("symbolic_index-probs-str", symbolic_index, ("abc",), {}, TypeError, r"\bprobs\b"),
    ("decision_margin-float-candidates", decision_margin, (Z,), {"candidates": [0.5, 1.5]}, ValueError,
     r"candidates.*integer"),
    ("decision_margin-candidate-out-of-range", decision_margin, (Z,), {"candidates": [0, 5]}, ValueError,
     r"candidates.*\[0, 3\)"),
    ("decision_margin-candidate-negative", decision_margin, (Z,), {"candidates": [0, -1]}, ValueError,
     r"candidates.*\[0, 3\)"),
    ("decision_margin-logits-None", decision_margin, (None,), {}, TypeError, r"\blogits\b"),
    ("decision_margin-logits-str", decision_margin, ("abc",), {}, TypeError, r"\blogits\b"),
    ("decision_margin-logits-bool", decision_margin, (Z > 0,), {}, TypeError, r"\blogits\b.*bool"),
    ("decision_margin-logits-complex", decision_margin, (Z.to(torch.complex64),), {}, TypeError,
     r"\blogits\b.*complex"),
    ("margin_lower_bound-None", margin_lower_bound, (None,), {}, TypeError, r"\bi_s\b"),
    ("margin_lower_bound-str", margin_lower_bound, ("0.5",), {}, TypeError, r"\bi_s\b"),
    ("exploration_kl_lower_bound-None", exploration_kl_lower_bound, (None, 3), {}, TypeError, r"\bi_s\b"),
    ("noise_curve-nan-margin", noise_curve, (torch.tensor([0.0]),), {"margin": torch.tensor([math.nan])},
     ValueError, r"\bmargin\b.*finite"),
    ("noise_curve-empty-margin", noise_curve, (SIG,), {"margin": torch.zeros(0)}, ValueError, r"\bmargin\b"),
    ("noise_curve-margin-vs-scale", noise_curve, (SIG,), {"margin": MARG, "scale": torch.ones(3)}, ValueError,
     r"\bmargin\b.*\bscale\b"),
    ("noise_curve-sigma-None", noise_curve, (None,), {"margin": MARG}, TypeError, r"\bsigma\b"),
    ("noise_curve-margin-str", noise_curve, (SIG,), {"margin": "1"}, TypeError, r"\bmargin\b"),
    ("fit_noise_ratio-nan-ratio", fit_noise_ratio, (SIGMAS, [0.98, math.nan, 0.6, 0.4]), {}, ValueError,
     r"\bratios\b"),
    ("fit_noise_ratio-inf-sigma", fit_noise_ratio, ([0.5, 1.0, 2.0, math.inf], RATIOS), {}, ValueError,
     r"\bsigmas\b"),
    ("fit_noise_ratio-negative-sigma", fit_noise_ratio, ([-0.5, 1.0, 2.0, 4.0], RATIOS), {}, ValueError,
     r"\bsigmas\b.*>= 0"),
    ("fit_noise_ratio-ratios-None", fit_noise_ratio, (SIGMAS, None), {}, TypeError, r"\bratios\b"),
    ("fit_noise_ratio-sigmas-str", fit_noise_ratio, ("abcd", RATIOS), {}, TypeError, r"\bsigmas\b"),
    ("GeneratorConfig-negative-depth_weights", GeneratorConfig, (), {"depth_weights": (-1.0, 1.0, 1.0)},
     ValueError, r"depth_weights"),
    ("GeneratorConfig-n_nodes-None", GeneratorConfig, (), {"n_nodes": (5, None)}, TypeError, r"n_nodes"),
    ("generate_prosqa-config-str", generate_prosqa, (2,), {"seed": 0, "config": "small"}, TypeError, r"\bconfig\b"),
    ("generate_prosqa-config-int", generate_prosqa, (2,), {"seed": 0, "config": 1}, TypeError, r"\bconfig\b"),
    ("load_prosqa-empty", load_prosqa, ("train",), {"path": Res("prosqa_empty")}, ValueError, r"p_empty\.json"),
    ("load_prosqa-garbage", load_prosqa, ("train",), {"path": Res("prosqa_garbage")}, ValueError,
     r"p_garbage\.json"),
    ("load_prosqa-truncated", load_prosqa, ("train",), {"path": Res("prosqa_truncated")}, ValueError,
     r"p_truncated\.json"),
    ("load_prosqa-list-of-ints", load_prosqa, ("train",), {"path": Res("prosqa_ints")}, ValueError,
     r"p_ints\.json.*record 0"),
    ("load_prosqa-edge-pair", load_prosqa, ("train",), {"path": Res("prosqa_edges")}, ValueError,
     r"p_edges\.json.*record 1.*edges"),
    ("load_prosqa-root-str", load_prosqa, ("train",), {"path": Res("prosqa_root")}, ValueError,
     r"p_root\.json.*record 0.*root"),
    ("WordTokenizer-None", WordTokenizer, (None,), {}, TypeError, r"\bwords\b"),
    ("WordTokenizer-decode-float", lambda: prosqa_tokenizer().decode([1.7]), (), {}, ValueError, r"\bids\b"),
]
LOSS_ROWS: list[Row] = [
    ("fredf_loss-pred-None", fredf_loss, (None, TARGET), {}, TypeError, r"\bpred\b"),
    ("fredf_loss-pred-str", fredf_loss, ("abc", TARGET), {}, TypeError, r"\bpred\b"),
    ("fredf_loss-pred-list", fredf_loss, (PRED.tolist(), TARGET), {}, TypeError, r"\bpred\b"),
    ("ifr_weights-target-None", ifr_weights, (None,), {}, TypeError, r"\btarget\b"),
    ("ifr_weights-target-list", ifr_weights, (TARGET.tolist(),), {}, TypeError, r"\btarget\b"),
    ("ifr_weights-target-complex", ifr_weights, (TARGET.to(torch.complex64),), {}, TypeError,
     r"\btarget\b.*complex"),
    ("ifr_weights-target-2d", ifr_weights, (TARGET[0],), {}, ValueError, r"\btarget\b.*\[B, H, C\]"),
    ("ifr_weights-pred-str", ifr_weights, (TARGET,), {"pred": "abc"}, TypeError, r"\bpred\b"),
    ("ifr_weights-pred-2d", ifr_weights, (TARGET,), {"pred": TARGET[0]}, ValueError, r"\bpred\b"),
    ("spectral_band_errors-batch-0", spectral_band_errors, (PRED[:0], TARGET[:0]), {}, ValueError,
     r"pred and target"),
    ("spectral_band_errors-bands-None", spectral_band_errors, (PRED, TARGET), {"bands": None}, TypeError,
     r"\bbands\b"),
    ("frele_loss-eta-tiny", frele_loss, (PRED, TARGET), {"eta": 1e-40}, ValueError, r"\beta\b.*1e-06"),
    ("frele_loss-ifr-str", frele_loss, (PRED, TARGET), {"ifr": "yes"}, TypeError, r"\bifr\b"),
]
DATA_ROWS: list[Row] = [  # tokenizers, text, data files and update_readme
    ("available_corpus-fallback", available_corpus, ("tinyshakespeare",), {"fallback": "bogus"}, ValueError,
     r"\bfallback\b"),
    ("ByteTokenizer-decode-float", ByteTokenizer().decode, ([1.7],), {}, ValueError, r"\bids\b.*integer"),
    ("CharTokenizer-decode-float", CharTokenizer(list("abc")).decode, ([1.7],), {}, ValueError,
     r"\bids\b.*integer"),
    ("ByteTokenizer-decode-str", ByteTokenizer().decode, (["a"],), {}, TypeError, r"\bids\b"),
    ("CharTokenizer-decode-None", CharTokenizer(list("abc")).decode, (None,), {}, TypeError, r"\bids\b"),
    ("ByteTokenizer-encode-None", ByteTokenizer().encode, (None,), {}, TypeError, r"\btext\b"),
    ("ByteTokenizer-encode-int", ByteTokenizer().encode, (123,), {}, TypeError, r"\btext\b"),
    ("CharTokenizer-encode-None", CharTokenizer(list("abc")).encode, (None,), {}, TypeError, r"\btext\b"),
    ("CharTokenizer-chars-None", CharTokenizer, (None,), {}, TypeError, r"\bchars\b"),
    ("make_tokenizer-char-text-int", make_tokenizer, ("char",), {"text": 123}, TypeError, r"\btext\b"),
    ("load_tokenizer-json-list", load_tokenizer, (Res("tok_list"),), {}, ValueError, r"tokenizer\.json.*object"),
    ("load_tokenizer-empty", load_tokenizer, (Res("tok_empty"),), {}, ValueError, r"tokenizer\.json"),
    ("load_tokenizer-truncated", load_tokenizer, (Res("tok_truncated"),), {}, ValueError, r"tokenizer\.json"),
    ("load_tokenizer-invalid-utf8", load_tokenizer, (Res("tok_utf8"),), {}, ValueError, r"tokenizer\.json.*UTF-8"),
    ("load_tokenizer-char-without-chars", load_tokenizer, (Res("tok_no_chars"),), {}, ValueError,
     r"tokenizer\.json.*'chars'"),
    ("load_tokenizer-chars-int", load_tokenizer, (Res("tok_chars_5"),), {}, ValueError,
     r"tokenizer\.json.*'chars'"),
    ("load_tokenizer-bpe-missing", load_tokenizer, (Res("tok_no_bpe"),), {}, FileNotFoundError, r"bpe\.json"),
    ("load_tokenizer-bpe-garbage", load_tokenizer, (Res("tok_bad_bpe"),), {}, ValueError, r"bpe\.json"),
    ("load_tokenizer-directory-None", load_tokenizer, (None,), {}, TypeError, r"\bdirectory\b"),
    ("data_path-root-int", data_path, ("tinyshakespeare",), {"root": 5}, TypeError, r"\broot\b"),
    ("TextBatches-step-str", TextBatches(torch.arange(50), batch_size=2, seq_len=4), ("a",), {}, TypeError,
     r"\bstep\b"),
    ("TextBatches-step-float", TextBatches(torch.arange(50), batch_size=2, seq_len=4), (2.5,), {}, TypeError,
     r"\bstep\b"),
    ("update_readme-results-without-papers", _readme, (Res("readme_empty_results"),), {}, ValueError,
     r"results\.json.*'papers'"),
    ("update_readme-results-garbage", _readme, (Res("readme_garbage_results"),), {}, ValueError, r"results\.json"),
]


def _nan_audit(result: Any) -> bool:
    """The documented refusal of a non-identifiable audit: NaN, range [0, 1], identifiable False."""
    return math.isnan(result.forgetting_rate) and (result.low, result.high) == (0.0, 1.0) and not result.identifiable


def _same_rate(scaled: Any) -> bool:
    plain = _smi()
    return scaled.identifiable and abs(scaled.forgetting_rate - plain.forgetting_rate) < 1e-9


AUDIT_RESULTS: list[Result] = [
    ("SMI-all-features-x1e-40", lambda: _smi(MEMBER * 1e-40, NONMEMBER * 1e-40, FORGET * 1e-40), _same_rate),
    ("ThresholdMIA-member-equals-nonmember", lambda: _mia(nonmember=(LOGITS_M, LABELS)), _nan_audit),
    ("ThresholdMIA-one-class", lambda: _mia(member=(LOGITS_M[:, :1], LABELS * 0), nonmember=(LOGITS_N[:, :1],
                                                                                           LABELS * 0),
                                            forget=(LOGITS[:, :1], LABELS * 0)), _nan_audit),
]
REASONING_RESULTS: list[Result] = [  # the bounds: finite where they are, inf (documented) where they overflow
    ("kl_extremal-huge-n_options", lambda: kl_extremal(10**400, 0.1),
     lambda r: math.isclose(r, -math.log(0.1), rel_tol=1e-12)),
    ("compounding_error_bound-overflow-is-inf", lambda: compounding_error_bound(1e200, 4, 8, 0.1),
     lambda r: r == math.inf),
    ("compounding_error_bound-L2-1e6-steps-is-inf", lambda: compounding_error_bound(2.0, 10**6, 8, 0.1),
     lambda r: r == math.inf),
    ("compounding_error_bound-one-step-huge-L", lambda: compounding_error_bound(1e200, 1, 8, 0.1),
     lambda r: math.isclose(r, 8 * 0.1 * 0.1, rel_tol=1e-12)),
    ("compounding_error_bound-huge-L-no-noise", lambda: compounding_error_bound(1e200, 4, 8, 0.0),
     lambda r: r == 0.0),
]
DATA_RESULTS: list[Result] = [
    ("TextBatches-step-2**70", lambda: TextBatches(torch.arange(50), batch_size=2, seq_len=4)(2**70),
     lambda r: tuple(r[0].shape) == (2, 4) and torch.equal(r[0][:, 1:], r[1][:, :-1])),
]
ROWS = AUDIT_ROWS + SCALING_ROWS + REASONING_ROWS + LOSS_ROWS + DATA_ROWS
RESULTS = AUDIT_RESULTS + REASONING_RESULTS + DATA_RESULTS


@pytest.mark.parametrize(("fn", "args", "kwargs", "exc", "pattern"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_input_raises_a_clear_error(fn, args, kwargs, exc, pattern, resources, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("PAPERLAB_DATA", raising=False)
    check_row(fn, args, kwargs, exc, pattern, resources, tmp_path, monkeypatch)


@pytest.mark.parametrize(("fn", "check"), [r[1:] for r in RESULTS], ids=[r[0] for r in RESULTS])
def test_degenerate_input_returns_the_documented_result(fn, check) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotSeparableWarning)  # the documented warning of a NaN audit
        result = fn()
    assert check(result), repr(result)


def test_every_row_has_a_unique_id() -> None:
    ids = [r[0] for r in ROWS] + [r[0] for r in RESULTS]
    assert len(ids) == len(set(ids))
