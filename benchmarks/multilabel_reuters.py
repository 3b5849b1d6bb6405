"""Multi-label default recipe: fasttext-bag against TF-IDF + LR on Reuters' multi-label view.

    OMP_NUM_THREADS=1 python benchmarks/multilabel_reuters.py [--seeds 3] [--output benchmarks/results/multilabel_reuters]

``reuters`` (textcls list-datasets) is Reuters-21578 ModApte, the 10 largest topics, a document
may carry several (``labels``). Every model sees the official train split (fasttext-bag carves
its dev split from it, seeded) and is scored on the whole official test split with
``compute_metrics`` at the threshold 0.5 per label. Rows:

- ``fasttext-bag`` as it trains by default (its corpus-chosen recipe, which for multi-label
  data weighs each label's positives by its negatives / positives: BCE ``pos_weight``), one
  row per seed;
- ``fasttext-bag`` without that weighting (``class_weights=None``: the recipe before it);
- ``fasttext-bag`` at the single-label rule's epochs (12 here; the default gives 3x, 36);
- the ``tfidf-lr`` preset;
- plain scikit-learn: ``TfidfVectorizer()`` + ``OneVsRestClassifier(LogisticRegression())``,
  with scikit-learn's defaults, and with ``class_weight="balanced"``.

Writes <output>.json (every metric, the machine, the command) and <output>.md.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import torch

from textcls import Classifier, load_dataset
from textcls.artifacts import write_report
from textcls.benchmark.system import git_info, machine_info
from textcls.data.prepare import label_targets, target_array
from textcls.eval import compute_metrics

REPO = Path(__file__).resolve().parents[1]
KEYS = ("macro_f1", "micro_f1", "samples_f1", "accuracy", "roc_auc_macro")


def _summary(metrics: dict) -> dict:
    return {key: metrics[key] for key in KEYS} | {"per_class_f1": {k: v["f1"] for k, v in metrics["per_class"].items()}}


def _textcls_row(name: str, dataset, model: str, **params) -> dict:
    start = time.perf_counter()
    clf = Classifier(model, **params).fit_dataset(dataset)
    seconds = time.perf_counter() - start
    recipe = clf.preset_.recipe
    row = {"name": name, "model": model, "params": {k: v for k, v in params.items()}, "fit_seconds": seconds,
           **_summary(clf.evaluate(dataset["test"], where="reuters/test"))}
    if clf.preset_.kind == "neural":
        row["recipe"] = {"lr": recipe.lr, "epochs": recipe.epochs, "class_weights": recipe.class_weights,
                         "best_epoch": clf.estimator_.best_epoch_}
    return row


def _sklearn_row(name: str, dataset, class_weight) -> dict:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    names = dataset.label_names
    train, test = dataset["train"], dataset["test"]
    y_train = target_array(label_targets(train, names, True, "train"), len(names), True)
    y_test = target_array(label_targets(test, names, True, "test"), len(names), True)
    start = time.perf_counter()
    vectorizer = TfidfVectorizer()
    model = OneVsRestClassifier(LogisticRegression(max_iter=1000, class_weight=class_weight))
    model.fit(vectorizer.fit_transform(train["text"]), y_train)
    seconds = time.perf_counter() - start
    probs = model.predict_proba(vectorizer.transform(test["text"]))
    metrics = compute_metrics(y_test, probs, names, multi_label=True)
    return {"name": name, "model": "scikit-learn", "params": {"class_weight": class_weight},
            "fit_seconds": seconds, **_summary(metrics)}


def _markdown(result: dict) -> str:
    lines = [
        "# Multi-label default recipe: fasttext-bag vs TF-IDF + LR on Reuters (10 topics, multi-label)",
        "",
        f"Command: `{result['command']}` at commit {(result['git'].get('commit') or '?')[:7]}.",
        f"CPU: {result['machine'].get('cpu_model')}, {result['threads']} thread(s). "
        f"Test split: {result['test_documents']} documents (official ModApte test), threshold 0.5 per label.",
        "",
        "| model | macro-F1 | micro-F1 | samples-F1 | subset acc. | macro ROC AUC | fit s |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        lines.append(f"| {row['name']} | {row['macro_f1']:.3f} | {row['micro_f1']:.3f} | {row['samples_f1']:.3f} | "
                     f"{row['accuracy']:.3f} | {row['roc_auc_macro']:.3f} | {row['fit_seconds']:.1f} |")
    default = [r["macro_f1"] for r in result["rows"] if r["name"].startswith("fasttext-bag (default")]
    lines += ["", f"fasttext-bag default, macro-F1 over {len(default)} seeds: mean {np.mean(default):.3f}, "
              f"min {min(default):.3f}.", ""]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "results" / "multilabel_reuters"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    dataset = load_dataset("reuters")
    rows = [_textcls_row(f"fasttext-bag (default, seed {seed})", dataset, "fasttext-bag", seed=seed)
            for seed in range(args.seeds)]
    rows.append(_textcls_row("fasttext-bag, unweighted (class_weights=None)", dataset, "fasttext-bag",
                             params={"class_weights": None}))
    rows.append(_textcls_row("fasttext-bag, default at 12 epochs (the single-label rule)", dataset, "fasttext-bag",
                             epochs=12))
    rows.append(_textcls_row("tfidf-lr preset", dataset, "tfidf-lr"))
    rows.append(_sklearn_row("scikit-learn TF-IDF + LR (defaults)", dataset, None))
    rows.append(_sklearn_row("scikit-learn TF-IDF + LR (class_weight=balanced)", dataset, "balanced"))
    result = {"command": "OMP_NUM_THREADS=1 python benchmarks/multilabel_reuters.py " + shlex.join(sys.argv[1:]),
              "git": git_info(), "machine": machine_info(), "threads": torch.get_num_threads(),
              "train_documents": len(dataset["train"]), "test_documents": len(dataset["test"]), "rows": rows}
    write_report(Path(args.output), result, _markdown(result))
    print(_markdown(result))


if __name__ == "__main__":
    main()
