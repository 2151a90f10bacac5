"""compile_native with NVRTC and no GPU: the user's source is compiled against the mscclpp headers for a named
architecture. Needs libnvrtc (scripts/test.sh installs it from PyPI); marked `nvrtc` so a run without it must
deselect it explicitly."""

from __future__ import annotations

import pathlib

import pytest

import mscclpp

pytestmark = pytest.mark.nvrtc


def test_the_custom_kernel_example_compiles(repo_root: pathlib.Path) -> None:
    mod = mscclpp.compile_native("custom", repo_root / "examples" / "custom_kernel.cu", arch="sm_90")
    assert mod.name == "custom"
    cubin = mod.cubin("sm_90")
    assert cubin[:4] == b"\x7fELF"


def test_a_compile_error_names_the_line(tmp_path: pathlib.Path) -> None:
    src = tmp_path / "broken.cu"
    src.write_text('#include "mscclpp/memory_channel_device.hpp"\nextern "C" __global__ void k() { undefined_thing(); }\n')
    with pytest.raises(mscclpp.Error, match="undefined_thing"):
        mscclpp.compile_native("broken", src, arch="sm_90")
