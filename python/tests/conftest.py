"""A run of the shipped corpus (900 PubMedQA abstracts, MeSH 2024) built once per session by the
repository's `agrag-pipeline` with the built-in hashing embedder, so the suite needs no model.

The binary: `AGRAG_PIPELINE`, else `<CARGO_TARGET_DIR or target>/debug/agrag-pipeline`.
"""

import os
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def pipeline_binary() -> pathlib.Path:
    if os.environ.get("AGRAG_PIPELINE"):
        return pathlib.Path(os.environ["AGRAG_PIPELINE"])
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return target / "debug" / "agrag-pipeline"


@pytest.fixture(scope="session")
def shipped_root(tmp_path_factory) -> pathlib.Path:
    binary = pipeline_binary()
    if not binary.exists():
        pytest.fail(
            f"no agrag-pipeline at {binary}: run `cargo build -p agrag-pipeline` or set AGRAG_PIPELINE"
        )
    root = tmp_path_factory.mktemp("shipped") / "root"
    env = dict(os.environ, EMBEDDING_PROVIDER="hash")
    done = subprocess.run(
        [str(binary), "run", "--root", str(root), "--threads", "2"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.fail(f"{binary} run exited {done.returncode}:\n{done.stderr[-4000:]}")
    return root


@pytest.fixture()
def root_copy(shipped_root, tmp_path) -> pathlib.Path:
    """A private copy of the shipped run's root, for tests that flag or damage it."""
    dest = tmp_path / "root"
    shutil.copytree(shipped_root, dest)
    return dest
