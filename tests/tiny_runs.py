"""Small trained runs that several test files share."""

import datasets
import numpy as np

from textcls import Classifier
from textcls.data.records import TextDataset


def save_tiny_multitask_run(folder, task_names):
    """fcsr-mtl (one head per task, attention maps) trained one epoch on 64 synthetic reviews
    spread over ``task_names``, no GloVe, saved into ``folder``; returns ``folder``."""
    rng = np.random.default_rng(0)
    good, bad = ["great", "good", "lovely", "fine"], ["bad", "awful", "poor", "broken"]
    texts, labels, tasks = [], [], []
    for i in range(64):
        positive = i % 2 == 0
        texts.append(f"this one is {rng.choice(good if positive else bad)} and {rng.choice(good + bad)}")
        labels.append("positive" if positive else "negative")
        tasks.append(task_names[(i // 2) % len(task_names)])
    splits = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"text": texts, "label": labels, "task": tasks})})
    ds = TextDataset("tiny-mtl", splits, ["negative", "positive"], task_names=list(task_names))
    clf = Classifier("fcsr-mtl", epochs=1, batch_size=16, params={"embeddings": None}).fit_dataset(ds)
    clf.save_pretrained(folder)
    return folder
