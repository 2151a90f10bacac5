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

/// The interpreter source to run: the built-in one, or the file named by `MSCCLPP_INTERPRETER_SOURCE` (for kernel
/// development: edit the kernel, run, without rebuilding the binary).
pub fn source() -> Result<std::borrow::Cow<'static, str>> {
    match mscclpp_config::INTERPRETER_SOURCE.get() {
        None => Ok(std::borrow::Cow::Borrowed(SOURCE)),
        Some(path) => std::fs::read_to_string(&path).map(std::borrow::Cow::Owned).map_err(|e| {
            Error::InvalidArgument(format!(
                "MSCCLPP_INTERPRETER_SOURCE={}: {e}; unset it to use the built-in interpreter",
                path.display()
            ))
        }),
    }
}

/// The preprocessor definitions that compile only the entry point for `dtype` and `packet` (what NVRTC builds
/// when no embedded cubin fits the GPU: one entry point takes a twelfth of the module's compile time).
pub fn entry_defines(dtype: ElementType, packet: PacketType) -> [String; 2] {
    [
        "MSCCLPP_INTERP_ONLY".to_string(),
        format!("MSCCLPP_INTERP_{}_{}", dtype.name().to_uppercase(), packet.name().to_uppercase()),
    ]
}

/// The interpreter entry points a cubin defines (found by name in its string tables), in [`kernel_names`] order.
pub fn entry_points_in(cubin: &[u8]) -> Vec<String> {
    kernel_names()
        .into_iter()
        .filter(|name| {
            let needle = format!("\0{name}\0");
            cubin.windows(needle.len()).any(|w| w == needle.as_bytes())
        })
        .collect()
}

/// True when the whole interpreter (every entry point) is embedded for a GPU of `arch` and embedded kernels are
/// enabled: then it is loaded as one module, with nothing compiled.
pub fn embedded_for(arch: &str) -> bool {
    crate::embedded::enabled() && crate::embedded::find(SOURCE_NAME, SOURCE, arch).is_some()
}

/// Compile (or fetch from the cache) the interpreter's entry point for `dtype` and `packet` alone, for `arch`.
pub fn compile_entry(arch: &str, dtype: ElementType, packet: PacketType, cache: &KernelCache) -> Result<Vec<u8>> {
    let mut opts = CompileOptions::new(arch);
    opts.defines.extend(entry_defines(dtype, packet));
    cache.cubin(SOURCE_NAME, SOURCE, &opts)
}

/// The whole interpreter for `arch`: the embedded cubin when there is one, else compiled by NVRTC.
pub fn cubin(arch: &str, cache: &KernelCache) -> Result<Vec<u8>> {
    cache.cubin(SOURCE_NAME, SOURCE, &CompileOptions::new(arch))
}

/// Loads a cubin of the interpreter on `device` and looks up one entry point (for tests and tools; the executor
/// loads its modules through mscclpp-exec's kernel builder, which also fills the device environment).
pub fn load_function(
    device: &Device,
    cubin: &[u8],
    dtype: ElementType,
    packet: PacketType,
) -> Result<(Module, Function)> {
    let module = Module::load(device, cubin)?;
    let function = module.function(&kernel_name(dtype, packet)).map_err(|e| match e {
        Error::InvalidArgument(m) => Error::InvalidArgument(format!("interpreter: {m}")),
        other => other,
    })?;
    Ok((module, function))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loader::nvrtc_or_skip;
    use crate::nvrtc::{Output, compile};

    #[test]
    fn one_entry_point_compiles_alone_and_holds_no_other() {
        if !nvrtc_or_skip("one_entry_point_compiles_alone_and_holds_no_other") {
            return;
        }
        let mut opts = CompileOptions::new("sm_90");
        opts.defines.extend(entry_defines(ElementType::Bf16, PacketType::Ll8));
        let cubin = compile(SOURCE_NAME, SOURCE, &opts, Output::Cubin).unwrap_or_else(|e| panic!("{e}"));
        assert!(cubin.starts_with(b"\x7fELF"));
        assert_eq!(entry_points_in(&cubin), vec!["mscclpp_interp_bf16_ll8".to_string()]);
    }

    #[test]
    fn kernel_names_are_distinct() {
        let mut names = kernel_names();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 12);
    }
}
