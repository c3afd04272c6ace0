"""Where the public agent data lies: the one place tests, benchmarks and build scripts ask.

The data is vendored here (README.md beside this file), so a clean clone finds it without anything
beside the checkout. A variable still overrides each folder, for a copy kept elsewhere:

- the folder's own variable (`TAUBENCH_DIR`, `SWEBENCH_DIR`, `MINT_ALFWORLD_DIR`; for the tau2 task
  files `TAU2_DATA_DIR`, then `TAUBENCH_DIR`), else
- `SHARED_DATA_DIR/<folder>` (a whole data folder in this layout), else
- the copy in this repository.

A set variable wins even when its folder lacks the files: a test then fails (or skips) naming that
path, instead of silently reading another copy. Standard library only: the Python client's tests,
which have no Django, load this file by path.
"""

from __future__ import annotations

import os
from pathlib import Path

IN_REPO = Path(__file__).resolve().parent

# folder name -> (subfolder of the data folder, variables that override it, first wins)
_FOLDERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "taubench": ("taubench", ("TAUBENCH_DIR",)),
    "tau2": ("taubench", ("TAU2_DATA_DIR", "TAUBENCH_DIR")),
    "swebench": ("swebench", ("SWEBENCH_DIR",)),
    "mint-alfworld": ("mint-alfworld", ("MINT_ALFWORLD_DIR",)),
}


def data_root() -> Path:
    """The whole data folder: `SHARED_DATA_DIR`, else the copy in this repository."""
    return Path(os.environ.get("SHARED_DATA_DIR") or IN_REPO)


def data_dir(name: str) -> Path:
    """One data folder by name (`taubench`, `tau2`, `swebench`, `mint-alfworld`)."""
    subfolder, variables = _FOLDERS[name]
    for variable in variables:
        if os.environ.get(variable):
            return Path(os.environ[variable])
    return data_root() / subfolder
