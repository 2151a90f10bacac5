"""Markers: `gpu` tests need a CUDA GPU and run in the GPU suite's `python` part; `torch` tests need torch.

Nothing is skipped silently: a `gpu` test on a machine without a GPU, or a `torch` test without torch, fails
unless the run deselects it with `-m "not gpu"` / `-m "not torch"` (what CI does, and it then checks the count of
tests that ran: scripts/test.sh)."""

from __future__ import annotations

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

# MSCCL++'s DSL programs are test data (test_language.py runs them), not test modules, although some are named
# `*_test.py`.
collect_ignore = ["dsl_programs"]


def pytest_configure(config: pytest.Config) -> None:
    """The markers, also where pyproject.toml is not beside the tests (the GPU host runs a copy of them)."""
    for line in (
        "gpu: needs a CUDA GPU (the GPU suite's `python` part runs these)",
        "torch: needs torch installed",
        "nvrtc: needs libnvrtc (NVRTC 13) to compile device code",
    ):
        config.addinivalue_line("markers", line)


@pytest.fixture
def repo_root() -> pathlib.Path:
    return ROOT


@pytest.fixture
def plan_file(tmp_path: pathlib.Path) -> pathlib.Path:
    import mscclpp

    p = tmp_path / "allreduce.json"
    mscclpp.plan("allreduce_oneshot_ll", world_size=2).save(os.fspath(p))
    return p


@pytest.fixture
def torch():  # noqa: ANN201 - the torch module
    """torch, imported on demand (a `torch` test fails, never skips, when torch is missing)."""
    import torch as t

    return t
