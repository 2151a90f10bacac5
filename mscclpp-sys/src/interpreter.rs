//! The plan interpreter kernel (`cuda/execution_kernel.cu`): its source, its entry points, and compiling and
//! loading it through the NVRTC cache.
//!
//! The record types it reads are mirrored in `mscclpp_exec::executor::records`, whose layout probe compiles
//! against this source.

use cudarc::driver::sys;

use crate::driver::{Device, DevicePtr, Function, Module, Stream, check};
use crate::error::{Error, Result};
use crate::nvrtc::{CompileOptions, KernelCache};

/// Base address and size of the CUDA allocation that contains `ptr`. An address that no CUDA allocation of
/// this process holds (host memory, a freed buffer) is an error that says so.
pub fn address_range(device: &Device, ptr: DevicePtr) -> Result<(DevicePtr, u64)> {
    device.bind()?;
    let mut base: sys::CUdeviceptr = 0;
    let mut size: usize = 0;
    // SAFETY: valid out-pointers; the driver only inspects the address.
    let rc = unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, ptr) };
    if rc != sys::CUresult::CUDA_SUCCESS {
        return Err(Error::InvalidArgument(format!(
            "address {ptr:#x} is not inside a CUDA device allocation of this process (cuMemGetAddressRange: {rc:?}); \
             pass buffers allocated with cuMemAlloc/cudaMalloc (e.g. GpuBuffer or a torch CUDA tensor)"
        )));
    }
    Ok((base, size as u64))
}

/// A CUDA graph captured from a stream and instantiated, ready to replay.
#[derive(Debug)]
pub struct Graph {
    device: Device,
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
}

// SAFETY: graph handles may be used from any thread that binds the graph's context (every method does).
unsafe impl Send for Graph {}

impl Graph {
    /// Capture the work `record` queues on `stream` (thread-local capture mode) and instantiate it. The work is
    /// not executed; replay it with [`Graph::launch`].
    pub fn capture(stream: &Stream, record: impl FnOnce() -> Result<()>) -> Result<Graph> {
        let device = *stream.device();
        device.bind()?;
        // SAFETY: live stream; thread-local mode only forbids unsafe calls from this thread during capture.
        check("cuStreamBeginCapture", unsafe {
            sys::cuStreamBeginCapture_v2(stream.raw(), sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        })?;
        let recorded = record();
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: the capture was begun on this stream by this thread; ending it is always required.
        let ended = check("cuStreamEndCapture", unsafe { sys::cuStreamEndCapture(stream.raw(), &mut graph) });
        recorded?;
        ended?;
        let mut exec: sys::CUgraphExec = std::ptr::null_mut();
        // SAFETY: `graph` is the valid graph just captured.
        let inst = check("cuGraphInstantiate", unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) });
        if let Err(e) = inst {
            // SAFETY: destroy the graph we own once.
            unsafe { sys::cuGraphDestroy(graph) };
            return Err(e);
        }
        Ok(Graph { device, graph, exec })
    }

    /// Replay the graph on `stream`.
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        self.device.bind()?;
        // SAFETY: live executable graph and stream of the same context.
        check("cuGraphLaunch", unsafe { sys::cuGraphLaunch(self.exec, stream.raw()) })
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        if self.device.bind().is_ok() {
            // SAFETY: both handles are owned by this value and destroyed once.
            unsafe {
                sys::cuGraphExecDestroy(self.exec);
                sys::cuGraphDestroy(self.graph);
            }
        }
    }
}

/// The interpreter source, embedded at build time.
pub const SOURCE: &str = include_str!("../cuda/execution_kernel.cu");

/// Name of the source in compiler messages and the cache.
pub const SOURCE_NAME: &str = "execution_kernel.cu";

/// Element types the interpreter is instantiated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// IEEE half precision.
    F16,
    /// bfloat16.
    Bf16,
    /// IEEE single precision.
    F32,
    /// 32-bit signed integer.
    I32,
    /// 32-bit unsigned integer.
    U32,
    /// 8-bit unsigned integer.
    U8,
}

impl ElementType {
    /// Every element type.
    pub const ALL: [ElementType; 6] =
        [ElementType::F16, ElementType::Bf16, ElementType::F32, ElementType::I32, ElementType::U32, ElementType::U8];

    /// Short name used in kernel names and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ElementType::F16 => "f16",
            ElementType::Bf16 => "bf16",
            ElementType::F32 => "f32",
            ElementType::I32 => "i32",
            ElementType::U32 => "u32",
            ElementType::U8 => "u8",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            ElementType::F16 | ElementType::Bf16 => 2,
            ElementType::F32 | ElementType::I32 | ElementType::U32 => 4,
            ElementType::U8 => 1,
        }
    }
}

/// LL packet format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum PacketType {
    /// 16-byte packets carrying 8 bytes of payload (the default).
    #[default]
    Ll16,
    /// 8-byte packets carrying 4 bytes of payload.
    Ll8,
}

impl PacketType {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            PacketType::Ll16 => "ll16",
            PacketType::Ll8 => "ll8",
        }
    }
    /// Payload bytes per packet.
    pub fn payload(self) -> usize {
        match self {
            PacketType::Ll16 => 8,
            PacketType::Ll8 => 4,
        }
    }
}

/// Entry-point name of the interpreter for one element type and packet format.
pub fn kernel_name(dtype: ElementType, packet: PacketType) -> String {
    format!("mscclpp_interp_{}_{}", dtype.name(), packet.name())
}

/// Every entry point of the interpreter.
pub fn kernel_names() -> Vec<String> {
    let mut v = Vec::new();
    for p in [PacketType::Ll16, PacketType::Ll8] {
        for t in ElementType::ALL {
            v.push(kernel_name(t, p));
        }
    }
    v
}

/// The interpreter, loaded on one GPU.
#[derive(Clone, Debug)]
pub struct Interpreter {
    module: Module,
}

impl Interpreter {
    /// Compile (or fetch from the on-disk cache) the interpreter for `device`'s architecture and load it.
    pub fn load(device: &Device) -> Result<Self> {
        let arch = device.arch()?;
        let cubin = KernelCache::default().cubin(SOURCE_NAME, SOURCE, &CompileOptions::new(arch))?;
        let module = Module::load(device, &cubin)?;
        Ok(Interpreter { module })
    }

    /// The loaded module (for its `mscclppDeviceEnv` global).
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// The entry point for `dtype` and `packet`.
    pub fn function(&self, dtype: ElementType, packet: PacketType) -> Result<Function> {
        self.module.function(&kernel_name(dtype, packet)).map_err(|e| match e {
            Error::InvalidArgument(m) => Error::InvalidArgument(format!("interpreter: {m}")),
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loader::nvrtc_or_skip;
    use crate::nvrtc::{Output, compile};

    #[test]
    fn interpreter_compiles_to_sm90_cubin_with_every_entry_point() {
        if !nvrtc_or_skip("interpreter_compiles_to_sm90_cubin_with_every_entry_point") {
            return;
        }
        let opts = CompileOptions::new("sm_90");
        let cubin = compile(SOURCE_NAME, SOURCE, &opts, Output::Cubin).unwrap_or_else(|e| panic!("{e}"));
        assert!(cubin.starts_with(b"\x7fELF"));
        let ptx = compile(SOURCE_NAME, SOURCE, &opts, Output::Ptx).unwrap_or_else(|e| panic!("{e}"));
        let ptx = String::from_utf8_lossy(&ptx);
        for name in kernel_names() {
            assert!(ptx.contains(&format!(".entry {name}(")), "entry point {name} missing from the PTX");
        }
    }

    #[test]
    fn kernel_names_are_distinct() {
        let mut names = kernel_names();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 12);
    }
}
