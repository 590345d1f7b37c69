"""transformers.Trainer trains a tiny PaperlabForCausalLM on a toy task, and its loss falls."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")
pytest.importorskip("accelerate")  # Trainer needs it (in the dev extra)

import torch  # noqa: E402
from transformers import Trainer, TrainingArguments  # noqa: E402

from paperlab.hf import from_lm  # noqa: E402
from tests.hf.conftest import V, tiny_lm  # noqa: E402


class Counting(torch.utils.data.Dataset):
    """Rows ``start, start + 1, ...`` (mod V), with the last 3 positions right-padded and their labels -100."""

    def __init__(self, n: int, length: int = 16) -> None:
        starts = torch.randint(0, V, (n,), generator=torch.Generator().manual_seed(0))
        self.ids = (starts[:, None] + torch.arange(length)) % V
        self.mask = torch.ones_like(self.ids)
        self.mask[:, -3:] = 0
        self.labels = self.ids.masked_fill(self.mask == 0, -100)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "attention_mask": self.mask[i], "labels": self.labels[i]}


def _loss(model, data: Counting) -> float:
    model.eval()
    with torch.no_grad():
        return float(model(data.ids, attention_mask=data.mask, labels=data.labels).loss)


def test_trainer_lowers_the_loss(tmp_path) -> None:
    model = from_lm(tiny_lm("kla", n_layers=1))
    data = Counting(64)
    before = _loss(model, data)
    args = TrainingArguments(output_dir=str(tmp_path), max_steps=40, per_device_train_batch_size=16,
                             learning_rate=1e-2, warmup_steps=0, weight_decay=0.0, logging_steps=10,
                             save_strategy="no", report_to=[], use_cpu=True, disable_tqdm=True, seed=0,
                             dataloader_num_workers=0)
    result = Trainer(model=model, args=args, train_dataset=data).train()
    after = _loss(model, data)
    assert result.global_step == 40
    assert after < 0.5 * before, f"loss {before:.3f} -> {after:.3f}"
    assert not list(tmp_path.glob("checkpoint-*"))  # save_strategy="no"
