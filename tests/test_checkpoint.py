"""Checkpoint ``extra``: everything save_checkpoint accepts load_checkpoint reads back; the rest is refused first."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
import torch
from torch import nn

from paperlab.checkpoint import load_checkpoint, save_checkpoint


def test_every_accepted_extra_type_round_trips(tmp_path: Path) -> None:
    extra = {"none": None, "flag": True, "int": 10**30, "float": 0.5, "nan": float("nan"), "complex": 1 + 2j,
             "str": "s", "bytes": b"b", "bytearray": bytearray(b"ba"), "dtype": torch.bfloat16,
             "device": torch.device("cpu"), "tensor": torch.arange(3), "param": nn.Parameter(torch.ones(2)),
             "size": torch.Size([2, 3]), "list": [1, [2, (3, 4)]], "tuple": (1, "a"), "set": {1, 2},
             "ordered": collections.OrderedDict(a=1), "counter": collections.Counter("aab"), 7: "int key",
             "history": [{"loss": 1.0, "step": 1}]}
    save_checkpoint(tmp_path / "c.pt", model=nn.Linear(2, 2), step=np_int(3), extra=extra)
    payload = load_checkpoint(tmp_path / "c.pt")
    assert payload["step"] == 3 and set(payload["extra"]) == set(extra)
    assert payload["extra"]["counter"] == extra["counter"] and payload["extra"]["size"] == torch.Size([2, 3])


def np_int(value: int):
    import numpy as np

    return np.int64(value)  # numpy ints were accepted (int(step)) and still are


@pytest.mark.parametrize("value", [collections.defaultdict(int), collections.namedtuple("NT", "a")(1),
                                   collections.deque([1]), frozenset([1]), range(3), object()],
                         ids=["defaultdict", "namedtuple", "deque", "frozenset", "range", "object"])
def test_unreadable_extra_is_refused_before_writing(tmp_path: Path, value: object) -> None:
    with pytest.raises(TypeError, match=r"extra\['x'\] holds a"):
        save_checkpoint(tmp_path / "c.pt", model=nn.Linear(2, 2), extra={"x": value})
    assert not (tmp_path / "c.pt").exists()
