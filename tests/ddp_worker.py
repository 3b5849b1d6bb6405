"""Train a tiny bag-of-words model on a TREC slice; run under torchrun (DDP) or in-process.

Under ``python -m torch.distributed.run --nproc_per_node 2 tests/ddp_worker.py --out DIR``
every rank trains on its slice of each global batch (gloo, CPU); rank 0 writes
``DIR/weights.safetensors`` and ``DIR/result.json``. ``train_and_save`` does the same in one
process, which is what tests/test_ddp.py compares against.

The data helpers and the model here are also used by tests/test_engine.py: they are test
fixtures, small on purpose (the engine must never import a concrete model).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

REPO = Path(__file__).resolve().parents[1]
DATA_DIR = Path(os.environ.get("TEXTCLS_DATA_DIR", REPO / ".." / "shared" / "datasets")).resolve()


# ----------------------------------------------------------------------------- data


def read_trec(split: str = "train", limit: int = 500, offset: int = 0) -> tuple[list[str], list[str]]:
    """(texts, coarse labels) of the first ``limit`` questions after ``offset``."""
    name = "train_5500.label" if split == "train" else "TREC_10.label"
    texts, labels = [], []
    with open(DATA_DIR / "trec" / name, "rb") as f:
        lines = f.read().split(b"\n")
    for raw in lines[offset:]:
        if len(texts) == limit:
            break
        line = raw.decode("latin-1").strip()
        if line:
            label, text = line.split(" ", 1)
            texts.append(text)
            labels.append(label.split(":")[0])
    return texts, labels


def read_sst2(split: str = "train", limit: int = 500) -> tuple[list[str], list[str]]:
    texts, labels = [], []
    with open(DATA_DIR / "sst2" / f"{split}.tsv", encoding="utf-8") as f:
        next(f)
        for line in f:
            if len(texts) == limit:
                break
            text, label = line.rstrip("\n").split("\t")
            texts.append(text)
            labels.append(label)
    return texts, labels


def read_reuters(split: str = "train", limit: int = 300) -> tuple[list[str], list[list[str]]]:
    texts, labels = [], []
    with gzip.open(DATA_DIR / "reuters" / f"{split}.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            if len(texts) == limit:
                break
            record = json.loads(line)
            texts.append(f"{record['title']} {record['text']}")
            labels.append(list(record["labels"]))
    return texts, labels


def build_vocab(texts: list[str]) -> dict[str, int]:
    """Word -> id, 0 = [PAD], 1 = [UNK]."""
    vocab = {"[PAD]": 0, "[UNK]": 1}
    for text in texts:
        for word in text.lower().split():
            vocab.setdefault(word, len(vocab))
    return vocab


def encode(texts: list[str], vocab: dict[str, int], max_len: int = 200) -> list[list[int]]:
    return [[vocab.get(w, 1) for w in text.lower().split()][:max_len] for text in texts]


def trec_splits(n_train: int, n_dev: int, n_test: int = 0):
    """((train, dev, test), label_names, vocab size): the first ``n_train`` TREC training questions,
    then the first ``n_dev`` and the next ``n_test`` of TREC's test file (test is None when
    ``n_test`` is 0), all encoded with the training vocabulary."""
    from textcls.data.batching import EncodedDataset

    train_texts, train_labels = read_trec("train", n_train)
    held_texts, held_labels = read_trec("test", n_dev + n_test)
    names = sorted(set(train_labels) | set(held_labels))
    vocab = build_vocab(train_texts)

    def encoded(texts, labels):
        return EncodedDataset(encode(texts, vocab), [names.index(label) for label in labels], num_classes=len(names))

    test = encoded(held_texts[n_dev:], held_labels[n_dev:]) if n_test else None
    return (encoded(train_texts, train_labels), encoded(held_texts[:n_dev], held_labels[:n_dev]), test), names, \
        len(vocab)


# ----------------------------------------------------------------------------- model


@dataclass
class Output:
    logits: torch.Tensor
    attentions: dict = field(default_factory=dict)


class BagOfWords(nn.Module):
    """Masked mean of word embeddings -> dropout -> linear."""

    def __init__(self, vocab_size: int, num_classes: int, dim: int = 32, dropout: float = 0.0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim, padding_idx=0)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(dim, num_classes)

    def forward(self, batch):
        mask = batch["mask"].unsqueeze(-1).to(self.embedding.weight.dtype)
        summed = (self.embedding(batch["input_ids"]) * mask).sum(1)
        pooled = summed / mask.sum(1).clamp(min=1.0)
        return Output(self.out(self.dropout(pooled)))


# ----------------------------------------------------------------------------- run


def train_and_save(out: Path, *, n_train: int, n_dev: int, epochs: int, batch_size: int, lr: float,
                   n_test: int = 0) -> dict:
    """Train, keep the best dev epoch, and (rank 0) write the weights and a summary. ``n_test > 0``
    watches that many held-out questions as split "test" (``fit``'s ``watch_loaders``)."""
    from safetensors.torch import save_file

    from textcls.data.batching import make_loader
    from textcls.recipe import Recipe
    from textcls.train import fit
    from textcls.train import distributed

    env = distributed.init_from_env()
    (train, dev, test), names, vocab_size = trec_splits(n_train, n_dev, n_test)
    recipe = Recipe(optimizer="adam", lr=lr, epochs=epochs, batch_size=batch_size, seed=3)
    train_loader = make_loader(train, batch_size, shuffle=True, seed=recipe.seed,
                               num_replicas=env.world_size, rank=env.rank)
    dev_loader = make_loader(dev, 64, shuffle=False)
    torch.manual_seed(0)
    model = BagOfWords(vocab_size, len(names))
    watch = {"test": make_loader(test, 64, shuffle=False)} if test is not None else None
    result = fit(model, train_loader, dev_loader, recipe, num_classes=len(names), label_names=names,
                 run_dir=out / "run", progress=False, watch_loaders=watch)
    summary = {
        "world_size": env.world_size,
        "best_epoch": result.best_epoch,
        "dev_accuracy": result.best_metrics["accuracy"],
        "dev_loss": result.best_metrics["loss"],
        "train_loss": [row["train_loss"] for row in result.history],
        "test_accuracy": [row.get("test_accuracy") for row in result.history],
        "test_loss": [row.get("test_loss") for row in result.history],
    }
    if env.rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(out / "weights.safetensors"))
        (out / "result.json").write_text(json.dumps(summary))
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--n-train", type=int, default=512)
    parser.add_argument("--n-dev", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--n-test", type=int, default=0, help="held-out questions watched as split 'test'")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    from textcls.train import distributed

    try:
        train_and_save(args.out, n_train=args.n_train, n_dev=args.n_dev, epochs=args.epochs,
                       batch_size=args.batch_size, lr=args.lr, n_test=args.n_test)
    finally:
        distributed.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
