"""`mscclpp.language`: MSCCL++'s DSL example programs, unchanged, build the plans MSCCL++'s own DSL produced.

Each program of `dsl_programs/` runs in this process with the arguments the corpus was generated with (2, 4 and 8
ranks where it takes a rank count; multi-node programs two nodes), its printed plan compared with
`tests/corpus/mscclpp/generated/<folder>__<program>__n<ranks>.json`. The few that differ do so in one documented
way (docs/python.md) and pass the verifier."""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
import runpy
import sys

import pytest

import mscclpp

HERE = pathlib.Path(__file__).resolve().parent
PROGRAMS = HERE / "dsl_programs"
CORPUS = HERE.parents[1] / "tests" / "corpus" / "mscclpp" / "generated"

# In place, the input and output are one buffer, and a chunk of it is written with the builder's name for it where
# MSCCL++ keeps the name the program used: the same memory (docs/python.md, "MSCCL++'s Python DSL").
DIFFERS = {"single_node__allgather_pkt_rppkt", "single_node__allreduce_pipeline"}


def cases():
    out = []
    for f in sorted(PROGRAMS.glob("*.py")):
        parts = f.stem.split("__")
        folder, prog = parts[0], parts[-1]
        if folder == "single_node" and len(parts) == 3:
            folder = parts[1]
        if folder == "unit_tests":
            folder = "unit"
        src = f.read_text()
        takes_ranks = "--num_gpus" in src or "--gpus_per_node" in src
        for n in ([2, 4, 8] if takes_ranks else [2]):
            corpus = CORPUS / f"{folder}__{prog}__n{n}.json"
            if not corpus.exists():
                continue
            args = ["--name", prog] if '"--name"' in src else []
            if folder == "multi_node":
                args += (["--num_gpus", str(2 * n)] if "--num_gpus" in src else []) + ["--gpus_per_node", str(n)]
                args += ["--tbg_size", "2"] if "--tbg_size" in src else []
                args += ["--nnodes", "2"] if "--nnodes" in src else []
            elif "--num_gpus" in src:
                args += ["--num_gpus", str(n)]
            out.append(pytest.param(f, args, corpus, id=f"{f.stem}-n{n}"))
    return out


CASES = cases()


def run(program: pathlib.Path, args):
    """Run `program` as a script with `args`; its standard output."""
    old = sys.argv
    sys.argv = [str(program)] + args
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(str(program), run_name="__main__")
    finally:
        sys.argv = old
    return out.getvalue()


def test_the_programs_and_their_corpus_plans_are_there():
    assert len(list(PROGRAMS.glob("*.py"))) == 62
    assert len(CASES) >= 90


@pytest.mark.parametrize("program,args,corpus", CASES)
def test_a_dsl_program_builds_the_plan_of_mscclpps_dsl(program, args, corpus):
    ours = json.loads(run(program, args))
    theirs = json.loads(corpus.read_text())
    if program.stem in DIFFERS:
        assert ours != theirs
        # Same shape, and only input references of operations differ.
        assert [len(g["threadblocks"]) for g in ours["gpus"]] == [len(g["threadblocks"]) for g in theirs["gpus"]]
        report = mscclpp.verify(mscclpp.ExecutionPlan.from_json(json.dumps(ours)), schedules=4)
        assert report.ok, [f.message for f in report.findings]
    else:
        assert ours == theirs


def test_an_error_names_the_line_of_the_python_call(tmp_path):
    program = tmp_path / "bad.py"
    program.write_text(
        "from mscclpp.language import *\n"
        "with CollectiveProgram('bad', AllGather(2, 1, True), 2):\n"
        "    ch = MemoryChannel(1, 0)\n"
        "    ch.put(Rank(0).get_output_buffer()[0:1], Rank(0).get_output_buffer()[0:1], tb=0)\n"
        "    print(JSON())\n"
    )
    with pytest.raises(mscclpp.Error) as e:
        run(program, [])
    assert f"{program}:4: " in str(e.value), str(e.value)
    # Found after the last call: the lines it names are the program's too.
    program.write_text(
        "from mscclpp.language import *\n"
        "with CollectiveProgram('bad', AllGather(2, 1, True), 2):\n"
        "    ch = MemoryChannel(1, 0)\n"
        "    ch.signal(tb=0)\n"
        "    print(JSON())\n"
    )
    with pytest.raises(mscclpp.Error) as e:
        run(program, [])
    assert f"signals at {program}:4)" in str(e.value), str(e.value)


def test_the_quick_start_program_gives_a_plan_object():
    from mscclpp.language import AllGather, CollectiveProgram, MemoryChannel, Rank, SyncType

    with CollectiveProgram("allgather", AllGather(2, 1, True), 2) as prog:
        for src in range(2):
            for dst in range(2):
                if src != dst:
                    ch = MemoryChannel(dst, src)
                    ch.signal(tb=0, relaxed=True)
                    ch.wait(tb=0, data_sync=SyncType.after, relaxed=True)
                    ch.put(Rank(dst).get_output_buffer()[src:src + 1], Rank(src).get_output_buffer()[src:src + 1], tb=0)
                    ch.signal(tb=0, data_sync=SyncType.before)
                    ch.wait(tb=0, data_sync=SyncType.after)
        plan = prog.plan()
    assert isinstance(plan, mscclpp.ExecutionPlan)
    assert mscclpp.verify(plan, schedules=4).ok


def test_compile_takes_an_algorithm_function_and_its_spec():
    from mscclpp.language import AlgoSpec, AllGather, CollectiveProgram, MemoryChannel, Rank, SyncType

    def allgather(spec):
        with CollectiveProgram.from_spec(spec) as prog:
            n = spec.world_size
            for src in range(n):
                for dst in range(n):
                    if src != dst:
                        ch = MemoryChannel(dst, src)
                        ch.signal(tb=0, relaxed=True)
                        ch.wait(tb=0, data_sync=SyncType.after, relaxed=True)
                        chunk = Rank(src).get_output_buffer()[src:src + 1]
                        ch.put(Rank(dst).get_output_buffer()[src:src + 1], chunk, tb=0)
                        ch.signal(tb=0, data_sync=SyncType.before)
                        ch.wait(tb=0, data_sync=SyncType.after)
        return prog

    spec = AlgoSpec(name="allgather", collective=AllGather(4, 1, True), nranks_per_node=4, world_size=4,
                    in_place=True, instances=1, protocol="Simple")
    plan = mscclpp.compile(algo=allgather, algo_spec=spec, rank=0)
    assert mscclpp.verify(plan, schedules=4).ok
    with pytest.raises(ValueError):
        mscclpp.compile(algo=None, algo_spec=spec, rank=0)
    # The JIT path: the same spec as keywords, the collective by name or as an object; the same plan.
    from mscclpp import jit

    for collective in ("allgather", AllGather(4, 1, True)):
        jitted = jit.compile(allgather, "allgather", collective, nranks_per_node=4, world_size=4)
        assert jitted.to_json() == plan.to_json()
    with pytest.raises(ValueError, match="unknown collective"):
        jit.compile(allgather, "x", "allsum", nranks_per_node=4, world_size=4)


def test_the_dsl_example_programs_verify_at_several_world_sizes(repo_root):
    """examples/torch/dsl_program.py's all-gather and two-shot all-reduce (the GPU suite runs them)."""
    example = runpy.run_path(str(repo_root / "examples" / "torch" / "dsl_program.py"), run_name="example")
    for world in (2, 3, 4, 8):
        for name, algo, collective in (("ag", example["allgather"], example["AllGather"](world, 1, True)),
                                       ("ar", example["two_shot_allreduce"], example["AllReduce"](world, 1, True))):
            plan = mscclpp.compile(algo=algo, algo_spec=example["spec"](name, collective, world), rank=0)
            report = mscclpp.verify(plan, schedules=8)
            assert report.ok, (name, world, [f.message for f in report.findings])


GUIDE_NVLS_ALLREDUCE = '''
from mscclpp.language import *
import mscclpp


def allreduce_nvls(spec: mscclpp.AlgoSpec) -> CollectiveProgram:
    gpu_size = spec.world_size
    with CollectiveProgram(
        spec.name,
        spec.collective,
        gpu_size,
        instances=8,
        protocol=spec.protocol,
        num_threads_per_block=spec.num_threads_per_block,
        min_message_size=spec.min_message_size,
        max_message_size=spec.max_message_size,
    ) as program:
        nvls_chan = SwitchChannel(rank_list=[gpu for gpu in range(gpu_size)], buffer_type=BufferType.input)
        channels = {}
        for gpu in range(gpu_size):
            for peer in range(gpu_size):
                if peer != gpu:
                    channels[(peer, gpu)] = MemoryChannel(peer, gpu)
        for gpu in range(gpu_size):
            src_rank = gpu
            for peer in range(gpu_size):
                if peer != src_rank:
                    dst_rank = peer
                    channels[(dst_rank, src_rank)].signal(tb=0, relaxed=True)
            for peer in range(gpu_size):
                if peer != src_rank:
                    dst_rank = peer
                    channels[(dst_rank, src_rank)].wait(tb=0, relaxed=True, data_sync=SyncType.after)
        for gpu in range(gpu_size):
            buffer_offset = gpu
            rank = Rank(gpu)
            input_buffer = rank.get_input_buffer()
            nvls_chan.at_rank(gpu).reduce(
                buffer_offset=buffer_offset, size=1, dst_chunk=input_buffer[gpu : gpu + 1], tb=0
            )
            nvls_chan.at_rank(gpu).broadcast(
                src_chunk=input_buffer[gpu : gpu + 1], buffer_offset=buffer_offset, size=1, tb=0
            )
        for gpu in range(gpu_size):
            src_rank = gpu
            for peer in range(gpu_size):
                if peer != src_rank:
                    dst_rank = peer
                    channels[(dst_rank, src_rank)].signal(tb=0, relaxed=True, data_sync=SyncType.before)
            for peer in range(gpu_size):
                if peer != src_rank:
                    dst_rank = peer
                    channels[(dst_rank, src_rank)].wait(tb=0, relaxed=True)

    return program
'''


def test_the_integration_guides_nvls_allreduce_compiles_and_gets_its_known_finding(tmp_path):
    """MSCCL++'s DSL integration guide's all-reduce, unchanged: its plan is the corpus plan, and its relaxed
    closing handshake does not publish the multicast stores before the launch ends (the verifier's data race)."""
    src = tmp_path / "guide.py"
    src.write_text(GUIDE_NVLS_ALLREDUCE)
    module = runpy.run_path(str(src), run_name="guide")
    from mscclpp.language import AllReduce

    for world in (2, 4, 8):
        spec = mscclpp.AlgoSpec(name="allreduce_nvls", collective=AllReduce(world, 1, True), nranks_per_node=world,
                                world_size=world, in_place=True, instances=8, protocol="Simple")
        program = module["allreduce_nvls"](spec)
        ours = json.loads(program.to_json())
        theirs = json.loads((CORPUS / f"single_node__allreduce_nvls_zero_copy__n{world}.json").read_text())
        ours["name"] = theirs["name"]
        assert ours == theirs
        report = mscclpp.verify(mscclpp.compile(algo=module["allreduce_nvls"], algo_spec=spec, rank=0), schedules=4)
        assert not report.ok and any("race" in f.kind for f in report.findings), [f.kind for f in report.findings]
