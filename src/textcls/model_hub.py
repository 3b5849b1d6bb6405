"""Run folders on the Hugging Face hub: resolve ``"user/name"`` to a cached snapshot, write a
model card, upload a run.

Everything goes through ``huggingface_hub``: ``snapshot_download`` resolves a repository id
to a folder of its cache (``HF_HUB_CACHE``, default ``~/.cache/huggingface/hub``), downloads
only what changed, and with ``HF_HUB_OFFLINE=1`` (or no connection) answers from the cache
alone; ``HfApi.create_commit`` uploads. No textcls code fetches or caches anything itself, so
the hub's own settings (``HF_ENDPOINT``, ``HF_TOKEN``, ``HF_HOME``, ``hf auth login``) apply.

A repository holds a run folder's files (``RUN_FILES``: config.json, model.safetensors,
tokenizer.json, metrics.json, epochs.csv) and a generated ``README.md``, the model card: YAML
metadata that the hub indexes (``library_name: textcls``, tags, datasets, metrics and the test
scores as ``model-index``) and a body that says what the model is, which paper it implements,
what it was trained on, how well it did and how to load it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

from . import __version__, artifacts
from .errors import CheckpointError, ConfigError, RunFolderError

__all__ = ["HUB_PREFIX", "RUN_FILES", "hub_repo_id", "snapshot", "model_card", "push_run", "check_metrics"]

HUB_PREFIX = "hf:"
# What a hub repository of a run holds besides README.md; the first three are what
# from_pretrained reads, metrics.json feeds the card (and `textcls serve`'s /metadata).
RUN_FILES = (artifacts.CONFIG, artifacts.WEIGHTS, artifacts.TOKENIZER, artifacts.METRICS, artifacts.EPOCHS_CSV)
DOWNLOADED = (artifacts.CONFIG, artifacts.WEIGHTS, artifacts.TOKENIZER, artifacts.METRICS)
CARD = "README.md"
# "owner/name" as the hub spells repository ids (letters, digits, '-', '_', '.'; 96 at most).
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$")
# The scores shown in the card (and in model-index), in this order, when metrics.json has them.
CARD_METRICS = ("accuracy", "macro_f1", "micro_f1", "weighted_f1", "roc_auc_macro")
# The parts of metrics.json that the card reads; each must be a JSON object when present.
_METRICS_SECTIONS = ("test", "dataset", "parameters")
_HF_METRIC = {"accuracy": ("accuracy", "Accuracy"), "macro_f1": ("f1", "Macro F1"), "micro_f1": ("f1", "Micro F1"),
              "weighted_f1": ("f1", "Weighted F1"), "roc_auc_macro": ("roc_auc", "Macro ROC AUC")}


def hub_repo_id(source) -> str | None:
    """The hub repository that ``source`` names, or None when it is a local folder.

    ``"hf:owner/name"`` always names the hub. A plain ``"owner/name"`` string does when no
    such local path exists (as ``transformers`` decides). A ``pathlib.Path`` is always local."""
    if isinstance(source, os.PathLike):
        return None
    text = str(source)
    if text.startswith(HUB_PREFIX):
        repo_id = text[len(HUB_PREFIX):]
        if not _REPO_ID.match(repo_id):
            raise ConfigError(f"'{text}' is not a hub model id; write hf:<owner>/<name>, e.g. hf:textcls/fasttext-bag-mr")
        return repo_id
    if _REPO_ID.match(text) and not Path(text).expanduser().exists():
        return text
    return None


def snapshot(repo_id: str, *, revision: str | None = None, cache_dir=None, token=None) -> Path:
    """The local folder of ``repo_id``'s run files: downloaded into the hub cache when missing
    or changed, read from the cache alone when offline (``HF_HUB_OFFLINE=1``)."""
    import httpx
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import (HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled,
                                        RepositoryNotFoundError, RevisionNotFoundError)

    _check_revision(revision)
    try:
        folder = snapshot_download(repo_id, revision=revision, cache_dir=cache_dir, token=token,
                                   allow_patterns=list(DOWNLOADED))
    except RepositoryNotFoundError:
        raise CheckpointError(
            f"{repo_id}: no such local run folder, and no model repository '{repo_id}' on the Hugging Face hub "
            "(or it is private: log in with `hf auth login` or pass token=)") from None
    except RevisionNotFoundError:
        raise CheckpointError(f"{repo_id}: the hub repository has no revision '{revision}'; "
                              "pass a branch, tag or commit it has") from None
    except (LocalEntryNotFoundError, OfflineModeIsEnabled):  # the latter: a commit id asks the hub for its tree
        cache = Path(cache_dir or _cache_dir())
        if revision is not None and (cache / f"models--{repo_id.replace('/', '--')}").is_dir():
            raise CheckpointError(
                f"{repo_id}: revision '{revision}' is not in the Hugging Face cache ({cache}), only other revisions "
                "of the repository are, and the hub cannot be reached (offline, or HF_HUB_OFFLINE=1); load that "
                "revision once with a connection, or pass a cached one (revision=None for main)") from None
        raise CheckpointError(
            f"{repo_id}: not in the Hugging Face cache ({cache}) and the hub cannot be reached "
            "(offline, or HF_HUB_OFFLINE=1); load it once with a connection, or pass a local run folder") from None
    except HfHubHTTPError as exc:
        raise CheckpointError(f"{repo_id}: the hub answered {_first_line(exc)}; try again later") from None
    except httpx.TransportError as exc:  # the connection broke after the cache check (a download, a timeout)
        raise CheckpointError(f"{repo_id}: the hub at {constants.ENDPOINT} could not be reached "
                              f"({_first_line(exc)}); check the network and HF_ENDPOINT, then try again, "
                              "or pass a local run folder") from None
    folder = Path(folder)
    if not (folder / artifacts.CONFIG).is_file():
        raise CheckpointError(f"{repo_id}: the hub repository has no {artifacts.CONFIG}; it is not a textcls run "
                              "(push one with `textcls push RUN REPO_ID`)")
    return folder


def _check_revision(revision) -> None:
    if revision is not None and (not isinstance(revision, str) or not revision.strip()):
        raise ConfigError(f"revision={revision!r}: must be a non-empty string, a branch, tag or commit of the "
                          "repository (or None for main)")


def _cache_dir() -> str:
    from huggingface_hub import constants

    return constants.HF_HUB_CACHE


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


# --------------------------------------------------------------------------- the model card


def model_card(config: dict, metrics: dict | None, repo_id: str) -> str:
    """README.md for a run: YAML metadata (``huggingface_hub.ModelCardData``) and a body.
    ``metrics``: the run's metrics.json (its ``test`` scores fill the card), or None."""
    from huggingface_hub import EvalResult, ModelCardData

    public, dataset = _card_dataset(config.get("dataset"))
    test = (metrics or {}).get("test") or {}
    shown = [key for key in CARD_METRICS if isinstance(test.get(key), (int, float))]
    tags = ["textcls", "text-classification", str(config.get("family"))]
    tags += ["multi-label"] if config.get("multi_label") else []
    tags += ["multi-task"] if config.get("task_names") else []
    subset = bool(config.get("multi_label"))  # multi-label accuracy is subset accuracy (every label right)
    results = [EvalResult(task_type="text-classification", dataset_type=public or "local", dataset_name=dataset,
                          dataset_split="test", metric_type=_HF_METRIC[key][0],
                          metric_name="Subset accuracy" if subset and key == "accuracy" else _HF_METRIC[key][1],
                          metric_value=round(float(test[key]), 4))
               for key in shown] if dataset else None
    data = ModelCardData(library_name="textcls", pipeline_tag="text-classification", tags=tags,
                         datasets=[public] if public else None,
                         metrics=sorted({_HF_METRIC[key][0] for key in shown}) or None,
                         model_name=repo_id.split("/")[-1] if results else None, eval_results=results)
    return f"---\n{data.to_yaml()}\n---\n\n{_card_body(config, metrics or {}, repo_id, shown)}"


def _card_body(config: dict, metrics: dict, repo_id: str, shown: list[str]) -> str:
    labels = [str(name) for name in config.get("label_names", [])]
    kind = (f"multi-label: one sigmoid per label, threshold {artifacts.run_threshold(config):g}"
            if config.get("multi_label") else "single-label")
    params = (metrics.get("parameters") or {}).get("total")
    recipe = config.get("recipe") or {}
    lines = [f"# {repo_id.split('/')[-1]}", "",
             f"A `{config.get('model')}` text classifier made with [textcls](https://pypi.org/project/textcls/) "
             f"{config.get('textcls_version', __version__)}.", "", "## Model", "",
             f"- Preset: `{config.get('model')}` (family `{config.get('family')}`, kind `{config.get('kind')}`): "
             f"{config.get('description') or ''}".rstrip(),
             f"- Paper: {config.get('paper') or 'none (a baseline)'}"]
    lines += [f"- Parameters: {params:,}" if isinstance(params, int) else f"- Parameters: {params}"] if params else []
    lines += [f"- Labels ({len(labels)}; {kind}): {', '.join(f'`{n}`' for n in labels[:50])}"
              + (" ..." if len(labels) > 50 else "")]
    heads = _task_heads(config)
    if heads:
        lines.append(f"- Tasks (one head each; pass `tasks=`): {', '.join(heads)}")
    elif config.get("task_names"):
        lines.append(f"- Trained on the tasks {', '.join(config['task_names'])} with one head for all (pass no task)")
    if config.get("task_names") and isinstance(config.get("task_column"), str):  # read from another field
        lines.append(f"- The tasks were read from the data's `{config['task_column']}` field or column "
                     f"(`task_column=\"{config['task_column']}\"`)")
    if config.get("kind") == "ensemble":
        state = config.get("state") or {}
        lines += ["- Members (weights chosen on dev): " + ", ".join(
            f"`{m['preset'].get('name')}` {w:g}" for m, w in zip(state.get("members", []), state.get("weights", [])))]
    elif config.get("kind") == "classic":  # its recipe is a placeholder: no optimiser, epochs or batches of it
        lines.append(f"- Training: fitted by its own solver (TF-IDF, static vectors: no epochs or batches of a "
                     f"recipe), its settings chosen on dev where the preset searches them, seed {recipe.get('seed')}")
    elif recipe:
        lines.append(f"- Training: {recipe.get('optimizer')} lr {recipe.get('lr')}, {recipe.get('epochs')} epochs, "
                     f"batch {recipe.get('batch_size')}, seed {recipe.get('seed')}"
                     + (f", best epoch {metrics['best_epoch']}" if metrics.get("best_epoch") else ""))
    lines += ["", "## Data", ""] + _data_lines(config, metrics)
    if shown:
        test = metrics["test"]
        lines += ["", f"## Metrics (test split, {test.get('n', '?')} documents)", "", "| metric | value |", "|---|---|"]
        names = {"accuracy": "subset accuracy"} if config.get("multi_label") else {}
        lines += [f"| {names.get(key, key)} | {test[key]:.4f} |" for key in shown]
    # A run with one head per task refuses a text without its task, on the command line too; one
    # that pools the tasks refuses a task.
    task_option = f" --task {shlex.quote(heads[0])}" if heads else ""
    lines += ["", "## How to load", "", "```python", "from textcls import Classifier", "",
              f'clf = Classifier.from_pretrained("{repo_id}")   # cached; HF_HUB_OFFLINE=1 reads the cache only',
              'clf.predict(["a text to classify"])' if not heads else
              f'clf.predict(["a text to classify"], tasks=[{json.dumps(heads[0])}])',
              "```", "", "From the command line:", "", "```bash",
              f"hf download {repo_id} --local-dir run", f'textcls predict run{task_option} "a text to classify"',
              "```", ""]
    return "\n".join(lines)


def _task_heads(config: dict) -> list[str] | None:
    """The task names of a run with one head per task (``arch`` num_tasks > 1, as the estimator
    decides), else None: a model trained on multi-task data may pool the tasks in one head."""
    heads = (config.get("arch") or {}).get("num_tasks", 1)
    return list(config["task_names"]) if isinstance(heads, int) and heads > 1 and config.get("task_names") else None


def _card_dataset(name) -> tuple[str | None, str | None]:
    """(the id a public card may list under ``datasets:``, the name it shows) of a run's data.

    A catalogue name (``trec``, ``fdu_mtl/books``) and a hub id (``hf:owner/name``) are public;
    a local file or folder is not: its folder path (a user's home, a temporary folder) never goes
    into a card that ``push`` publishes, only its own name, and it is listed under no ``datasets:``."""
    if not name:
        return None, None
    name = str(name)
    from .data.catalog import find_entry

    if find_entry(name) is not None:
        return name, name
    if name.startswith("hf:"):
        hub_id = name[3:].partition(":")[0].strip()
        return (hub_id or None), name
    return None, re.split(r"[\\/]", name.rstrip("/\\"))[-1] or name


def _data_lines(config: dict, metrics: dict) -> list[str]:
    info = metrics.get("dataset") or {}
    public, shown = _card_dataset(info.get("name", config.get("dataset")))
    if not shown:
        lines = ["- Dataset: not recorded in the run"]
    elif public is None and shown == artifacts.LISTS_DATASET:
        lines = ["- Dataset: texts and labels given to `Classifier.fit` (not published with the model)"]
    elif public is None:
        what = "folder" if not Path(shown).suffix else "file"
        lines = [f"- Dataset: a local {what}, `{shown}` (not published with the model)"]
    else:
        lines = [f"- Dataset: `{shown}`" + (" (Hugging Face hub)" if shown.startswith("hf:")
                                             else " (`textcls list-datasets`)")]
    for split, size in (info.get("splits") or {}).items():
        note = (info.get("split_notes") or {}).get(split)
        size = f"{size:,}" if isinstance(size, int) else size
        lines.append(f"- {split}: {size} documents" + (f", {note}" if note else ""))
    if info.get("skipped"):
        lines.append(f"- {info['skipped']} records skipped when the data was read (empty or unreadable)")
    return lines


# --------------------------------------------------------------------------- upload


def push_run(run_dir, repo_id: str, *, private: bool | None = None, token=None, revision: str | None = None,
             commit_message: str | None = None, create_pr: bool = False) -> str:
    """Upload the run folder ``run_dir`` to the hub model repository ``repo_id`` (created when
    missing) with a generated README.md; returns the commit's URL.

    Only the run's own files go (``RUN_FILES``, never checkpoints or locks), in one commit, and
    only after model.safetensors matched the checksum in config.json."""
    import httpx
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    run_dir = Path(run_dir)
    if not _REPO_ID.match(str(repo_id)):
        raise ConfigError(f"'{repo_id}' is not a hub model id; write <owner>/<name>, e.g. you/fasttext-bag-mr")
    _check_revision(revision)
    config = artifacts.read_config(run_dir)
    _check_weights(run_dir, config)
    metrics_path = run_dir / artifacts.METRICS
    metrics = artifacts.read_json(metrics_path) if metrics_path.is_file() else None
    check_metrics(metrics, f"{metrics_path}: metrics", CheckpointError)
    card = model_card(config, metrics, repo_id).encode("utf-8")
    operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(run_dir / name))
                  for name in RUN_FILES if (run_dir / name).is_file()]
    operations.append(CommitOperationAdd(path_in_repo=CARD, path_or_fileobj=card))
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
        info = api.create_commit(repo_id, operations, commit_message=commit_message or f"Upload {config['model']} run",
                                 revision=revision, create_pr=create_pr, repo_type="model")
    except HfHubHTTPError as exc:
        raise RunFolderError(f"{run_dir}: upload to {repo_id} failed, the hub answered {_first_line(exc)}; check the "
                             "repository name and your token (`hf auth login`)") from None
    except OfflineModeIsEnabled:  # huggingface_hub's request hook refuses every request
        raise RunFolderError(f"{run_dir}: cannot upload to {repo_id}: pushing needs the network and HF_HUB_OFFLINE "
                             "is set; unset it (or set HF_HUB_OFFLINE=0) to push") from None
    except httpx.TransportError as exc:  # connection refused, DNS, timeout, proxy
        raise RunFolderError(f"{run_dir}: upload to {repo_id} failed, the hub at {api.endpoint} could not be reached "
                             f"({_first_line(exc)}); check the network and HF_ENDPOINT, or keep the run local "
                             "(the run folder, or Classifier.save_pretrained)") from None
    return str(info.pr_url or info.commit_url)


def check_metrics(metrics, where: str = "push_to_hub: metrics", error: type = ConfigError) -> None:
    """Raise ``error`` unless ``metrics`` (metrics.json's content, or None) is what the model card
    reads: a dict whose ``test``, ``dataset`` (and its ``splits``, ``split_notes``) and
    ``parameters`` entries, when present, are dicts, and which can be written as JSON. ``where`` names it in the message."""
    if metrics is None:
        return
    fix = ("the run directory is corrupt, retrain or restore it" if error is CheckpointError else
           'pass a dict in metrics.json\'s shape, e.g. metrics={"test": clf.evaluate(test_split)}, or leave it out')
    if not isinstance(metrics, dict):
        raise error(f"{where} is a {type(metrics).__name__}, not a dict; {fix}")
    for key in _METRICS_SECTIONS:
        if metrics.get(key) is not None and not isinstance(metrics[key], dict):
            raise error(f'{where}["{key}"] is a {type(metrics[key]).__name__}, not a dict; {fix}')
    for key in ("splits", "split_notes"):  # what the card's Data section reads
        value = (metrics.get("dataset") or {}).get(key)
        if value is not None and not isinstance(value, dict):
            raise error(f'{where}["dataset"]["{key}"] is a {type(value).__name__}, not a dict; {fix}')
    try:
        json.dumps(metrics, allow_nan=False)
    except (TypeError, ValueError) as exc:
        plain = "use plain numbers, strings, lists and dicts, with no NaN or infinity"
        fix = fix if error is CheckpointError else plain
        raise error(f"{where} cannot be written as JSON ({exc}); {fix}") from None


def _check_weights(run_dir: Path, config: dict) -> None:
    expected = config.get("weights_sha256")
    if expected and artifacts.sha256_file(run_dir / artifacts.WEIGHTS) != expected:
        raise CheckpointError(f"{run_dir / artifacts.WEIGHTS}: does not match the checksum in config.json "
                              "(changed or corrupt); retrain or restore the run before pushing it")


def card_metadata(card_text: str) -> dict:
    """The YAML metadata of a model card as a dict (what the hub indexes)."""
    from huggingface_hub import ModelCard

    return ModelCard(card_text).data.to_dict()
