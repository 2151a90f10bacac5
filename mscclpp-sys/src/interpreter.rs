//! The plan interpreter kernel (`cuda/execution_kernel.cu`): its source, its entry points, and compiling and
//! loading it through the NVRTC cache.
//!
//! The record types it reads are mirrored in [`crate::device_plan`], whose layout probe compiles against this
//! source.

use crate::driver::{Device, Function, Module};
use crate::error::{Error, Result};
use crate::nvrtc::{CompileOptions, KernelCache};
pub use crate::sources::{INTERPRETER as SOURCE, INTERPRETER_NAME as SOURCE_NAME};

/// Moved to [`crate::driver`]; still reachable here for existing callers.
pub use crate::driver::{Graph, address_range};

/// Element types the interpreter is instantiated for: the plans' [`mscclpp_lang::data::DataType`], one enum for
/// both.
pub use mscclpp_lang::data::DataType as ElementType;

/// LL packet format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum PacketType {
    /// 16-byte packets carrying 8 bytes of payload (the default).
    #[default]
    Ll16,
    /// 8-byte packets carrying 4 bytes of payload.
    Ll8,
    /// 128-byte lines carrying 120 bytes of payload: what LL128 plans run with, whatever the caller asks for.
    Ll128,
}

impl PacketType {
    /// Every format, in the order the interpreter source defines their entry points.
    pub const ALL: [PacketType; 3] = [PacketType::Ll16, PacketType::Ll8, PacketType::Ll128];

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            PacketType::Ll16 => "ll16",
            PacketType::Ll8 => "ll8",
            PacketType::Ll128 => "ll128",
        }
    }
    /// Payload bytes per packet.
    pub fn payload(self) -> usize {
        match self {
            PacketType::Ll16 => 8,
            PacketType::Ll8 => 4,
            PacketType::Ll128 => 120,
        }
    }
}

/// The largest thread block an interpreter entry point is built for. A block of at most 512 threads lets each
/// thread have 128 registers where 1024 threads leave 64, and the interpreter's dispatch loop and operation
/// handlers then keep their state in registers instead of local memory (docs/executor.md, "Where the
/// interpreter's time goes"); the executor picks the smallest class that holds the plan's threads per block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum BlockSize {
    /// At most 512 threads per block.
    UpTo512,
    /// At most 1024 threads per block (every plan).
    #[default]
    UpTo1024,
}

impl BlockSize {
    /// Both classes, smallest first.
    pub const ALL: [BlockSize; 2] = [BlockSize::UpTo512, BlockSize::UpTo1024];

    /// The smallest class that holds `threads` threads per block.
    pub fn for_threads(threads: u32) -> BlockSize {
        if threads <= 512 { BlockSize::UpTo512 } else { BlockSize::UpTo1024 }
    }

    /// The most threads per block of the class (the entry point's launch bound).
    pub fn max_threads(self) -> u32 {
        match self {
            BlockSize::UpTo512 => 512,
            BlockSize::UpTo1024 => 1024,
        }
    }

    /// The suffix entry-point names carry for the class: `_t512`, or nothing for blocks of up to 1024 threads.
    pub fn suffix(self) -> &'static str {
        match self {
            BlockSize::UpTo512 => "_t512",
            BlockSize::UpTo1024 => "",
        }
    }
}

/// Entry-point name of the interpreter for one element type, packet format and block size class:
/// `mscclpp_interp_f16_ll16` (up to 1024 threads per block), `mscclpp_interp_f16_ll16_t512` (up to 512).
pub fn kernel_name(dtype: ElementType, packet: PacketType, block: BlockSize) -> String {
    format!("mscclpp_interp_{}_{}{}", dtype.as_str(), packet.name(), block.suffix())
}

/// Every entry point of the interpreter, in the order the source defines them.
pub fn kernel_names() -> Vec<String> {
    let mut v = Vec::new();
    for p in PacketType::ALL {
        for t in ElementType::ALL {
            for b in [BlockSize::UpTo1024, BlockSize::UpTo512] {
                v.push(kernel_name(t, p, b));
            }
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

/// The preprocessor definitions that compile only the entry point for `dtype`, `packet` and `block` (what NVRTC
/// builds when no embedded cubin fits the GPU: one entry point takes a small part of the module's compile
/// time).
pub fn entry_defines(dtype: ElementType, packet: PacketType, block: BlockSize) -> [String; 5] {
    [
        "MSCCLPP_INTERP_ONLY".to_string(),
        format!("MSCCLPP_INTERP_NAME={}", kernel_name(dtype, packet, block)),
        format!("MSCCLPP_INTERP_T={}", dtype_struct(dtype)),
        format!("MSCCLPP_INTERP_P={}", packet_struct(packet)),
        format!("MSCCLPP_INTERP_THREADS={}", block.max_threads()),
    ]
}

/// The packet struct of a packet format (`LL16Packet`, `LL8Packet`).
pub(crate) fn packet_struct(packet: PacketType) -> &'static str {
    match packet {
        PacketType::Ll16 => "LL16Packet",
        PacketType::Ll8 => "LL8Packet",
        PacketType::Ll128 => "LL128Packet",
    }
}

/// The interpreter's type tag for an element type (`mscclpp::interp::F16`, ...).
pub(crate) fn dtype_struct(dtype: ElementType) -> &'static str {
    match dtype {
        ElementType::F16 => "F16",
        ElementType::Bf16 => "BF16",
        ElementType::F32 => "F32",
        ElementType::I32 => "I32",
        ElementType::U32 => "U32",
        ElementType::U8 => "U8",
    }
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

/// Compile (or fetch from the cache) the interpreter's entry point for `dtype`, `packet` and `block` alone, for
/// `arch`.
pub fn compile_entry(
    arch: &str,
    dtype: ElementType,
    packet: PacketType,
    block: BlockSize,
    cache: &KernelCache,
) -> Result<Vec<u8>> {
    let mut opts = CompileOptions::new(arch);
    opts.defines.extend(entry_defines(dtype, packet, block));
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
    block: BlockSize,
) -> Result<(Module, Function)> {
    let module = Module::load(device, cubin)?;
    let function = module.function(&kernel_name(dtype, packet, block)).map_err(|e| match e {
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
        opts.defines.extend(entry_defines(ElementType::Bf16, PacketType::Ll8, BlockSize::UpTo512));
        let cubin = compile(SOURCE_NAME, SOURCE, &opts, Output::Cubin).unwrap_or_else(|e| panic!("{e}"));
        assert!(cubin.starts_with(b"\x7fELF"));
        assert_eq!(entry_points_in(&cubin), vec!["mscclpp_interp_bf16_ll8_t512".to_string()]);
    }

    #[test]
    fn kernel_names_are_distinct() {
        let mut names = kernel_names();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 36, "6 element types, 3 packet formats, 2 block-size classes");
    }
}
