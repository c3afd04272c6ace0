"""The vendored public data (public_data/, README there): every file is the one its manifest names,
the licence texts its licences require are there, code finds it through the one locator, and nothing
in the repository still points at a data folder outside the checkout."""

from __future__ import annotations

import fnmatch
import hashlib
import subprocess
import tomllib
from pathlib import Path

import pytest

import public_data
from public_data import data_dir, data_root

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "public_data"
MANIFEST = DATA / "MANIFEST.sha256"
# the folder's own files, which are not data: the locator, its README, the manifest, the licence texts
OWN = {"__init__.py", "README.md", "MANIFEST.sha256"}
VARIABLES = ("TAUBENCH_DIR", "TAU2_DATA_DIR", "SWEBENCH_DIR", "MINT_ALFWORLD_DIR", "SHARED_DATA_DIR")


def _manifest() -> dict[str, str]:
    entries = {}
    for line in MANIFEST.read_text(encoding="utf-8").splitlines():
        digest, name = line.split(None, 1)
        entries[name.strip()] = digest
    return entries


def _repository_files() -> list[Path]:
    """Tracked and new (not ignored) files of the checkout; a walk where git is not there."""
    try:
        listed = (
            subprocess.run(
                ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True, check=True
            )
            .stdout.decode()
            .split("\0")
        )
        return [REPO / name for name in listed if name and (REPO / name).is_file()]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", "node_modules", "__pycache__", "var", "build", "test-artifacts"}
        return [p for p in REPO.rglob("*") if p.is_file() and not skip & set(p.relative_to(REPO).parts)]


def test_every_vendored_file_is_what_the_manifest_says():
    entries = _manifest()
    assert len(entries) == 12
    for name, digest in entries.items():
        path = DATA / name
        assert path.is_file(), f"public_data/{name} is missing"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, f"public_data/{name} changed"


def test_the_manifest_lists_every_data_file():
    on_disk = {
        p.relative_to(DATA).as_posix()
        for p in DATA.rglob("*")
        if p.is_file() and p.parent.name not in {"LICENSES", "__pycache__"} and not (p.parent == DATA and p.name in OWN)
    }
    assert on_disk == set(_manifest())


def test_the_licence_texts_are_there():
    licences = DATA / "LICENSES"
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    for name in ("MIT-tau-bench.txt", "MIT-tau2-bench.txt", "MIT-mini-swe-agent.txt", "Apache-2.0-mint-bench.txt"):
        assert f"LICENSES/{name}" in readme
    for name in ("MIT-tau-bench.txt", "MIT-tau2-bench.txt", "MIT-mini-swe-agent.txt"):
        text = (licences / name).read_text(encoding="utf-8")
        assert text.startswith("MIT License") and "Copyright (c)" in text and "Permission is hereby granted" in text
    assert "Apache License" in (licences / "Apache-2.0-mint-bench.txt").read_text(encoding="utf-8")


def test_without_variables_every_folder_is_the_copy_in_the_repository(monkeypatch):
    for variable in VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    assert data_root() == DATA
    for name, marker in (
        ("taubench", "gpt-4o-airline.json"),
        ("tau2", "tau2_airline_tasks.json"),
        ("swebench", "results.json"),
        ("mint-alfworld", "sessions.jsonl"),
    ):
        assert (data_dir(name) / marker).is_file()
        assert data_dir(name).is_relative_to(REPO)


def test_a_variable_overrides_its_folder(monkeypatch, tmp_path):
    for variable in VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("SHARED_DATA_DIR", str(tmp_path))
    assert data_dir("swebench") == tmp_path / "swebench"
    monkeypatch.setenv("TAUBENCH_DIR", str(tmp_path / "tb"))
    assert data_dir("taubench") == data_dir("tau2") == tmp_path / "tb"
    monkeypatch.setenv("TAU2_DATA_DIR", str(tmp_path / "t2"))
    assert data_dir("tau2") == tmp_path / "t2"
    assert data_dir("mint-alfworld") == tmp_path / "mint-alfworld"


def test_the_data_is_not_shipped_in_the_python_package():
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    assert not any(fnmatch.fnmatch("public_data", pattern) for pattern in include)
    assert "public_data" not in config["tool"]["setuptools"].get("package-data", {})
    assert Path(public_data.__file__).resolve().parent == DATA


@pytest.mark.parametrize("needle", ["/work/" + "shared", "shared/" + "data", '"shared" / ' + '"data"'])
def test_nothing_points_outside_the_checkout_for_data(needle):
    data_files = {DATA / name for name in _manifest()}
    offenders = []
    for path in _repository_files():
        if path in data_files or path.suffix in {".gz", ".png", ".jpg", ".ico", ".woff2"}:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if needle in text:
            offenders.append(path.relative_to(REPO).as_posix())
    assert offenders == [], f"{needle!r} in {offenders}"
