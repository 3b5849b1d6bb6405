"""Sources -> records: catalogue names, local files and folders, Hugging Face hub datasets.

``load_dataset(source, **options) -> TextDataset`` is the entry point; ``list_datasets()``
describes the catalogue; ``ensure_dev``/``stratified_split`` make the seeded stratified
splits; ``check_labels`` guards evaluation against classes a model does not know.
"""

from .. import lazy_attributes

_LAZY = {
    "DatasetInfo": "catalog",
    "list_datasets": "catalog",
    "load_dataset": "load",
    "data_dir": "loaders",
    "ReadOptions": "readers",
    "read_path": "readers",
    "TextDataset": "records",
    "check_labels": "splits",
    "ensure_dev": "splits",
    "stratified_split": "splits",
    "subsample": "splits",
}

__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
