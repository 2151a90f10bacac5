"""Type stubs of the Rust extension ``mscclpp._mscclpp`` (re-exported by ``mscclpp``)."""

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union, overload

__version__: str

class Error(Exception):
    """Every error of the mscclpp module: the message says what is wrong and what to do."""

class UnsupportedError(Error):
    """A size, type or world size the chosen algorithm or plan does not run: pick another or fall back."""

class NoGpuError(Error):
    """The call needs a GPU and the CUDA driver, and this machine has none."""

class ClosedError(Error):
    """The communicator (or an object made from it) was closed."""

class TimeoutError(Error):
    """A wait ran past its bound: a kernel's wait for a peer that stopped taking part (the message names the rank,
    peer, channel and operation), a stream, a bootstrap message, or ranks that never arrived."""

class RemoteError(Error):
    """A peer rank left the job (its process exited or crashed) while this rank still needed it."""

class ContextLostError(Error):
    """The CUDA context of this process is lost after a kernel fault: no CUDA work can run in this process any
    more."""

class DataType:
    float16: "DataType"
    bfloat16: "DataType"
    float32: "DataType"
    int32: "DataType"
    uint32: "DataType"
    uint8: "DataType"
    @property
    def size(self) -> int: ...

class ReduceOp:
    SUM: "ReduceOp"
    MIN: "ReduceOp"
    MAX: "ReduceOp"
    NOP: "ReduceOp"

_Buffer = Any  # an int device address, a CUDA tensor (data_ptr()) or a RawGpuBuffer
_Region = Any  # a RawGpuBuffer, a CUDA tensor or a (ptr, nbytes) tuple
_DType = Any  # a DataType or a torch dtype

class CommGroup:
    def __init__(
        self,
        mpi_comm: Any = None,
        interface_ip_port_trio: Optional[str] = None,
        rank: Optional[int] = None,
        size: Optional[int] = None,
        *,
        interfaceIpPortTrio: Optional[str] = None,
    ) -> None: ...
    @property
    def my_rank(self) -> int: ...
    @property
    def nranks(self) -> int: ...
    @property
    def nranks_per_node(self) -> int: ...
    @property
    def communicator(self) -> "CommGroup": ...
    @staticmethod
    def from_env() -> "CommGroup": ...
    @property
    def rank(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def device(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def barrier(self) -> None: ...
    def all_gather_bytes(self, data: bytes) -> List[bytes]: ...
    def broadcast_bytes(self, root: int, data: bytes) -> bytes: ...
    def memory_channels(
        self,
        local: _Region,
        remote: _Region,
        packet_buffer: Optional[_Buffer] = None,
        tag: int = 0,
        peers: Optional[Sequence[int]] = None,
    ) -> "ChannelArray": ...
    def port_channels(
        self, local: _Region, remote: _Region, tag: int = 0, peers: Optional[Sequence[int]] = None
    ) -> "ChannelArray": ...
    def _run_staged(
        self,
        collective: str,
        send: int,
        recv: int,
        in_bytes: int,
        out_bytes: int,
        dtype: DataType,
        op: ReduceOp,
        stream: int,
        staging_bytes: int = ...,
    ) -> Optional[str]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "CommGroup": ...
    def __exit__(self, *args: Any) -> bool: ...

class RawGpuBuffer:
    def __init__(self, nbytes: int, device: Optional[int] = None) -> None: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def device(self) -> int: ...
    def data_ptr(self) -> int: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def __dlpack__(
        self, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Optional[bool] = None
    ) -> Any: ...
    def to_dlpack(self, data_type: Optional[_DType] = None) -> Any: ...
    def __len__(self) -> int: ...

class Algorithm:
    @staticmethod
    def create_from_native_capsule(capsule: Any) -> Any: ...
    @property
    def name(self) -> str: ...
    @property
    def collective(self) -> str: ...
    @property
    def protocol(self) -> str: ...
    @property
    def message_range(self) -> Tuple[int, Optional[int]]: ...
    @property
    def world_sizes(self) -> Tuple[int, Optional[int]]: ...
    @property
    def buffer_mode(self) -> str: ...
    @property
    def tags(self) -> Dict[str, int]: ...
    @property
    def description(self) -> str: ...
    def execute(
        self,
        comm: CommGroup,
        input_buffer: _Buffer,
        output_buffer: _Buffer,
        input_size: int,
        output_size: int,
        dtype: _DType,
        op: ReduceOp = ...,
        stream: int = 0,
        executor: Optional["Executor"] = None,
        nblocks: int = 0,
        nthreads_per_block: int = 0,
        symmetric_memory: bool = False,
        extras: Optional[Dict[str, Any]] = None,
    ) -> int: ...

def default_algorithms(comm: CommGroup, scratch: Union[int, RawGpuBuffer, None] = None) -> List[Algorithm]: ...
def programs(collective: Optional[str] = None, world_size: Optional[int] = None) -> List[Algorithm]: ...

class ExecutionPlan:
    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None: ...
    @staticmethod
    def from_json(text: str) -> "ExecutionPlan": ...
    @property
    def name(self) -> str: ...
    @property
    def collective(self) -> str: ...
    @property
    def world_size(self) -> int: ...
    @property
    def protocol(self) -> str: ...
    @property
    def inplace(self) -> bool: ...
    @property
    def message_range(self) -> Tuple[int, int]: ...
    @property
    def thread_blocks(self) -> int: ...
    def to_json(self) -> str: ...
    def save(self, path: Union[str, "os.PathLike[str]"]) -> None: ...

def plan(
    name: str,
    world_size: int,
    ranks_per_node: Optional[int] = None,
    instances: Optional[int] = None,
    inplace: Optional[bool] = None,
    threads_per_block: Optional[int] = None,
    message_size: Optional[int] = None,
) -> ExecutionPlan: ...
def _install_plans(
    world_sizes: Optional[Sequence[int]] = None, dir: Union[str, "os.PathLike[str]", None] = None
) -> Tuple[str, int]: ...
def _verify_json(
    plan: ExecutionPlan,
    size: Optional[int] = None,
    dtype: Optional[_DType] = None,
    schedules: Optional[int] = None,
    launches: Optional[int] = None,
    packet: Optional[str] = None,
) -> str: ...
def _tune_json(
    comm: CommGroup,
    collectives: Optional[list[str]] = None,
    sizes: Optional[list[int]] = None,
    dtype: Optional[_DType] = None,
    inplace: bool = False,
    budget_s: Optional[float] = None,
    runs: Optional[int] = None,
    iters: Optional[int] = None,
) -> str: ...
def _tuned_config_json(
    size: int,
    collective_name: str = "allreduce",
    dtype: Optional[_DType] = None,
    inplace: bool = False,
    comm: Optional[CommGroup] = None,
) -> str: ...

class Executor:
    def __init__(self, comm: CommGroup) -> None: ...
    @overload
    def execute(
        self,
        plan: ExecutionPlan,
        input_buffer: _Buffer,
        output_buffer: _Buffer,
        input_size: int,
        output_size: int,
        dtype: _DType,
        stream: int = 0,
    ) -> None: ...
    @overload
    def execute(
        self,
        rank: int,
        send_buff: _Buffer,
        recv_buff: _Buffer,
        send_buff_size: int,
        recv_buff_size: int,
        data_type: _DType,
        plan: ExecutionPlan,
        stream: int = 0,
        packet_type: Any = None,
    ) -> None: ...
    def synchronize(self, stream: int = 0) -> None: ...
    def close(self) -> None: ...

class KernelArg: ...

def i32(value: int) -> KernelArg: ...
def u32(value: int) -> KernelArg: ...
def i64(value: int) -> KernelArg: ...
def u64(value: int) -> KernelArg: ...
def f32(value: float) -> KernelArg: ...
def f64(value: float) -> KernelArg: ...
def ptr(value: _Buffer) -> KernelArg: ...

class ChannelArray:
    @property
    def ptr(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def peers(self) -> List[int]: ...
    def __len__(self) -> int: ...
    def close(self) -> None: ...

class NativeModule:
    @property
    def name(self) -> str: ...
    def cubin(self, arch: str) -> bytes: ...
    def launch(
        self,
        function: str,
        grid: Union[int, Tuple[int, ...]],
        block: Union[int, Tuple[int, ...]],
        args: Sequence[Union[KernelArg, ChannelArray, RawGpuBuffer]],
        stream: int = 0,
        shared_mem: int = 0,
        device: Optional[int] = None,
    ) -> None: ...

def _add_nvrtc_search_dirs(dirs: List[str]) -> None: ...
def _execute_args(*args: Any, **kwargs: Any) -> Dict[str, Any]: ...
def _cli_main(argv: List[str]) -> int: ...
def compile_native(
    name: str,
    file: Union[str, "os.PathLike[str]"],
    arch: Optional[str] = None,
    include_dirs: Sequence[Union[str, "os.PathLike[str]"]] = (),
    defines: Sequence[str] = (),
    options: Sequence[str] = (),
) -> NativeModule: ...
