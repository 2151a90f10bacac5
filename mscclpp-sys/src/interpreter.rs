//! The plan interpreter kernel (`cuda/execution_kernel.cu`): its source, its entry points, and compiling and
//! loading it through the NVRTC cache.
//!
//! The record types it reads are mirrored in [`crate::device_plan`], whose layout probe compiles against this
//! source.

use crate::driver::{Device, Function, Module};
use crate::error::{Error, Result};
use crate::nvrtc::{CompileOptions, KernelCache};

/// Moved to [`crate::driver`]; still reachable here for existing callers.
pub use crate::driver::{Graph, address_range};

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
