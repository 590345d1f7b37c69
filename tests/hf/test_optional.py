"""``import paperlab`` never loads transformers; without the extra ``paperlab.hf`` still imports (the wheel check
imports every module) and using it raises ImportError naming ``pip install 'paperlab[hf]'``."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

pytest.importorskip("transformers")

MODULES = ("cache", "configuration", "convert", "fla", "modeling")


def test_importing_paperlab_and_its_models_loads_no_transformers() -> None:
    code = "import sys, paperlab, paperlab.models; print('transformers' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr[-2000:]


def test_without_transformers_the_package_imports_and_names_the_extra(monkeypatch) -> None:
    import paperlab
    import paperlab.hf  # noqa: F401  (the real modules, which monkeypatch puts back afterwards)

    # Import fresh copies of paperlab.hf with transformers unimportable; the real ones come back after the test.
    for name in [m for m in sys.modules if m == "paperlab.hf" or m.startswith("paperlab.hf.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "transformers", None)  # importing it now raises ImportError
    monkeypatch.setattr(paperlab, "hf", None, raising=False)
    hf = importlib.import_module("paperlab.hf")
    for name in MODULES:
        importlib.import_module(f"paperlab.hf.{name}")
    assert hf.AVAILABLE is False
    for make in (hf.PaperlabConfig, lambda: hf.PaperlabForCausalLM.from_pretrained("x"), hf.register,
                 lambda: hf.PaperlabCache(None)):
        with pytest.raises(ImportError, match=r"pip install 'paperlab\[hf\]'"):
            make()


def test_importing_paperlab_hf_registers_the_auto_classes() -> None:
    from transformers import AutoConfig, AutoModelForCausalLM

    from paperlab.hf import PaperlabConfig, PaperlabForCausalLM

    assert AutoConfig.for_model("paperlab").__class__ is PaperlabConfig
    assert AutoModelForCausalLM.from_config(PaperlabConfig(vocab_size=11, d_model=8, n_layers=1, n_heads=2,
                                                           mixer="gdn")).__class__ is PaperlabForCausalLM
