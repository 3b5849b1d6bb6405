"""The Hugging Face hub loader: ``hf:<owner>/<name>[:<config>]`` and the catalogue's hub copies.

``load_hub(name, spec, options, why)`` reads a hub dataset through ``datasets.load_dataset``
and maps its fields onto records as a ``HubSpec`` says (which columns hold the text and the
label, how class ids map onto names, which splits are ours). With ``$TEXTCLS_HUB_DIR`` set,
``<TEXTCLS_HUB_DIR>/<hub id>/`` (a folder in the hub repo's own layout, e.g.
``data/train-00000-of-00001.parquet``) is loaded in place of the id; that is how the hub path
is tested offline.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import urllib.request
from dataclasses import dataclass, replace
from urllib.parse import urlsplit
from pathlib import Path

import datasets

from ..errors import ConfigError, DataError
from . import readers
from .readers import ReadOptions, RecordBuffer, build_text_dataset
from .records import TextDataset
from .splits import split_labels

HUB_DIR_ENV = "TEXTCLS_HUB_DIR"


@dataclass(frozen=True)
class HubSpec:
    """Where a catalogue dataset lives on the Hugging Face hub, and how its fields map.

    ``text_fields`` are joined with a space (None: the first usual text column).
    ``label_names``: class ids map onto these by index. ``value_map``: label values (as
    strings) map onto class names. ``splits``: (ours, hub's) split names; absent hub splits
    are skipped. ``keep_labels``: only these classes count, a record with none of them is
    outside the dataset; ``single_label``: only records with exactly one class (a derived view).
    """

    hub_id: str
    text_fields: tuple[str, ...] | None = ("text",)
    label_field: str | None = "label"
    config: str | None = None
    splits: tuple[tuple[str, str], ...] = (("train", "train"), ("dev", "validation"), ("test", "test"))
    label_names: tuple[str, ...] | None = None
    value_map: tuple[tuple[str, str], ...] | None = None
    keep_labels: tuple[str, ...] | None = None
    single_label: bool = False
    text_join: str = " "
    # Published empty documents are skipped and counted whatever on_bad_record says.
    published_empty: bool = False



def hub_path(hub_id: str) -> str:
    hub_dir = os.environ.get(HUB_DIR_ENV)
    if not hub_dir:
        return hub_id
    path = Path(hub_dir).expanduser() / hub_id
    if not path.is_dir():
        raise DataError(
            f"{path}: no such folder, though {HUB_DIR_ENV}={hub_dir}; put the hub repo '{hub_id}' there "
            f"or unset {HUB_DIR_ENV} to use the hub itself"
        )
    return str(path)


_TRUE = {"1", "ON", "YES", "TRUE"}
# How long the reachability check waits for a TCP connection to the hub (or the proxy).
HUB_PROBE_SECONDS = 3.0


def _probe_target() -> tuple[str, int, str]:
    """(host, port, what) that a request to the hub's endpoint (``HF_ENDPOINT`` or
    huggingface.co) connects to first: the proxy the standard library's own selection picks
    for the endpoint's scheme (``http_proxy``, ``https_proxy``, ``all_proxy``, upper or lower
    case, as ``httpx`` and ``requests`` read them), unless ``no_proxy`` lists the endpoint's
    host; else the endpoint itself. ``what`` names a proxy in the message."""
    endpoint = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    scheme = (endpoint.scheme or "https").lower()
    host = endpoint.hostname or "huggingface.co"
    port = _port(endpoint, scheme)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(scheme) or proxies.get("all")
    if proxy and not urllib.request.proxy_bypass(f"{host}:{port}" if endpoint.port else host):
        url = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        what = f"the {scheme.upper()} proxy " if proxies.get(scheme) else "the proxy of all_proxy "
        return url.hostname or host, _port(url, url.scheme), what
    return host, port, ""


def _port(url, scheme: str) -> int:
    try:
        return url.port or (443 if scheme == "https" else 80)
    except ValueError:  # a port that is not a number: the request fails as it would
        return 443 if scheme == "https" else 80


def hub_unreachable() -> str | None:
    """Why the Hugging Face hub cannot be reached (an offline variable set, no route, no name
    resolution), or None when a TCP connection opens to where a request to it would go: the
    proxy chosen for the endpoint's scheme, or the endpoint itself when no proxy is set or
    ``no_proxy`` lists it (``_probe_target``).

    Offline, ``datasets`` otherwise spends about 27 s in five retries of every request, each
    logged, before its own error. One probe decides instead, and the whole of it (name
    resolution, then a connection to each address it gives) takes at most
    ``HUB_PROBE_SECONDS``: it runs in a daemon thread that is waited for that long, and a probe
    still running then is left to end on its own and counts as no answer. The load then runs in
    the libraries' offline mode, so a copy in the hub cache still loads and a missing one fails
    at once."""
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().upper() in _TRUE:
            return f"{var} is set"
    host, port, what = _probe_target()
    outcome: list[BaseException | None] = []

    def probe():
        try:
            socket.create_connection((host, port), timeout=HUB_PROBE_SECONDS).close()
            outcome.append(None)
        except Exception as err:  # noqa: BLE001 - reported by the calling thread
            outcome.append(err)

    thread = threading.Thread(target=probe, name="textcls-hub-probe", daemon=True)
    thread.start()
    thread.join(HUB_PROBE_SECONDS)
    if not outcome:
        return f"cannot connect to {what}{host}:{port}: no answer within {HUB_PROBE_SECONDS:g} s"
    err = outcome[0]
    if err is None:
        return None
    if not isinstance(err, OSError):
        raise err
    return f"cannot connect to {what}{host}:{port}: {err.strerror or type(err).__name__}"


# Loads in offline mode at once (threads): the first sets the libraries' globals, the last puts
# them back; each saving and restoring its own would leave the process offline when two overlap.
_OFFLINE_LOCK = threading.Lock()
_offline_loads = {"depth": 0, "saved": None}


@contextlib.contextmanager
def _offline_and_quiet():
    """The hub libraries in offline mode (cache only, no retries) and their loggers at ERROR,
    for the length of one load (of the overlapping loads, in threads); both restored after."""
    import huggingface_hub.constants as hub_constants

    loggers = [logging.getLogger(name) for name in ("datasets", "huggingface_hub")]
    with _OFFLINE_LOCK:
        if _offline_loads["depth"] == 0:
            _offline_loads["saved"] = ((hub_constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE,
                                        datasets.config.HF_DATASETS_OFFLINE), [logger.level for logger in loggers])
            hub_constants.HF_HUB_OFFLINE = datasets.config.HF_HUB_OFFLINE = datasets.config.HF_DATASETS_OFFLINE = True
            for logger in loggers:
                logger.setLevel(logging.ERROR)
        _offline_loads["depth"] += 1
    try:
        yield
    finally:
        with _OFFLINE_LOCK:
            _offline_loads["depth"] -= 1
            if _offline_loads["depth"] == 0:
                flags, levels = _offline_loads["saved"]
                hub_constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE, datasets.config.HF_DATASETS_OFFLINE = flags
                for logger, level in zip(loggers, levels):
                    logger.setLevel(level)


def load_hub_dict(hub_id: str, config: str | None, why: str):
    path = hub_path(hub_id)
    local = {}
    offline = None
    if path != hub_id:
        # A local repo folder whose README declares configs is cached by name, not by its
        # files: a changed copy would be served stale. Local files are cheap to re-read.
        local = {"download_mode": "force_redownload", "verification_mode": "no_checks"}
    else:
        offline = hub_unreachable()
    try:
        with _offline_and_quiet() if offline else contextlib.nullcontext():
            return datasets.load_dataset(path, name=config, **local)
    except DataError:
        raise
    except Exception as err:  # network, missing repo, unsupported layout: all end here
        first = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
        if offline:
            # Offline, a missing copy is the likely cause, though not the only one: the error is shown too.
            raise DataError(f"cannot load '{hub_id}': the Hugging Face hub is unreachable ({offline}) and the hub "
                            f"cache holds no copy it can use ({type(err).__name__}: {first}); {why}") from None
        raise DataError(
            f"cannot load '{hub_id}' from the Hugging Face hub ({type(err).__name__}: {first}); {why}"
        ) from err


def load_hub(
    name: str,
    spec: HubSpec,
    options: ReadOptions,
    why: str,
    as_published: bool = False,
) -> TextDataset:
    """Records from a hub dataset (or its ``$TEXTCLS_HUB_DIR`` copy) following ``spec``;
    ``as_published`` for a catalogue corpus (``RecordBuffer``'s)."""
    hub = load_hub_dict(spec.hub_id, spec.config, why)
    available = list(hub.keys())
    text_fields = options.text_columns or spec.text_fields
    label_field = options.label_column if options.label_column is not None else spec.label_field
    value_map = dict(spec.value_map) if spec.value_map else None
    keep_set = set(spec.keep_labels) if spec.keep_labels else None

    def rename(value):
        return value_map.get(str(value), str(value))

    def keep(label):
        if value_map is not None:
            label = [rename(l) for l in label] if isinstance(label, list) else rename(label)
        if keep_set is not None and isinstance(label, list):
            label = [l for l in label if l in keep_set]
            if not label:
                return None
        if spec.single_label:
            if not isinstance(label, list) or len(label) != 1:
                return None
            label = label[0]
        return label

    buffers, notes = {}, {}
    class_names = None
    for ours, theirs in spec.splits:
        if theirs not in hub:
            continue
        buf = buffers[ours] = RecordBuffer(options.on_bad_record, skip_empty_text=spec.published_empty,
                                            as_published=as_published)
        names, left_out = readers.read_table(
            hub[theirs],
            buf,
            where=f"hf:{spec.hub_id} {theirs}",
            text_columns=text_fields,
            label_column=label_field,
            label_names=spec.label_names,
            text_join=spec.text_join,
            keep=keep,
            # A user's hub dataset names tasks as a local file does; a catalogue corpus names none.
            task_column=None if as_published else options.task_column,
        )
        class_names = class_names or names
        notes[ours] = f"official (hub split '{theirs}')" + (
            f"; {left_out} record(s) outside this dataset's definition left out" if left_out else ""
        )
        if not len(buf):
            raise DataError(f"hf:{spec.hub_id} {theirs}: no records left; check the text and label columns")
    if "train" not in buffers:
        raise DataError(
            f"hf:{spec.hub_id}: no train split (it has: {', '.join(available)}); "
            "name a dataset with a train split"
        )
    unused = [s for s in available if s not in {theirs for _, theirs in spec.splits}]
    if unused:
        notes["train"] += f"; hub splits not used: {', '.join(unused)}"
    if value_map:
        order = list(dict.fromkeys(value_map.values()))
    else:
        order = spec.label_names or spec.keep_labels or class_names
    ds = build_text_dataset(name, buffers, label_order=order, split_notes=notes)
    if spec.single_label:
        # As the local derived view: only the classes that occur.
        seen = set(_all_labels(ds))
        ds = replace(ds, label_names=[l for l in ds.label_names if l in seen])
    return ds


def _all_labels(ds: TextDataset) -> list[str]:
    out = []
    for split in ds.splits.values():
        for label in split_labels(split):
            out.extend(label if isinstance(label, list) else [label])
    return out


def parse_hf(source: str) -> HubSpec:
    rest = source[3:]
    hub_id, _, config = rest.partition(":")
    if not hub_id.strip():
        raise ConfigError(f"source '{source}' names no hub dataset; write hf:<owner>/<name>[:<config>]")
    return HubSpec(
        hub_id.strip(),
        text_fields=None,
        label_field=None,
        config=config.strip() or None,
        splits=(("train", "train"), ("dev", "validation"), ("dev", "valid"), ("dev", "dev"), ("test", "test")),
    )

