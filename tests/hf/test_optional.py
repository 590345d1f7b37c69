"""``import paperlab`` never loads transformers; without the extra ``paperlab.hf`` still imports (the wheel check
imports every module) and using it raises ImportError naming ``pip install 'paperlab[hf]'``."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("transformers")

SCRIPT = textwrap.dedent("""
    import sys
    import paperlab, paperlab.models
    assert "transformers" not in sys.modules, "import paperlab loaded transformers"
    sys.modules["transformers"] = None  # as if the extra were not installed: importing it raises ImportError
    import paperlab.hf as hf
    from paperlab.hf import cache, configuration, convert, fla, modeling  # every module imports
    assert hf.AVAILABLE is False
    for make in (hf.PaperlabConfig, lambda: hf.PaperlabForCausalLM.from_pretrained("x"), hf.register):
        try:
            make()
        except ImportError as err:
            assert "pip install 'paperlab[hf]'" in str(err), err
        else:
            raise AssertionError(f"{make} did not raise")
    print("ok")
""")


def test_without_transformers_the_package_imports_and_names_the_extra() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_importing_paperlab_hf_registers_the_auto_classes() -> None:
    from transformers import AutoConfig, AutoModelForCausalLM

    from paperlab.hf import PaperlabConfig, PaperlabForCausalLM

    assert AutoConfig.for_model("paperlab").__class__ is PaperlabConfig
    assert AutoModelForCausalLM.from_config(PaperlabConfig(vocab_size=11, d_model=8, n_layers=1, n_heads=2,
                                                           mixer="gdn")).__class__ is PaperlabForCausalLM
