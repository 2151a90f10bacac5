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


SEED_STYLE = """
#include <cstdint>
#include <stdint.h>
#include <mscclpp/proxy_channel_device.hpp>
#include <mscclpp/memory_channel_device.hpp>

// A kernel written against MSCCL++'s earlier names: the proxy channel header and handles, <cstdint> types.
extern "C" __global__ void seed_style(mscclpp::SimpleProxyChannelDeviceHandle* proxy,
                                      mscclpp::MemoryChannelDeviceHandle* mem, uint64_t bytes, int32_t flag) {
  const std::uint32_t tid = threadIdx.x + blockIdx.x * blockDim.x;
  if (tid == 0) {
    proxy[0].putWithSignal(0, 0, bytes);
    proxy[0].wait();
    mem[0].signal();
    mem[0].wait();
  }
  static_assert(sizeof(uint64_t) == 8 && sizeof(int32_t) == 4 && sizeof(uint8_t) == 1, "widths");
  static_assert(UINT32_MAX == 4294967295U, "limits");
  (void)flag;
}
"""


def test_a_seed_style_kernel_compiles(tmp_path: pathlib.Path) -> None:
    src = tmp_path / "seed_style.cu"
    src.write_text(SEED_STYLE)
    mod = mscclpp.compile_native("seed_style", src, arch="sm_90")
    assert mod.cubin("sm_90")[:4] == b"\x7fELF"


def test_nvrtc_is_found_in_site_packages_without_ld_library_path(tmp_path: pathlib.Path) -> None:
    """A fresh process of this interpreter with no LD_LIBRARY_PATH, no activated virtual environment and no
    MSCCLPP_NVRTC_PATH finds the NVRTC that `pip install nvidia-cuda-nvrtc` put into its site-packages."""
    import os
    import subprocess
    import sys

    from mscclpp import _nvrtc_dirs

    if not _nvrtc_dirs():
        pytest.skip("no nvidia-cuda-nvrtc wheel in this interpreter's site-packages")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "VIRTUAL_ENV", "MSCCLPP_NVRTC_PATH")}
    # An empty kernel cache: NVRTC (and its builtins library) must really compile.
    env["MSCCLPP_CACHE_DIR"] = str(tmp_path / "cache")
    src = tmp_path / "k.cu"
    src.write_text('#include <cstdint>\nextern "C" __global__ void k(uint64_t* p) { p[0] = 1; }\n')
    code = f"import mscclpp; m = mscclpp.compile_native('k', {str(src)!r}, arch='sm_90'); print(len(m.cubin('sm_90')))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) > 0
