"""Cases for checkpoints, atomic io, the data registry, text loaders and tokenizers, load_run and update_readme."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from _probe.common import (
    RAISE,
    add,
    always,
    hp_cases,
    write,
)
from _probe.training import _net


# ------------------------------------------------------------------------------------------ checkpoints, io
def checkpoint_cases() -> None:
    from paperlab.checkpoint import load_checkpoint, restore_checkpoint, save_checkpoint

    def good(name: str) -> Path:
        return save_checkpoint(Path("files") / name, model=_net())

    sc = "save_checkpoint"
    add(sc, "baseline", "an MLP", lambda: good("ok.pt"), "", always)
    for klass, desc, kw, names, note in (
            ("type", "model None", {"model": None}, r"\bmodel\b", ""),
            ("type", "model str", {"model": "abc"}, r"\bmodel\b", ""),
            ("type", "optimizer str", {"optimizer": "abc"}, r"optimizer", ""),
            ("type", "scheduler str", {"scheduler": "abc"}, r"scheduler", ""),
            ("type", "step 'a'", {"step": "a"}, r"\bstep\b", ""),
            ("hyperparam", "step nan", {"step": math.nan}, r"\bstep\b", ""),
            ("hyperparam", "step 2.7", {"step": 2.7}, r"\bstep\b", "silently truncated to 2"),
            ("hyperparam", "step -1", {"step": -1}, r"\bstep\b", "ambiguous: a negative step count"),
            ("type", "extra holds an object()", {"extra": {"a": object()}}, r"extra|object",
             "writes a file load_checkpoint cannot read (weights_only)"),
            ("type", "extra holds a lambda", {"extra": {"f": lambda: 0}}, r"extra|lambda|function", ""),
            ("type", "extra a list", {"extra": [1, 2]}, r"extra", "ambiguous: documented as a dict")):
        add(sc, klass, desc, lambda kw=kw: save_checkpoint(Path("files") / "s.pt", **{"model": _net(), **kw}),
            names, RAISE, note)
    add(sc, "file", "path is a folder", lambda: save_checkpoint(write("dir/x", "").parent, model=_net()), r"files/dir")
    add(sc, "type", "path None", lambda: save_checkpoint(None, model=_net()), r"\bpath\b")
    lc = "load_checkpoint"
    add(lc, "baseline", "a saved MLP", lambda: load_checkpoint(good("ok2.pt")), "", always)

    def truncated() -> Path:
        raw = good("full.pt").read_bytes()
        return write("truncated.pt", raw[: len(raw) // 2])

    def saved(name: str, obj: Any) -> Path:
        path = Path("files") / name
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(obj, path)
        return path

    for desc, make, names in (("missing", lambda: Path("files/none.pt"), r"none\.pt"),
                              ("empty", lambda: write("empty.pt", b""), r"empty\.pt"),
                              ("garbage", lambda: write("garbage.pt", b"\x00garbage" * 10), r"garbage\.pt"),
                              ("truncated", truncated, r"truncated\.pt"),
                              ("a JSON file", lambda: write("json.pt", '{"format_version": 2}'), r"json\.pt"),
                              ("torch.save of a list", lambda: saved("list.pt", [1, 2]), r"list\.pt"),
                              ("format_version 3", lambda: saved("v3.pt", {"format_version": 3}), r"v3\.pt"),
                              ("format_version 2 without checksum", lambda: saved("v2.pt", {"format_version": 2}),
                               r"v2\.pt"),
                              ("a folder", lambda: write("ckdir/x", "").parent, r"ckdir")):
        add(lc, "file", desc, lambda make=make: load_checkpoint(make()), names)
    add(lc, "type", "path None", lambda: load_checkpoint(None), r"\bpath\b")
    rc = "restore_checkpoint"
    v1 = {"format_version": 1, "step": 0, "extra": {}}
    for desc, make, kw, names in (
            ("version-1 file without 'model'", lambda: saved("v1.pt", v1), {}, r"v1\.pt|model"),
            ("version-1 file with a bad rng_cpu", lambda: saved("v1rng.pt", {**v1, "model": _net().state_dict(),
                                                                            "optimizer": None, "scheduler": None,
                                                                            "rng_cpu": torch.zeros(3)}), {},
             r"v1rng\.pt|rng"),
            ("another model's checkpoint", lambda: save_checkpoint(Path("files/lin.pt"), model=nn.Linear(3, 3)), {},
             r"lin\.pt"),
            ("optimizer asked, none saved", lambda: good("noopt.pt"),
             {"optimizer": torch.optim.SGD(_net().parameters(), lr=0.1)}, r"noopt\.pt|optimizer"),
            ("optimizer with other parameters", lambda: save_checkpoint(Path("files/opt.pt"), model=_net(),
                                                                         optimizer=torch.optim.SGD(
                                                                             _net().parameters(), lr=0.1)),
             {"optimizer": torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)}, r"opt\.pt|optimizer")):
        add(rc, "file", desc, lambda make=make, kw=kw: restore_checkpoint(make(), model=_net(), **kw), names)


def io_cases() -> None:
    from paperlab.io import atomic_open, atomic_write_bytes, atomic_write_json, atomic_write_text

    def opened(path: Any = "files/a.bin", mode: Any = "wb") -> None:
        with atomic_open(path, mode) as f:
            f.write(b"x" if "b" in str(mode) else "x")

    add("atomic_open", "baseline", "mode wb", lambda: opened(), "", always)
    hp_cases("atomic_open", opened, "mode", bad=("a", "r", "w+", None, "rb"))
    for desc, path, names in (("None", None, r"\bpath\b"), ("parent is a file", lambda: write("plain", "x") / "a.bin",
                                                            r"plain"),
                              ("an existing folder", lambda: write("afolder/x", "").parent, r"afolder")):
        add("atomic_open", "file" if desc != "None" else "type", f"path {desc}",
            lambda path=path: opened(path() if callable(path) else path), names)
    add("atomic_write_bytes", "type", "data str", lambda: atomic_write_bytes("files/b.bin", "str"), r"\bdata\b")
    add("atomic_write_bytes", "type", "data None", lambda: atomic_write_bytes("files/b.bin", None), r"\bdata\b")
    for desc, value in (("None", None), ("int", 5), ("bytes", b"x")):
        add("atomic_write_text", "type", f"text {desc}", lambda value=value: atomic_write_text("files/t.txt", value),
            r"\btext\b")
    aj = "atomic_write_json"

    def dumped(obj: Any) -> Any:
        return json.loads(atomic_write_json("files/j.json", obj).read_text())

    add(aj, "baseline", "a dict", lambda: dumped({"a": [1, 2.5]}), "", lambda r: r == {"a": [1, 2.5]})
    circular: dict[str, Any] = {}
    circular["self"] = circular
    for klass, desc, obj, names, check in (
            ("type", "a set", {"a": {1, 2}}, r"\bset\b", RAISE), ("type", "bytes", {"a": b"x"}, r"bytes", RAISE),
            ("type", "a tuple key", {(1, 2): 3}, r"key|tuple", RAISE), ("type", "an object()", {"a": object()},
                                                                       r"object", RAISE),
            ("degenerate", "a circular dict", circular, r"circular|recurs", RAISE),
            ("nonfinite", "nan and inf (documented: null)", {"a": math.nan, "b": [math.inf]}, r"nan",
             lambda r: r == {"a": None, "b": [None]}),
            ("nonfinite", "a numpy nan", {"a": np.array([1.0, math.nan])}, r"nan", lambda r: r == {"a": [1.0, None]}),
            ("magnitude", "int 10**400", {"a": 10**400}, r"int", lambda r: r == {"a": 10**400}),
            ("type", "a tensor", {"a": torch.tensor([1.0, 2.0])}, r"tensor", lambda r: r == {"a": [1.0, 2.0]}),
            ("type", "a Path", {"a": Path("x/y")}, r"path", lambda r: r == {"a": "x/y"})):
        add(aj, klass, desc, lambda obj=obj: dumped(obj), names, check)


# ------------------------------------------------------------------------------------------------- the data
def data_cases() -> None:
    from paperlab.data import get_dataset, get_file, path
    from paperlab.data.text import TextBatches, available_corpus, load_text
    from paperlab.data.tokenizers import ByteTokenizer, CharTokenizer, load_tokenizer, make_tokenizer
    from paperlab.models.lm_train import load_run
    from paperlab.report import update_readme

    for desc, fn, names in (("get_dataset('nope')", lambda: get_dataset("nope"), r"dataset|nope"),
                            ("get_dataset(None)", lambda: get_dataset(None), r"dataset"),
                            ("get_dataset(5)", lambda: get_dataset(5), r"dataset"),
                            ("get_file('wikitext2') (two files)", lambda: get_file("wikitext2"), r"\bfile\b"),
                            ("get_file('wikitext2', 'bogus')", lambda: get_file("wikitext2", "bogus"), r"bogus|file"),
                            ("path('tinyshakespeare', root=5)", lambda: path("tinyshakespeare", root=5), r"\broot\b")):
        add("data.registry", "type" if "None" in desc or "5" in desc else "hyperparam", desc, fn, names)

    def root_with(name: str, rel: str, content: bytes | str | None) -> Path:
        root = Path("files") / f"data_{name}"
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            target.mkdir(exist_ok=True)
        elif isinstance(content, str):
            target.write_text(content)
        else:
            target.write_bytes(content)
        return root

    shakespeare = "text/tinyshakespeare.txt"
    for desc, dataset, rel, content, names in (
            ("missing", "tinyshakespeare", "text/other.txt", "x", r"tinyshakespeare\.txt"),
            ("empty", "tinyshakespeare", shakespeare, "", r"tinyshakespeare\.txt"),
            ("truncated", "tinyshakespeare", shakespeare, "First Citizen:\nBefore we proceed", r"tinyshakespeare\.txt"),
            ("garbage", "tinyshakespeare", shakespeare, b"\xff\xfe\x00garbage", r"tinyshakespeare\.txt"),
            ("a folder in its place", "tinyshakespeare", shakespeare, None, r"tinyshakespeare\.txt"),
            ("gzip file garbage", "ETTm1", "timeseries/ETTm1.csv.gz", b"not gzip", r"ETTm1\.csv\.gz")):
        add("data.path", "file", f"{dataset}: {desc}", lambda dataset=dataset, rel=rel, content=content, desc=desc:
            path(dataset, root=root_with(desc.replace(" ", "_"), rel, content)), names)
    add("data.path", "file", "verify=False on a garbage file (documented)", lambda: path(
        "tinyshakespeare", root=root_with("noverify", shakespeare, "junk"), verify=False), r"tiny", always)
    lt = "load_text"
    add(lt, "baseline", "pydoc train", lambda: load_text("pydoc"), "", lambda r: isinstance(r, str) and len(r) > 0)
    hp_cases(lt, lambda **kw: load_text(**kw), "name", bad=("nope", None))
    hp_cases(lt, lambda **kw: load_text(**kw), "split", bad=("test", None))
    add(lt, "file", "tinyshakespeare truncated", lambda: load_text("tinyshakespeare", root=root_with(
        "lt", shakespeare, "First Citizen:")), r"tinyshakespeare")
    add("available_corpus", "hyperparam", "name='nope'", lambda: available_corpus("nope"), r"name|nope")
    add("available_corpus", "hyperparam", "fallback='bogus' when the data is missing", lambda: available_corpus(
        "tinyshakespeare", fallback="bogus"), r"fallback", RAISE, "ambiguous: the fallback is returned unchecked")
    tb = "TextBatches"
    tokens = torch.arange(50)

    def batches(step: int | None = 0, **kw: Any) -> Any:
        b = TextBatches(**{"tokens": tokens, "batch_size": 2, "seq_len": 4, **kw})
        return b if step is None else b(step)

    add(tb, "baseline", "50 tokens, 2x4", lambda: batches(), "", lambda r: tuple(r[0].shape) == (2, 4))
    for klass, desc, value in (("type", "None", None), ("type", "list", list(range(50))),
                               ("dtype", "float", tokens.float()), ("dtype", "int32", tokens.int()),
                               ("shape", "2-D", tokens.view(5, 10)), ("empty", "0 tokens", tokens[:0]),
                               ("empty", "4 tokens (= seq_len)", tokens[:4])):
        add(tb, klass, f"tokens {desc}", lambda value=value: batches(tokens=value), r"tokens|seq_len")
    for name, bad in (("batch_size", (0, -1, True, 2.5)), ("seq_len", (0, True)), ("seed", (-1, True)),
                      ("world_size", (0,)), ("rank", (1, -1))):
        hp_cases(tb, lambda **kw: batches(step=None, **kw), name, bad=bad,
                 names=r"rank|world_size" if name in ("rank", "world_size") else None)
    add(tb, "mismatch", "batch_size 3, world_size 2", lambda: batches(step=None, batch_size=3, world_size=2, rank=0),
        r"batch_size|world_size")
    for klass, desc, step, check in (("type", "'a'", "a", RAISE), ("type", "None", None, RAISE),
                                     ("magnitude", "2**70", 2**70, lambda r: tuple(r[0].shape) == (2, 4)),
                                     ("hyperparam", "-1", -1, lambda r: tuple(r[0].shape) == (2, 4)),
                                     ("hyperparam", "2.5", 2.5, RAISE)):
        add(tb, klass, f"call step={desc}", lambda step=step: TextBatches(tokens, batch_size=2, seq_len=4)(step),
            r"\bstep\b", check, "ambiguous: a negative step is a valid seed offset" if desc == "-1" else "")
    tk = "make_tokenizer"
    add(tk, "baseline", "char on 'abc'", lambda: make_tokenizer("char", text="abc"), "", always)
    for desc, kw, names in (("kind='word'", {"kind": "word"}, r"kind"), ("kind=None", {"kind": None}, r"kind"),
                            ("char without text", {"kind": "char"}, r"text"),
                            ("char text ''", {"kind": "char", "text": ""}, r"text"),
                            ("char text 123", {"kind": "char", "text": 123}, r"text"),
                            ("bpe vocab_size=100", {"kind": "bpe", "text": "abc", "vocab_size": 100}, r"vocab_size"),
                            ("bpe vocab_size=True", {"kind": "bpe", "text": "abc", "vocab_size": True}, r"vocab_size"),
                            ("bpe text None", {"kind": "bpe"}, r"text")):
        add(tk, "type" if "None" in desc or "123" in desc else "hyperparam", desc, lambda kw=kw: make_tokenizer(**kw),
            names)
    for entry, tok in (("ByteTokenizer", ByteTokenizer()), ("CharTokenizer", CharTokenizer(list("abc")))):
        for klass, desc, fn, names, check, note in (
                ("hyperparam", "decode([vocab_size])", lambda tok=tok: tok.decode([tok.vocab_size]), r"ids|token",
                 RAISE, ""),
                ("hyperparam", "decode([-1])", lambda tok=tok: tok.decode([-1]), r"ids|token", RAISE, ""),
                ("type", "decode(['a'])", lambda tok=tok: tok.decode(["a"]), r"ids|token", RAISE, ""),
                ("dtype", "decode([1.7])", lambda tok=tok: tok.decode([1.7]), r"ids|token", RAISE,
                 "silently truncated to id 1"),
                ("type", "decode(None)", lambda tok=tok: tok.decode(None), r"ids|token", RAISE, ""),
                ("type", "decode(tensor [1, 2])", lambda tok=tok: tok.decode(torch.tensor([1, 2])), r"ids", always, ""),
                ("type", "encode(None)", lambda tok=tok: tok.encode(None), r"text", RAISE, ""),
                ("type", "encode(123)", lambda tok=tok: tok.encode(123), r"text", RAISE, "")):
            add(entry, klass, desc, fn, names, check, note)
    add("CharTokenizer", "hyperparam", "encode an unknown char", lambda: CharTokenizer(list("abc")).encode("z"),
        r"'z'|vocab")
    for desc, chars in (("['ab']", ["ab"]), ("[]", []), ("['a', 'a']", ["a", "a"]), ("None", None)):
        add("CharTokenizer", "type" if chars is None else "degenerate", f"chars={desc}",
            lambda chars=chars: CharTokenizer(chars), r"chars")
    lk = "load_tokenizer"

    def tok_dir(name: str, spec: str | bytes | None, bpe: str | None = None) -> Path:
        folder = Path("files") / f"tok_{name}"
        folder.mkdir(parents=True, exist_ok=True)
        if isinstance(spec, bytes):
            (folder / "tokenizer.json").write_bytes(spec)
        elif spec is not None:
            (folder / "tokenizer.json").write_text(spec)
        if bpe is not None:
            (folder / "bpe.json").write_text(bpe)
        return folder

    add(lk, "baseline", "a saved char tokenizer", lambda: load_tokenizer(CharTokenizer(list("abc")).save(
        Path("files") / "tok_ok").parent), "", lambda t: t.vocab_size == 3)
    for desc, spec, bpe in (("empty", "", None), ("garbage", "\x00garbage", None), ("truncated", '{"kind": "ch', None),
                            ("a JSON list", "[1, 2]", None), ("kind 'word'", '{"kind": "word"}', None),
                            ("no kind", "{}", None), ("char without chars", '{"kind": "char"}', None),
                            ("char chars ''", '{"kind": "char", "chars": ""}', None),
                            ("char chars 5", '{"kind": "char", "chars": 5}', None),
                            ("bpe without bpe.json", '{"kind": "bpe", "file": "bpe.json"}', None),
                            ("bpe with garbage bpe.json", '{"kind": "bpe", "file": "bpe.json"}', "garbage"),
                            ("invalid UTF-8", b'{"kind": "\xff"}', None)):
        add(lk, "file", f"tokenizer.json {desc}", lambda desc=desc, spec=spec, bpe=bpe: load_tokenizer(
            tok_dir(desc.replace(" ", "_").replace("'", ""), spec, bpe)),
            r"tokenizer\.json|bpe\.json|tok_|\bkind\b|\bchars\b")
    add(lk, "file", "tokenizer.json is a folder", lambda: load_tokenizer(tok_dir("isdir", None) if (
        Path("files/tok_isdir/tokenizer.json").mkdir(parents=True, exist_ok=True) is None) else None),
        r"tokenizer\.json")
    add(lk, "type", "directory None", lambda: load_tokenizer(None), r"director")
    lr = "load_run"
    cfg = {"vocab_size": 11, "d_model": 8, "n_layers": 1, "n_heads": 2, "mixer": "attention", "mlp_ratio": 2.0}

    def run_dir(name: str, config: str | None, checkpoint: nn.Module | None = None) -> Path:
        folder = Path("files") / f"run_{name}"
        folder.mkdir(parents=True, exist_ok=True)
        if config is not None:
            (folder / "config.json").write_text(config)
        if checkpoint is not None:
            save_ck(folder / "checkpoint.pt", checkpoint)
        return folder

    def save_ck(p: Path, model: nn.Module) -> None:
        from paperlab.checkpoint import save_checkpoint

        save_checkpoint(p, model=model)

    for desc, config, model, names in (
            ("no config.json", None, None, r"config\.json"), ("config.json garbage", "garbage", None, r"config\.json"),
            ("config.json {}", "{}", None, r"config\.json|model"),
            ("no checkpoint.pt", json.dumps({"model": cfg}), None, r"checkpoint\.pt"),
            ("config with vocab_size 0", json.dumps({"model": {**cfg, "vocab_size": 0}}), None, r"vocab_size"),
            ("config with an unknown key", json.dumps({"model": {**cfg, "bogus": 1}}), None, r"bogus"),
            ("checkpoint of another model", json.dumps({"model": cfg}), nn.Linear(3, 3), r"checkpoint\.pt|match")):
        add(lr, "file", desc, lambda desc=desc, config=config, model=model: load_run(run_dir(
            desc.replace(" ", "_").replace(".", "_").replace("{}", "empty"), config, model)), names)
    ur = "update_readme"
    readme = "<!-- results:kla -->\n<!-- /results:kla -->\n"
    for desc, readme_text, results, names in (
            ("results missing", readme, None, r"results\.json"),
            ("results garbage", readme, "garbage", r"results\.json"),
            ("results {}", readme, "{}", r"results\.json|papers"),
            ("README missing", None, '{"papers": [], "mode": "quick"}', r"README")):
        def go(readme_text: str | None = readme_text, results: str | None = results, desc: str = desc) -> Any:
            folder = Path("files") / f"ur_{desc.replace(' ', '_').replace('{}', 'empty')}"
            folder.mkdir(parents=True, exist_ok=True)
            if readme_text is not None:
                (folder / "README.md").write_text(readme_text)
            if results is not None:
                (folder / "results.json").write_text(results)
            return update_readme(folder / "README.md", folder / "results.json")

        add(ur, "file", desc, go, names)
