"""One process on one GPU (the GPU suite's `python` part runs these with `-m gpu`): DLPack sharing with torch, a
closed communicator, bad sizes, and a native kernel launched with typed arguments. Multi-rank checks are the
examples under examples/torch/, run under torchrun."""

from __future__ import annotations

import pathlib
import socket

import pytest

import mscclpp

pytestmark = [pytest.mark.gpu, pytest.mark.torch]



def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def comm() -> mscclpp.CommGroup:
    c = mscclpp.CommGroup(interface_ip_port_trio=f"127.0.0.1:{_free_port()}", rank=0, size=1)
    yield c
    c.close()


def test_raw_gpu_buffer_shares_memory_with_torch(torch) -> None:
    buf = mscclpp.RawGpuBuffer(1 << 20)
    assert buf.nbytes == 1 << 20 and buf.data_ptr() != 0
    assert buf.__dlpack_device__() == (2, buf.device)
    bytes_view = torch.from_dlpack(buf)
    assert bytes_view.dtype == torch.uint8 and bytes_view.numel() == 1 << 20 and bytes_view.is_cuda
    halves = torch.utils.dlpack.from_dlpack(buf.to_dlpack(data_type=torch.float16))
    assert halves.dtype == torch.float16 and halves.numel() == (1 << 19)
    assert halves.data_ptr() == buf.data_ptr() == bytes_view.data_ptr()
    halves.fill_(1.0)  # 0x3c00
    torch.cuda.synchronize()
    assert int(bytes_view[0]) == 0x00 and int(bytes_view[1]) == 0x3C
    del buf  # the views keep the memory alive
    assert float(halves.sum(dtype=torch.float32)) == float(1 << 19)


def test_a_closed_communicator_raises(torch, comm: mscclpp.CommGroup) -> None:
    assert comm.rank == 0 and comm.size == 1 and not comm.closed
    comm.close()
    assert comm.closed
    with pytest.raises(mscclpp.ClosedError, match="closed.*CommGroup"):
        comm.barrier()
    with pytest.raises(mscclpp.ClosedError):
        mscclpp.Executor(comm)


def test_wrong_sizes_are_refused(torch, comm: mscclpp.CommGroup) -> None:
    algo = next(a for a in mscclpp.programs(collective="allreduce"))
    x = torch.ones(1024, dtype=torch.float16, device="cuda")
    with pytest.raises(mscclpp.Error, match="output_size"):
        algo.execute(comm, x.data_ptr(), x.data_ptr(), 2048, 1024, torch.float16)
    with pytest.raises(mscclpp.Error, match="whole float16"):
        algo.execute(comm, x.data_ptr(), x.data_ptr(), 2047, 2047, mscclpp.DataType.float16)
    with pytest.raises(mscclpp.Error, match="not on a CUDA device"):
        algo.execute(comm, torch.ones(4), x, 8, 8, torch.float16)


def test_a_native_kernel_runs(torch, tmp_path: pathlib.Path) -> None:
    src = tmp_path / "fill.cu"
    src.write_text(
        'extern "C" __global__ void fill(unsigned int* out, unsigned long long n, unsigned int v) {\n'
        "  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)"
        " out[i] = v + (unsigned int)i;\n}\n"
    )
    mod = mscclpp.compile_native("fill", src)
    buf = mscclpp.RawGpuBuffer(4096 * 4)
    stream = torch.cuda.current_stream().cuda_stream
    mod.launch("fill", 4, 256, [buf, mscclpp.u64(4096), mscclpp.u32(7)], stream=stream)
    torch.cuda.synchronize()
    out = torch.from_dlpack(buf).view(torch.int32)
    assert out[0].item() == 7 and out[4095].item() == 7 + 4095
    with pytest.raises(mscclpp.Error, match="wrap numbers"):
        mod.launch("fill", 1, 1, [buf, 4096, 7])
