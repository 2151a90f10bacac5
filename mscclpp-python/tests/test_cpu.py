"""The module on a machine without a GPU: import, listing, planning, verifying, dtype names, and bad input."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

import mscclpp


def test_import_needs_neither_gpu_nor_torch() -> None:
    code = "import sys, mscclpp; assert 'torch' not in sys.modules, 'torch was imported'; print(mscclpp.__version__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == mscclpp.__version__


def test_error_hierarchy() -> None:
    assert issubclass(mscclpp.Error, Exception)
    subs = (mscclpp.UnsupportedError, mscclpp.NoGpuError, mscclpp.ClosedError, mscclpp.TimeoutError,
            mscclpp.RemoteError, mscclpp.ContextLostError)
    for sub in subs:
        assert issubclass(sub, mscclpp.Error)
    assert mscclpp.TimeoutError is not TimeoutError  # mscclpp's own, under mscclpp.Error
    assert {s.__name__ for s in subs} <= set(mscclpp.__all__)


def test_stubs_and_marker_are_shipped() -> None:
    pkg = pathlib.Path(mscclpp.__file__).parent
    assert (pkg / "py.typed").is_file()
    stub = (pkg / "_mscclpp.pyi").read_text()
    for name in mscclpp.__all__:
        if name in ("Finding", "VerifyReport", "verify", "tune", "get_tuned_config", "is_nvls_supported",
                    "AlgorithmCollection", "AlgorithmCollectionBuilder", "NativeAlgorithm", "PacketType",
                    "ExecutionPlanHandle",
                    "ExecutionPlanRegistry", "ExecutionRequest", "AlgoSpec", "compile"):
            continue  # pure Python, typed in report.py, tuning.py, collection.py, language/ and __init__.py
        assert name in stub, f"{name} missing from _mscclpp.pyi"


def test_listing_programs() -> None:
    progs = mscclpp.programs()
    assert len(progs) >= 5
    names = {p.name for p in progs}
    assert "allreduce_oneshot_ll" in names
    for p in progs:
        assert p.collective in ("allreduce", "allgather", "reducescatter", "broadcast", "alltoall", "sendrecv")
        lo, hi = p.message_range
        assert lo >= 0 and (hi is None or hi >= lo)
        assert isinstance(p.tags, dict)
    ar = mscclpp.programs(collective="all_reduce", world_size=2)
    assert ar and all(p.collective == "allreduce" for p in ar)


def test_planning() -> None:
    p = mscclpp.plan("allreduce_oneshot_ll", world_size=2)
    assert p.name == "allreduce_oneshot_ll"
    assert p.collective == "allreduce"
    assert p.world_size == 2
    doc = json.loads(p.to_json())
    assert doc["name"] == "allreduce_oneshot_ll"
    assert len(doc["gpus"]) == 2
    wide = mscclpp.plan("allreduce_oneshot_ll", world_size=2, instances=2)
    assert wide.thread_blocks == 2 * p.thread_blocks
    tuned = mscclpp.plan("allreduce_oneshot_ll", world_size=4, message_size=64 << 10)
    assert tuned.world_size == 4 and tuned.thread_blocks >= 1


def test_plan_file_round_trip(plan_file: pathlib.Path) -> None:
    p = mscclpp.ExecutionPlan(plan_file)
    assert p.name == "allreduce_oneshot_ll" and p.world_size == 2
    again = mscclpp.ExecutionPlan.from_json(p.to_json())
    assert json.loads(again.to_json()) == json.loads(p.to_json())


def test_verifying_a_good_plan(plan_file: pathlib.Path) -> None:
    report = mscclpp.verify(plan_file, schedules=8)
    assert report.ok, [f.message for f in report.findings]
    assert report.plan == "allreduce_oneshot_ll"
    assert report.world_size == 2 and report.schedules == 8 and report.size > 0
    report16 = mscclpp.verify(mscclpp.plan("allgather_allpairs", world_size=4), dtype=mscclpp.DataType.float16)
    assert report16.ok and report16.dtype == "f16"


def test_verifying_a_broken_plan_reports_findings(plan_file: pathlib.Path, tmp_path: pathlib.Path) -> None:
    doc = json.loads(plan_file.read_text())
    # Drop every operation of rank 1: its peers wait for signals that never come, and its output is never written.
    for tb in doc["gpus"][1]["threadblocks"]:
        tb["ops"] = []
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(doc))
    report = mscclpp.verify(mscclpp.ExecutionPlan.from_json(json.dumps(doc)), schedules=4)
    assert not report.ok
    assert report.findings[0].kind
    assert all(isinstance(f, mscclpp.Finding) and f.message for f in report.findings)


def test_dtype_names() -> None:
    from mscclpp.utils import torch_dtype_to_mscclpp_dtype

    assert torch_dtype_to_mscclpp_dtype("torch.float16") == mscclpp.DataType.float16
    assert torch_dtype_to_mscclpp_dtype("torch.bfloat16") == mscclpp.DataType.bfloat16
    assert torch_dtype_to_mscclpp_dtype("float32") == mscclpp.DataType.float32
    assert torch_dtype_to_mscclpp_dtype(mscclpp.DataType.int32) == mscclpp.DataType.int32
    assert mscclpp.DataType.float16.size == 2 and mscclpp.DataType.float32.size == 4
    with pytest.raises(mscclpp.Error, match="float64.*not supported.*torch.float16"):
        torch_dtype_to_mscclpp_dtype("torch.float64")


def test_unknown_program_names_the_known_ones() -> None:
    with pytest.raises(mscclpp.Error, match=r"no program named \"allreduce_nope\".*allreduce_oneshot_ll"):
        mscclpp.plan("allreduce_nope", world_size=2)


def test_unknown_collective() -> None:
    with pytest.raises(mscclpp.Error, match="unknown collective.*allreduce"):
        mscclpp.programs(collective="gossip")


def test_wrong_world_size_is_unsupported() -> None:
    with pytest.raises(mscclpp.UnsupportedError, match="runs on"):
        mscclpp.plan("allreduce_oneshot_ll", world_size=0)


def test_bad_plan_files(tmp_path: pathlib.Path) -> None:
    with pytest.raises(mscclpp.Error, match="does not exist.*mscclpp plan"):
        mscclpp.ExecutionPlan(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": 3}')
    with pytest.raises(mscclpp.Error, match="bad.json"):
        mscclpp.ExecutionPlan(bad)
    with pytest.raises(mscclpp.Error, match="plan JSON"):
        mscclpp.ExecutionPlan.from_json("not json")


def test_bad_verify_options(plan_file: pathlib.Path) -> None:
    with pytest.raises(mscclpp.Error, match="ll8.*ll16"):
        mscclpp.verify(plan_file, packet="ll32")


def test_commgroup_needs_its_arguments() -> None:
    with pytest.raises(mscclpp.Error, match="from_env"):
        mscclpp.CommGroup()
    with pytest.raises(mscclpp.Error, match="rank 3 is not below size 2"):
        mscclpp.CommGroup(interface_ip_port_trio="lo:127.0.0.1:29500", rank=3, size=2)
    with pytest.raises(mscclpp.Error, match="non-negative"):
        mscclpp.CommGroup(interface_ip_port_trio="lo:127.0.0.1:29500", rank=-1, size=2)
    with pytest.raises(mscclpp.Error, match="interface_ip_port_trio"):
        mscclpp.CommGroup(interface_ip_port_trio="no-port-here", rank=0, size=2)


def _gpu_present() -> bool:
    return os.path.exists("/dev/nvidia0") or os.path.exists("/dev/nvidiactl")


class _FakeMpi:
    """What CommGroup reads of an mpi4py communicator: rank, size and a broadcast from rank 0."""

    def __init__(self, rank: int, size: int) -> None:
        self.rank = rank
        self.size = size
        self.sent: list = []

    def Get_rank(self) -> int:  # noqa: N802 (mpi4py's name)
        return self.rank

    def Get_size(self) -> int:  # noqa: N802
        return self.size

    def bcast(self, obj: object, root: int = 0) -> object:
        self.sent.append((obj, root))
        return obj


def test_mscclpp_names_of_commgroup() -> None:
    # MSCCL++'s keyword, and the trio given positionally, reach the same checks as ours.
    with pytest.raises(mscclpp.Error, match="rank 3 is not below size 2"):
        mscclpp.CommGroup(interfaceIpPortTrio="lo:127.0.0.1:29500", rank=3, size=2)
    with pytest.raises(mscclpp.Error, match="rank 3 is not below size 2"):
        mscclpp.CommGroup("lo:127.0.0.1:29500", rank=3, size=2)
    with pytest.raises(mscclpp.Error, match="MPI communicator"):
        mscclpp.CommGroup(interfaceIpPortTrio="", rank=0, size=2)
    with pytest.raises(mscclpp.Error, match="rank 2 of 2"):
        mscclpp.CommGroup(_FakeMpi(2, 2))
    # MSCCL++'s module path and NVLS probe.
    from mscclpp.comm import CommGroup

    assert CommGroup is mscclpp.CommGroup
    assert mscclpp.is_nvls_supported() is False
    assert repr(mscclpp.ReduceOp.NOP) == "ReduceOp.NOP" and mscclpp.ReduceOp.NOP != mscclpp.ReduceOp.SUM
    for name in ("my_rank", "nranks", "nranks_per_node", "communicator"):
        assert hasattr(mscclpp.CommGroup, name), name


@pytest.mark.skipif(_gpu_present(), reason="this test checks the no-GPU error; the GPU suite covers the GPU path")
def test_an_mpi_communicator_carries_rank_zeros_id() -> None:
    fake = _FakeMpi(0, 1)
    with pytest.raises(mscclpp.NoGpuError):
        mscclpp.CommGroup(fake)
    assert len(fake.sent) == 1 and fake.sent[0][1] == 0
    assert isinstance(fake.sent[0][0], str) and fake.sent[0][0], "rank 0 broadcast its bootstrap id"


def test_from_env_without_a_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    for v in ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
              "SLURM_PROCID", "SLURM_NTASKS", "MSCCLPP_RANK", "MSCCLPP_WORLD_SIZE"):
        monkeypatch.delenv(v, raising=False)
    with pytest.raises(mscclpp.Error, match="torchrun"):
        mscclpp.CommGroup.from_env()


@pytest.mark.skipif(_gpu_present(), reason="this test checks the no-GPU error; the GPU suite covers the GPU path")
def test_gpu_calls_without_a_gpu_raise_no_gpu_error() -> None:
    for call in (
        lambda: mscclpp.RawGpuBuffer(1 << 20),
        lambda: mscclpp.CommGroup(interface_ip_port_trio="lo:127.0.0.1:29511", rank=0, size=1),
    ):
        with pytest.raises(mscclpp.NoGpuError, match="GPU machine"):
            call()


def test_bad_buffer_sizes() -> None:
    with pytest.raises(mscclpp.Error, match="nbytes must be positive"):
        mscclpp.RawGpuBuffer(0)


def test_kernel_arguments_are_typed() -> None:
    assert isinstance(mscclpp.i32(-1), mscclpp.KernelArg)
    assert isinstance(mscclpp.u64(1 << 40), mscclpp.KernelArg)
    assert isinstance(mscclpp.ptr(0x1000), mscclpp.KernelArg)
    with pytest.raises(OverflowError):
        mscclpp.u32(-1)
    with pytest.raises(mscclpp.Error, match="device address"):
        mscclpp.ptr("not a pointer")


def test_compile_native_reports_a_missing_file(tmp_path: pathlib.Path) -> None:
    with pytest.raises(mscclpp.Error, match="is not a file"):
        mscclpp.compile_native("k", tmp_path / "nope.cu", arch="sm_90")


def test_tuned_config_without_a_table_is_none_and_names_are_checked() -> None:
    # No table is installed in a fresh process: selection uses the programs' own tables.
    assert mscclpp.get_tuned_config(1 << 20) is None
    assert mscclpp.get_tuned_config(4096, collective="all_gather", inplace=True) is None
    with pytest.raises(mscclpp.Error, match="unknown collective"):
        mscclpp.get_tuned_config(1024, collective="allsum")
    assert callable(mscclpp.tune) and "tune" in mscclpp.__all__


def test_python_m_mscclpp_install_writes_the_default_plans(tmp_path: pathlib.Path) -> None:
    import json
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "mscclpp", "--install", "--world-sizes", "2", "--dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "installed" in r.stdout
    index = json.loads((tmp_path / "default" / "index.json").read_text())
    assert index and all(p["world_size"] == 2 for p in index)
    assert (tmp_path / "default" / index[0]["file"]).is_file()
    r = subprocess.run([sys.executable, "-m", "mscclpp"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--install" in r.stdout


def test_mscclpp_default_algorithm_names_are_served() -> None:
    """MSCCL++'s guides pick algorithms by name from build_default_algorithms; each name is there, of its
    collective, and served by one of this library's programs at the sizes the guides use it for."""
    from mscclpp.collection import MscclppNamedAlgorithm

    algos = mscclpp.AlgorithmCollectionBuilder().build_default_algorithms(scratch_buffer=0, scratch_buffer_size=1 << 27,
                                                                           rank=0)
    assert mscclpp.AlgorithmCollectionBuilder() is mscclpp.AlgorithmCollectionBuilder(), "one builder per process"
    by_name = {a.name: a for a in algos}
    # This library's own programs are in the collection too.
    assert "allreduce_oneshot_ll" in by_name and "allgather_allpairs" in by_name
    wanted = {
        ("default_allreduce_packet", 1024): "allreduce_oneshot_ll",
        ("default_allreduce_packet", 1 << 20): "allreduce_twoshot_ll128",
        ("default_allreduce_nvls_packet", 1024): "allreduce_oneshot_ll",
        ("default_allreduce_rsag_zero_copy", 1 << 20): "allreduce_rsag",
        ("default_allreduce_rsag_zero_copy", 128 << 20): "allreduce_twoshot",
        ("default_allreduce_nvls_zero_copy", 16 << 20): "allreduce_rsag",
        ("default_allreduce_nvls_warp_pipeline", 16 << 20): "allreduce_rsag",
        ("default_allgather_fullmesh", 64 << 20): "allgather_allpairs",
    }
    for (name, size), program in wanted.items():
        a = by_name[name]
        assert isinstance(a, MscclppNamedAlgorithm)
        assert a.collective == ("allgather" if "allgather" in name else "allreduce")
        assert a.serves(size, 2) == program, (name, size)
    # A size no program of the name runs: execute would answer a non-zero code, not raise.
    assert by_name["default_allreduce_allpair_packet"].serves(64 << 20, 2) is None
    assert len(algos.get_by_collective("allgather")) >= 3


def test_mscclpp_named_execute_returns_a_code_for_what_it_does_not_run() -> None:
    """MSCCL++'s tuning loops skip a configuration when execute returns non-zero; nothing reaches the GPU then."""
    from mscclpp.collection import COMM_INVALID_ARGUMENT

    algos = mscclpp.AlgorithmCollectionBuilder().build_default_algorithms(0, 0, 0)
    packet = [a for a in algos if a.name == "default_allreduce_allpair_packet"][0]

    class Comm:  # only the size is read before the program is chosen
        size = 2

    too_big = 64 << 20
    assert packet.execute(Comm(), 0, 0, too_big, too_big, mscclpp.DataType.float16,
                          op=mscclpp.ReduceOp.SUM) == COMM_INVALID_ARGUMENT
    assert packet.execute(Comm(), 0, 0, 1024, 1024, mscclpp.DataType.float16, op=mscclpp.ReduceOp.SUM,
                          accum_dtype=mscclpp.DataType.float32) == COMM_INVALID_ARGUMENT


def test_added_algorithms_join_the_collection() -> None:
    class Mine:
        name, collective = "my_allreduce", "allreduce"

        def execute(self, *args, **kwargs) -> int:
            return 0

    b = mscclpp.AlgorithmCollectionBuilder()
    try:
        b.add_algorithm_builder(Mine())
        assert [a.name for a in b.build()] == ["my_allreduce"]
        assert "my_allreduce" in [a.name for a in b.build_default_algorithms(0, 0, 0)]
        with pytest.raises(ValueError, match="needs `name`"):
            b.add_algorithm_builder(object())
    finally:
        mscclpp.AlgorithmCollectionBuilder.reset()
    assert len(mscclpp.AlgorithmCollectionBuilder().build()) == 0


def test_native_algorithms_behave_like_the_defaults() -> None:
    """A user kernel wrapped as an algorithm: MSCCL++'s create_from_native_capsule, execute's signature and codes,
    the collection and the builder (the launch is a recorder here; on GPUs it is a compile_native module's launch)."""
    from mscclpp.collection import COMM_INVALID_ARGUMENT, COMM_SUCCESS

    calls = []

    def launch(comm, inp, out, in_size, out_size, dtype, op, stream, nblocks, nthreads, extras):
        calls.append((inp, out, in_size, out_size, stream, nblocks, nthreads, extras))
        return None if nblocks != 3 else 7

    class Comm:
        size = 4

    class Buf:
        def __init__(self, p: int) -> None:
            self.ptr = p

    algo = mscclpp.Algorithm.create_from_native_capsule(
        {"name": "my_oneshot", "collective": "allreduce", "launch": launch, "message_sizes": (0, 1 << 20),
         "world_sizes": (2, 8)})
    assert isinstance(algo, mscclpp.NativeAlgorithm) and algo.is_native_algorithm()
    assert mscclpp.Algorithm.create_from_native_capsule(algo) is algo
    f16 = mscclpp.DataType.float16
    assert algo.execute(Comm(), 0x1000, Buf(0x2000), 4096, 4096, f16, op=mscclpp.ReduceOp.SUM, stream=5,
                        nblocks=8, nthreads_per_block=512) == COMM_SUCCESS
    assert calls == [(0x1000, 0x2000, 4096, 4096, 5, 8, 512, {})]
    # A configuration the launch refuses, a size or world size outside the ranges: a code, nothing launched for
    # the last two.
    assert algo.execute(Comm(), 1, 2, 8, 8, f16, nblocks=3) == 7
    assert algo.execute(Comm(), 1, 2, 2 << 20, 2 << 20, f16) == COMM_INVALID_ARGUMENT
    Comm.size = 16
    assert algo.execute(Comm(), 1, 2, 8, 8, f16) == COMM_INVALID_ARGUMENT
    assert len(calls) == 2
    assert algo.serves(1024, 4) == "my_oneshot" and algo.serves(1024, 16) is None
    with pytest.raises(TypeError, match="device pointer"):
        Comm.size = 4
        algo.execute(Comm(), object(), 2, 8, 8, f16)
    # An object with the attributes works too; anything else is refused with what to pass instead.
    class Spec:
        name, collective = "my_gather", "allgather"

        @staticmethod
        def launch(*args):
            return 0

    assert mscclpp.Algorithm.create_from_native_capsule(Spec()).collective == "allgather"
    with pytest.raises(TypeError, match="compile_native"):
        mscclpp.Algorithm.create_from_native_capsule(object())
    with pytest.raises(ValueError, match="unknown collective"):
        mscclpp.NativeAlgorithm("x", "allsum", launch)
    # It joins the collection like any added algorithm.
    b = mscclpp.AlgorithmCollectionBuilder()
    try:
        b.add_algorithm_builder(algo)
        assert algo in b.build_default_algorithms(0, 0, 0).get_by_collective("allreduce")
    finally:
        mscclpp.AlgorithmCollectionBuilder.reset()


def test_executor_execute_takes_mscclpps_argument_order_and_ours() -> None:
    from mscclpp._mscclpp import _execute_args

    plan = mscclpp.plan("allreduce_twoshot", world_size=2)
    f16 = mscclpp.DataType.float16
    # MSCCL++: execute(rank, send_buff, recv_buff, send_buff_size, recv_buff_size, data_type, plan, stream, packet_type)
    a = _execute_args(1, 0x1000, 0x2000, 4096, 4096, f16, plan, 7, mscclpp.PacketType.LL16)
    assert (a["order"], a["rank"], a["input"], a["output"], a["input_size"], a["stream"]) == \
        ("mscclpp", 1, 0x1000, 0x2000, 4096, 7)
    assert a["plan"] is plan and a["dtype"] == f16
    k = _execute_args(rank=0, send_buff=1, recv_buff=2, send_buff_size=8, recv_buff_size=8, data_type=f16, plan=plan,
                      stream=0)
    assert k["order"] == "mscclpp" and k["rank"] == 0
    # Ours: execute(plan, input_buffer, output_buffer, input_size, output_size, dtype, stream=0)
    o = _execute_args(plan, 0x1000, 0x2000, 4096, 4096, f16)
    assert (o["order"], o["rank"], o["stream"], o["input_size"]) == ("ours", None, 0, 4096)
    with pytest.raises(mscclpp.UnsupportedError, match="LL16"):
        _execute_args(0, 1, 2, 8, 8, f16, plan, 0, mscclpp.PacketType.LL8)
    with pytest.raises(TypeError, match="missing `plan`"):
        _execute_args(0, 1, 2, 8, 8, f16)
    with pytest.raises(TypeError, match="unexpected keyword `bogus`"):
        _execute_args(plan, 1, 2, 8, 8, f16, bogus=1)


def test_the_plan_registry_verifies_registers_and_selects() -> None:
    reg = mscclpp.ExecutionPlanRegistry()
    assert reg is mscclpp.ExecutionPlanRegistry() and mscclpp.plan.registry is reg
    try:
        small = mscclpp.plan("allreduce_oneshot_ll", world_size=2)
        large = mscclpp.plan("allreduce_twoshot", world_size=2)
        h_small = mscclpp.plan.register(small, tags=["packet"])
        h_large = reg.register_plan(large)
        assert reg.register_plan(small) is h_small, "registering again returns the same handle"
        assert h_small.tags == frozenset({"packet"}) and h_small.collective == "allreduce"
        assert reg.get(h_small.id) is h_small and [h.id for h in reg.get_plans("allreduce")] == [h_small.id, h_large.id]
        # No selector: the first plan that fits (world size and message range).
        assert reg.select("allreduce", 2, 2, message_size=1024) is h_small
        assert reg.select("allreduce", 2, 2, message_size=64 << 20) is h_large
        assert reg.select("allreduce", 4, 4, message_size=1024) is None, "no plan for 4 ranks"
        assert reg.select("allgather", 2, 2, message_size=1024) is None
        # A selector sees the plans and the request, and may decline.
        seen = []

        def pick(plans, req):
            seen.append((len(plans), req.collective, req.message_size, req.send_buffer))
            return plans[-1].plan if req.message_size > 4096 else None

        mscclpp.plan.set_selector(pick)
        assert mscclpp.plan.select("allreduce", 2, 2, send_buffer=7, message_size=8192) is h_large
        assert reg.select("allreduce", 2, 2, message_size=1024) is None
        assert seen == [(2, "allreduce", 8192, 7), (2, "allreduce", 1024, 0)]
        mscclpp.plan.set_selector(lambda plans, req: "not a plan")
        with pytest.raises(mscclpp.Error, match="not one of the registered plans"):
            reg.select("allreduce", 2, 2, message_size=1024)
        with pytest.raises(TypeError):
            reg.set_selector(42)
        # mscclpp.plan is still the function that compiles programs.
        assert mscclpp.plan("allgather_allpairs", world_size=2).collective == "allgather"
    finally:
        mscclpp.ExecutionPlanRegistry.reset_instance()
    assert mscclpp.ExecutionPlanRegistry().get_plans("allreduce") == []


def test_a_plan_with_findings_is_refused() -> None:
    import json as _json

    plan = mscclpp.plan("allreduce_twoshot", world_size=2)
    doc = _json.loads(plan.to_json())
    # Drop every wait: the reads of the peers' inputs then race with the peers' writes.
    for gpu in doc["gpus"]:
        for tb in gpu["threadblocks"]:
            tb["ops"] = [op for op in tb["ops"] if op["name"] != "wait"]
    broken = mscclpp.ExecutionPlan.from_json(_json.dumps(doc))
    try:
        with pytest.raises(mscclpp.Error, match="refused"):
            mscclpp.plan.register(broken)
        assert mscclpp.ExecutionPlanRegistry().get_plans("allreduce") == []
    finally:
        mscclpp.ExecutionPlanRegistry.reset_instance()


def test_the_command_line_runs_from_the_wheel() -> None:
    """The wheel's `mscclpp` console script and `python3 -m mscclpp COMMAND` run the command line."""
    from mscclpp.cli import main as cli_main

    out = subprocess.run([sys.executable, "-m", "mscclpp", "list"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "allreduce_rsag" in out.stdout and "reducescatter_fused" in out.stdout
    script = pathlib.Path(sys.executable).parent / "mscclpp"
    if script.exists():  # pip writes it beside the interpreter of the environment the wheel is installed in
        v = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=120)
        assert v.returncode == 0 and v.stdout.startswith("mscclpp 0.1.0"), (v.stdout, v.stderr)
    assert cli_main(["verify", "allreduce_oneshot_ll", "--world-size", "2", "--instances", "1"]) == 0
    assert cli_main(["no-such-command"]) == 2
    assert cli_main(["plan", "no_such_program", "--world-size", "2"]) != 0
