"""The experiment cache: keys over every config field, checked entries, warnings naming the file, atomic writes."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path

import pytest
import torch

from paperlab.experiments import cache
from paperlab.experiments.cache import CacheWarning, cache_key, checkpoint_codec, config_hash, load_or_compute


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Inner:
    width: int = 4
    names: tuple[str, ...] = ("a", "b")


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Config:
    seeds: tuple[int, ...] = (0,)
    lr: float = 1e-3
    label: str = "x"
    flag: bool = False
    limit: int | None = None
    inner: _Inner = dataclasses.field(default_factory=_Inner)
    extra: dict = dataclasses.field(default_factory=dict)


def _perturbed(value):
    """A different value of the same kind (for the every-field test)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "y"
    if isinstance(value, tuple):
        return (*value, value[-1])
    if isinstance(value, dict):
        return {**value, "new": 1}
    if value is None:
        return 3
    raise AssertionError(f"no perturbation for {value!r}")


def _key(config=None, *extra, code="test/1", **kw):
    return cache_key(_Config() if config is None else config, *extra, code=code, **kw)


@pytest.fixture(autouse=True)
def _fresh_memo():
    cache.clear()
    yield
    cache.clear()


def test_key_changes_with_every_field_nested_ones_too_and_with_the_run_parts_and_versions(monkeypatch) -> None:
    base = _Config()
    variants = [base] + [dataclasses.replace(base, **{f.name: _perturbed(getattr(base, f.name))})
                         for f in dataclasses.fields(_Config) if f.name != "inner"]
    variants += [dataclasses.replace(base, inner=dataclasses.replace(base.inner, **{
        f.name: _perturbed(getattr(base.inner, f.name))})) for f in dataclasses.fields(_Inner)]
    digests = [_key(v).digest for v in variants]
    digests += [_key(base, "kla", 0).digest, _key(base, "kla", 1).digest, _key(base, "gdn", 0).digest,
                _key(base, code="test/2").digest]
    assert len(set(digests)) == len(digests) == 1 + 6 + 2 + 4
    monkeypatch.setattr(cache, "__version__", "9.9.9")  # another package version: another key
    assert _key(base).digest not in digests and _key(base).paperlab == "9.9.9"
    monkeypatch.undo()
    assert _key(base).digest == _key(_Config()).digest == digests[0]  # a pure function of its inputs


def test_excluded_fields_leave_the_key_only_when_they_are_fields() -> None:
    base = _Config()
    assert _key(dataclasses.replace(base, seeds=(0, 1)), exclude=("seeds",)) == _key(base, exclude=("seeds",))
    assert "seeds" not in _key(base, exclude=("seeds",)).config
    with pytest.raises(ValueError, match=r"exclude=\['sedes'\] names no field of _Config"):
        _key(base, exclude=("sedes",))


def test_key_refuses_what_is_not_json_naming_the_field() -> None:
    with pytest.raises(TypeError, match=r"_Config\.extra\.where is a PosixPath"):
        _key(_Config(extra={"where": Path("/tmp")}))
    with pytest.raises(TypeError, match=r"_Config\.extra has non-string keys \[1\]"):
        _key(_Config(extra={1: "a"}))
    with pytest.raises(TypeError, match="extra\\[0\\] is a object"):
        _key(_Config(), object())
    with pytest.raises(TypeError, match="config must be a dataclass instance, got dict"):
        cache_key({"a": 1}, code="test/1")
    with pytest.raises(ValueError, match="code must be a non-empty"):
        _key(code="")


def test_config_hash_names_folders_as_before() -> None:
    cfg = _Config(extra={"device": "cpu"})
    old = hashlib.sha256(json.dumps(dataclasses.asdict(cfg), sort_keys=True, default=str).encode()).hexdigest()
    assert config_hash(cfg) == old[:10]  # existing run folders keep their names


def test_json_round_trip_records_key_config_versions_and_payload_hash(tmp_path: Path) -> None:
    key, path, calls = _key(_Config(), "kla", 0), tmp_path / "rows" / "row.json", []
    row = {"acc": 0.5, "by_distance": {1: [2, 3]}, "nan": float("nan")}
    first = load_or_compute(path, key, lambda: calls.append(1) or row)
    assert first is row and calls == [1]
    entry = json.loads(path.read_text())
    assert entry["key"] == key.digest and entry["config"] == key.config and entry["extra"] == ["kla", 0]
    assert entry["code"] == "test/1" and entry["paperlab"] == key.paperlab and len(entry["sha256"]) == 64
    again = load_or_compute(path, key, lambda: pytest.fail("a usable entry was recomputed"))
    assert again["acc"] == 0.5 and again["by_distance"] == {"1": [2, 3]}  # JSON keys are strings


def _damage(path: Path, how: str) -> None:
    text = path.read_text()
    entry = json.loads(text)
    path.write_text({
        "truncated": text[: len(text) // 2],
        "binary": "\x00\xff garbage",
        "missing field": json.dumps({k: v for k, v in entry.items() if k != "sha256"}),
        "no payload": json.dumps({k: v for k, v in entry.items() if k != "payload"}),
        "other config": json.dumps({**entry, "config": {**entry["config"], "lr": 0.5}}),
        "stale version": json.dumps({**entry, "paperlab": "0.0.1"}),
        "other key": json.dumps({**entry, "key": "0" * 64}),
        "edited payload": json.dumps({**entry, "payload": {**entry["payload"], "verdict": "reproduced"}}),
    }[how])


@pytest.mark.parametrize("how", ["truncated", "binary", "missing field", "no payload", "other config",
                                 "stale version", "other key", "edited payload"])
def test_a_damaged_json_entry_warns_naming_the_file_and_is_recomputed(tmp_path: Path, how: str) -> None:
    key, path = _key(), tmp_path / "row.json"
    load_or_compute(path, key, lambda: {"verdict": "not reproduced"})
    _damage(path, how)
    reason = {"truncated": "not valid JSON", "binary": "not valid JSON",
              "missing field": r"missing fields \['sha256'\]", "no payload": r"missing fields \['payload'\]",
              "other config": r"another config \(fields \['lr'\]",
              "stale version": "stale: written by paperlab 0.0.1", "other key": "recorded key",
              "edited payload": "sha256 differs"}[how]
    with pytest.warns(CacheWarning, match=re.escape(str(path)) + f".*{reason}"):
        row = load_or_compute(path, key, lambda: {"verdict": "not reproduced"})
    assert row == {"verdict": "not reproduced"}  # the computed value, never the edited one
    assert load_or_compute(path, key, lambda: pytest.fail("not overwritten")) == row


def test_a_crash_during_compute_or_write_leaves_no_entry(tmp_path: Path, monkeypatch) -> None:
    key, path = _key(), tmp_path / "row.json"

    def crash():
        raise RuntimeError("killed mid-run")

    with pytest.raises(RuntimeError, match="killed"):
        load_or_compute(path, key, crash, memo=True)
    assert list(tmp_path.iterdir()) == [] and key.digest not in cache._MEMO
    load_or_compute(path, key, lambda: {"a": 1})
    import paperlab.io

    monkeypatch.setattr(paperlab.io.os, "fsync", lambda fd: crash())  # the disk write dies half-way
    with pytest.raises(RuntimeError, match="killed"):
        load_or_compute(path, key, lambda: {"a": 2}, reuse=False)
    assert [p.name for p in tmp_path.iterdir()] == ["row.json"]  # no temp file left over
    assert json.loads(path.read_text())["payload"] == {"a": 1}  # the old complete entry, not a partial one


def test_reuse_false_recomputes_and_overwrites(tmp_path: Path) -> None:
    key, path = _key(), tmp_path / "row.json"
    load_or_compute(path, key, lambda: {"a": 1})
    assert load_or_compute(path, key, lambda: {"a": 2}, reuse=False) == {"a": 2}
    assert load_or_compute(path, key, lambda: pytest.fail("recomputed")) == {"a": 2}


def test_memo_shares_values_in_process_until_clear_and_drops_the_oldest(monkeypatch) -> None:
    value = load_or_compute(None, _key(_Config(), 0), lambda: {"a": 1}, memo=True)
    assert load_or_compute(None, _key(_Config(), 0), lambda: pytest.fail("not memoised"), memo=True) is value
    cache.clear()
    assert load_or_compute(None, _key(_Config(), 0), lambda: {"a": 2}, memo=True) == {"a": 2}
    monkeypatch.setattr(cache, "MEMO_LIMIT", 2)
    for i in (1, 2, 3):
        load_or_compute(None, _key(_Config(), i), lambda i=i: i, memo=True)
    assert load_or_compute(None, _key(_Config(), 0), lambda: "again", memo=True) == "again"  # evicted
    assert load_or_compute(None, _key(_Config(), 3), lambda: pytest.fail("kept"), memo=True) == 3


def _build() -> torch.nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return torch.nn.Linear(3, 2)


def _trained() -> tuple[torch.nn.Module, dict]:
    model = _build()
    with torch.no_grad():
        model.weight.add_(1.0)
    return model, {"final_loss": 0.25, "history": [{"step": 1, "loss": 0.5}]}


def test_checkpoint_round_trip_restores_weights_and_info(tmp_path: Path) -> None:
    key, path, codec = _key(), tmp_path / "m.pt", checkpoint_codec(_build, step=7)
    model, info = load_or_compute(path, key, _trained, codec=codec)
    loaded, loaded_info = load_or_compute(path, key, lambda: pytest.fail("retrained"), codec=codec)
    assert loaded is not model and loaded_info == info
    assert torch.equal(loaded.weight, model.weight) and torch.equal(loaded.bias, model.bias)
    assert torch.load(path, weights_only=True)["step"] == 7


@pytest.mark.parametrize("how", ["truncated", "edited weight", "no metadata", "other model"])
def test_a_damaged_checkpoint_warns_naming_the_file_and_is_retrained(tmp_path: Path, how: str) -> None:
    from paperlab.checkpoint import save_checkpoint

    key, path, codec = _key(), tmp_path / "m.pt", checkpoint_codec(_build)
    model, info = load_or_compute(path, key, _trained, codec=codec)
    payload = torch.load(path, weights_only=True)
    if how == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    elif how == "edited weight":
        edited = _build()
        edited.load_state_dict({**payload["model"], "bias": payload["model"]["bias"] + 1})
        save_checkpoint(path, model=edited, extra=payload["extra"])
    elif how == "no metadata":
        save_checkpoint(path, model=model, extra=info)  # an entry written before the cache recorded its key
    else:
        save_checkpoint(path, model=torch.nn.Linear(4, 2), extra=payload["extra"])
    reason = {"truncated": "corrupt", "edited weight": "sha256 differs", "no metadata": "missing fields",
              "other model": "does not match the model"}[how]
    with pytest.warns(CacheWarning, match=re.escape(str(path)) + f".*{reason}"):
        again, _ = load_or_compute(path, key, _trained, codec=codec)
    assert torch.equal(again.weight, model.weight) and torch.equal(again.bias, model.bias)
    load_or_compute(path, key, lambda: pytest.fail("not overwritten"), codec=codec)
