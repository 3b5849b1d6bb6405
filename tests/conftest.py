import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO / ".." / "shared" / "datasets").resolve()

# Tests read the real shared datasets; a user may point elsewhere before running pytest.
os.environ.setdefault("TEXTCLS_DATA_DIR", str(SHARED_DATA))
torch.set_num_threads(min(2, torch.get_num_threads()))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return Path(os.environ["TEXTCLS_DATA_DIR"])
