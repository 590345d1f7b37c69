"""Datasets: the public-file registry, downloads, and (in submodules) task generators and loaders."""

from __future__ import annotations

from paperlab.data.download import ChecksumError, download
from paperlab.data.registry import DATASETS, DatasetNotFoundError, cache_dir, get_dataset, get_file, path

__all__ = ["DATASETS", "ChecksumError", "DatasetNotFoundError", "cache_dir", "download", "get_dataset",
           "get_file", "path"]
