"""Text corpora, tokenizers and window batching."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from paperlab.data import DatasetNotFoundError, registry
from paperlab.data.text import TextBatches, encode_text, load_text
from paperlab.data.tokenizers import (
    BPETokenizer,
    ByteTokenizer,
    CharTokenizer,
    load_tokenizer,
    make_tokenizer,
)

SAMPLE = "To be, or not to be: that is the question.\nWhether 'tis nobler — in the mind — to suffer\n"



def test_pydoc_corpus_is_builtin_and_split_90_10() -> None:
    train, val = load_text("pydoc", "train"), load_text("pydoc", "val")
    assert len(train) > 100_000 and abs(len(train) / (len(train) + len(val)) - 0.9) < 1e-4
    assert load_text("pydoc", "train") == train  # deterministic


def test_file_corpora_splits(tmp_path, monkeypatch) -> None:
    (tmp_path / "text" / "wikitext-2").mkdir(parents=True)
    (tmp_path / "text" / "tinyshakespeare.txt").write_text("a" * 90 + "b" * 10, encoding="utf-8")
    (tmp_path / "text" / "wikitext-2" / "test.txt").write_text("train part", encoding="utf-8")
    (tmp_path / "text" / "wikitext-2" / "valid.txt").write_text("valid part", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in ("tinyshakespeare", "wikitext2"):
        ds = registry.DATASETS[name]
        files = {role: dataclasses.replace(f, sha256=registry.sha256_of(tmp_path / f.relpath))
                 for role, f in ds.files.items()}  # the registry checks every file it resolves
        monkeypatch.setitem(registry.DATASETS, name, dataclasses.replace(ds, files=files))
    assert load_text("tinyshakespeare", "train", root=tmp_path) == "a" * 90
    assert load_text("tinyshakespeare", "val", root=tmp_path) == "b" * 10
    assert load_text("wikitext2", "train", root=tmp_path) == "train part"
    assert load_text("wikitext2", "val", root=tmp_path) == "valid part"


def test_bad_corpus_and_missing_file(tmp_path, monkeypatch) -> None:
    with pytest.raises(ValueError, match="name"):
        load_text("enwik8")
    with pytest.raises(ValueError, match="split"):
        load_text("pydoc", "test")
    monkeypatch.delenv("PAPERLAB_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(DatasetNotFoundError, match="tinyshakespeare"):
        load_text("tinyshakespeare", root=tmp_path)


@pytest.mark.parametrize("kind", ["byte", "char", "bpe"])
def test_tokenizers_round_trip_and_reload(kind: str, tmp_path) -> None:
    tok = make_tokenizer(kind, text=SAMPLE * 20, vocab_size=300)
    ids = tok.encode(SAMPLE)
    assert tok.decode(ids) == SAMPLE
    assert all(0 <= i < tok.vocab_size for i in ids)
    tok.save(tmp_path)
    again = load_tokenizer(tmp_path)
    assert type(again) is type(tok) and again.vocab_size == tok.vocab_size and again.encode(SAMPLE) == ids


def test_tokenizer_specifics() -> None:
    assert ByteTokenizer().encode("é") == [195, 169] and ByteTokenizer().vocab_size == 256
    char = CharTokenizer.fit("banana")
    assert char.chars == ["a", "b", "n"] and char.encode("nab") == [2, 0, 1]
    with pytest.raises(ValueError, match="not in the vocabulary"):
        char.encode("x")
    with pytest.raises(ValueError, match="token ids"):
        char.decode([3])
    bpe = BPETokenizer.train(SAMPLE * 50, vocab_size=300)
    assert len(bpe.encode(SAMPLE)) < len(SAMPLE.encode())  # merges compress
    with pytest.raises(ValueError, match="fitted"):
        make_tokenizer("char")
    with pytest.raises(ValueError, match="kind"):
        make_tokenizer("wordpiece")


def test_batches_are_contiguous_seeded_and_sharded() -> None:
    tokens = torch.arange(1000)
    batches = TextBatches(tokens, batch_size=4, seq_len=16, seed=3)
    x, y = batches(7)
    assert x.shape == y.shape == (4, 16)
    assert torch.equal(y, x + 1)  # targets are the next tokens of a contiguous window: nothing padded
    assert torch.equal(x[:, 1:], x[:, :-1] + 1)
    assert torch.equal(batches(7)[0], x) and not torch.equal(batches(8)[0], x)
    assert not torch.equal(TextBatches(tokens, batch_size=4, seq_len=16, seed=4)(7)[0], x)
    shards = [TextBatches(tokens, batch_size=4, seq_len=16, seed=3, rank=r, world_size=2)(7)[0] for r in (0, 1)]
    assert torch.equal(torch.cat(shards), x)
    with pytest.raises(ValueError, match="divisible"):
        TextBatches(tokens, batch_size=3, seq_len=16, world_size=2)
    with pytest.raises(ValueError, match="more than seq_len"):
        TextBatches(torch.arange(10), batch_size=1, seq_len=10)


def test_encode_text() -> None:
    ids = encode_text(ByteTokenizer(), "ab")
    assert ids.dtype == torch.long and ids.tolist() == [97, 98]


@pytest.mark.parametrize("target", ["/etc/passwd", "../outside.json", "sub/../../outside.json"])
def test_tokenizer_json_cannot_point_outside_its_folder(tmp_path, target: str) -> None:
    import json

    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "outside.json").write_text("{}")
    (run / "tokenizer.json").write_text(json.dumps({"kind": "bpe", "vocab_size": 300, "file": target}))
    with pytest.raises(ValueError, match=r"tokenizer\.json.*file.*inside"):
        load_tokenizer(run)
