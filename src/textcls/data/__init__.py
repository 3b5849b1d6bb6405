"""Sources -> records: catalogue names, local files and folders, Hugging Face hub datasets.

``load_dataset(source, **options) -> TextDataset`` is the entry point; ``list_datasets()``
describes the catalogue; ``ensure_dev``/``stratified_split`` make the seeded stratified
splits; ``check_labels`` guards evaluation against classes a model does not know.
"""

from .catalog import DatasetInfo, list_datasets
from .load import load_dataset
from .loaders import data_dir
from .readers import ReadOptions, read_path
from .records import TextDataset
from .splits import check_labels, ensure_dev, stratified_split, subsample

__all__ = [
    "DatasetInfo",
    "ReadOptions",
    "TextDataset",
    "check_labels",
    "data_dir",
    "ensure_dev",
    "list_datasets",
    "load_dataset",
    "read_path",
    "stratified_split",
    "subsample",
]
