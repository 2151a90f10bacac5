//! The unsafe edge of mscclpp: the CUDA driver and NVRTC (through cudarc, loaded at run time), the device
//! sources and their compilation, and the `#[repr(C)]` mirrors of the device handles ([`handles`]) and of the
//! plan interpreter's records ([`device_plan`]), both checked by one layout probe ([`layout`]).
//!
//! Nothing here panics when CUDA is missing: every entry point first checks that the library and every symbol
//! it needs are present ([`loader`]) and returns an [`Error`] that says what to install.
//!
//! ```no_run
//! use mscclpp_sys::{driver::Device, nvrtc::{CompileOptions, KernelCache}};
//! # fn main() -> mscclpp_sys::Result<()> {
//! let dev = Device::open(0)?;
//! let src = "#include \"mscclpp/device.hpp\"\nextern \"C\" __global__ void k() {}";
//! let cubin = KernelCache::default().cubin("k.cu", src, &CompileOptions::new(dev.arch()?))?;
//! let module = mscclpp_sys::driver::Module::load(&dev, &cubin)?;
//! let _k = module.function("k")?;
//! # Ok(()) }
//! ```

pub mod device_env;
pub mod device_info;
pub mod device_plan;
pub mod device_wait;
pub mod driver;
pub mod embedded;
pub mod error;
pub mod fixed;
pub mod handles;
#[cfg(feature = "ib")]
pub mod ib;
pub mod interpreter;
pub mod layout;
pub mod nvrtc;
mod nvrtc_paths;
mod source_hash;
pub mod sources;

/// Finding and checking the CUDA driver and NVRTC (it lives with the driver, whose symbol list it checks).
pub use driver::loader;
pub use error::{Error, ErrorKind, Result};
