//! Compiling and launching users' own CUDA sources with the mscclpp device headers.
//!
//! ```no_run
//! use mscclpp_exec::kernel::{GpuContext, KernelBuilder};
//! use mscclpp_sys::driver::{Device, KernelArgs, LaunchConfig, Stream};
//! # fn main() -> mscclpp_exec::Result<()> {
//! let ctx = GpuContext::new(Device::open(0)?, 0)?;
//! let src = r#"#include "mscclpp/device.hpp"
//! extern "C" __global__ void scale(float* x, float a, unsigned long long n) {
//!   for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] *= a;
//! }"#;
//! let kernel = KernelBuilder::new("scale.cu", src).build(&ctx)?;
//! let stream = Stream::new(ctx.device())?;
//! let mut args = KernelArgs::new();
//! args.push(0u64).push(2.0f32).push(0u64);
//! // SAFETY: the arguments match `scale(float*, float, unsigned long long)`; n = 0 touches no memory.
//! unsafe { kernel.launch("scale", LaunchConfig::linear(1, 32), &stream, &args)? };
//! ctx.synchronize(&stream)?;
//! # Ok(()) }
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mscclpp_sys::device_env::{ErrorSlot, configure_module};
use mscclpp_sys::driver::{Device, DevicePtr, DeviceRepr, Function, KernelArgs, LaunchConfig, Module, Stream};
use mscclpp_sys::nvrtc::{CompileOptions, KernelCache};

use crate::error::{Error, Result};
use crate::memory::GpuBuffer;

/// Per-process GPU state shared by kernels: the device, the error slot device waits report into, the rank and
/// the wait bound.
#[derive(Clone, Debug)]
pub struct GpuContext {
    device: Device,
    slot: Arc<ErrorSlot>,
    rank: u32,
    timeout: Duration,
}

impl GpuContext {
    /// A context for `device` in the process of `rank`, with `MSCCLPP_WAIT_TIMEOUT_MS` as the wait bound.
    pub fn new(device: Device, rank: usize) -> Result<Self> {
        Ok(GpuContext {
            slot: Arc::new(ErrorSlot::new(&device)?),
            device,
            rank: rank as u32,
            timeout: crate::env::wait_timeout(),
        })
    }

    /// The GPU.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The device wait bound.
    pub fn wait_timeout(&self) -> Duration {
        self.timeout
    }

    /// Wait for `stream`, bounded by the wait timeout plus a margin. A device wait that expired is reported as
    /// [`mscclpp_sys::Error::DeviceWait`] naming the wait, channel and peer.
    pub fn synchronize(&self, stream: &Stream) -> Result<()> {
        let slot = self.slot.clone();
        let res = stream.synchronize_with(self.timeout + Duration::from_secs(5), &mut || slot.check());
        match res {
            Ok(()) => Ok(self.slot.check()?),
            Err(e) => {
                // A trapped kernel surfaces as a launch failure; give the record a moment to land.
                for _ in 0..100 {
                    if self.slot.report().is_some() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                self.slot.check()?;
                Err(e.into())
            }
        }
    }

    /// An error if any kernel reported an expired wait.
    pub fn check(&self) -> Result<()> {
        Ok(self.slot.check()?)
    }
}

/// Builds a [`Kernel`] from CUDA source with the mscclpp headers on the include path.
#[derive(Clone, Debug)]
pub struct KernelBuilder {
    name: String,
    source: String,
    /// Everything but the architecture, which is chosen at compile time.
    options: CompileOptions,
    arch: Option<String>,
    cache: KernelCache,
    purpose: Option<String>,
}

impl KernelBuilder {
    /// Start from a source (`name` appears in compiler messages).
    pub fn new(name: impl Into<String>, source: impl Into<String>) -> Self {
        KernelBuilder {
            name: name.into(),
            source: source.into(),
            options: CompileOptions::new(""),
            arch: None,
            cache: KernelCache::default(),
            purpose: None,
        }
    }

    /// Read the source from a file.
    pub fn from_file(path: impl Into<PathBuf>) -> Result<Self> {
        let path = path.into();
        let src = std::fs::read_to_string(&path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        let mut b = Self::new(path.display().to_string(), src);
        if let Some(dir) = path.parent() {
            b.options.include_dirs.push(dir.to_path_buf());
        }
        Ok(b)
    }

    /// Add an include folder.
    pub fn include_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.options.include_dirs.push(dir.into());
        self
    }

    /// Add an in-memory header.
    pub fn header(mut self, name: impl Into<String>, contents: impl Into<String>) -> Self {
        self.options.headers.push((name.into(), contents.into()));
        self
    }

    /// Add `-DNAME` or `-DNAME=VALUE`.
    pub fn define(mut self, def: impl Into<String>) -> Self {
        self.options.defines.push(def.into());
        self
    }

    /// Add a raw NVRTC option.
    pub fn option(mut self, opt: impl Into<String>) -> Self {
        self.options.extra.push(opt.into());
        self
    }

    /// Compile for `arch` (e.g. `sm_90`) instead of the context's GPU.
    pub fn arch(mut self, arch: impl Into<String>) -> Self {
        self.arch = Some(arch.into());
        self
    }

    /// Use this cache instead of the default (`MSCCLPP_CACHE_DIR`).
    pub fn cache(mut self, cache: KernelCache) -> Self {
        self.cache = cache;
        self
    }

    /// What the kernel is for, in the one line a compilation prints (e.g. "the interpreter specialised for plan
    /// `x`"); without it the line names the source and why its embedded cubins do not serve.
    pub fn purpose(mut self, purpose: impl Into<String>) -> Self {
        self.purpose = Some(purpose.into());
        self
    }

    /// The NVRTC options this builder will use for `arch`.
    pub fn compile_options(&self, arch: &str) -> CompileOptions {
        CompileOptions { arch: arch.to_string(), ..self.options.clone() }
    }

    /// Compile to a cubin without a GPU (for checks).
    pub fn compile_cubin(&self, arch: &str) -> Result<Vec<u8>> {
        let options = self.compile_options(arch);
        Ok(self.cache.cubin_for(&self.name, &self.source, &options, self.purpose.as_deref())?)
    }

    /// Compile (or load from the cache) for the context's GPU and load the module.
    pub fn build(&self, ctx: &GpuContext) -> Result<Kernel> {
        let arch = match &self.arch {
            Some(a) => a.clone(),
            None => ctx.device.arch()?,
        };
        let cubin = self.compile_cubin(&arch)?;
        let module = Module::load(&ctx.device, &cubin)?;
        configure_module(&module, &ctx.slot, ctx.rank, ctx.timeout)?;
        Ok(Kernel { module, ctx: ctx.clone() })
    }
}

/// A loaded module of user (or built-in) kernels.
#[derive(Clone, Debug)]
pub struct Kernel {
    module: Module,
    ctx: GpuContext,
}

impl Kernel {
    /// The built-in kernels (`cuda/kernels/primitives.cu` in mscclpp-sys).
    pub fn builtin(ctx: &GpuContext) -> Result<Self> {
        KernelBuilder::new("primitives.cu", mscclpp_sys::sources::PRIMITIVES).build(ctx)
    }

    /// Look up a kernel function.
    pub fn function(&self, name: &str) -> Result<Function> {
        Ok(self.module.function(name)?)
    }

    /// The loaded module (e.g. to read globals).
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// The context.
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// Launch kernel `name` on `stream`.
    ///
    /// # Safety
    /// `args` must match the kernel's parameters and every pointer in them must stay valid while it runs.
    pub unsafe fn launch(&self, name: &str, config: LaunchConfig, stream: &Stream, args: &KernelArgs) -> Result<()> {
        let f = self.function(name)?;
        // SAFETY: forwarded to the caller's contract.
        unsafe { f.launch(stream, config, args) }?;
        Ok(())
    }
}

/// A typed array in device memory, e.g. channel handles passed to a kernel by pointer.
#[derive(Debug)]
pub struct DeviceArray<T: DeviceRepr> {
    buf: GpuBuffer,
    len: usize,
    _t: std::marker::PhantomData<T>,
}

impl<T: DeviceRepr> DeviceArray<T> {
    /// Upload `items`.
    pub fn from_slice(device: &Device, items: &[T]) -> Result<Self> {
        let bytes = std::mem::size_of_val(items).max(1);
        let buf = GpuBuffer::new(device, bytes)?;
        buf.write(0, mscclpp_sys::driver::as_bytes(items))?;
        Ok(DeviceArray { buf, len: items.len(), _t: std::marker::PhantomData })
    }

    /// Device address of element 0.
    pub fn ptr(&self) -> DevicePtr {
        self.buf.ptr()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copy back to the host.
    pub fn to_vec(&self) -> Result<Vec<T>>
    where
        T: Default,
    {
        let mut out = vec![T::default(); self.len];
        // SAFETY: `out` holds `len` plain-data elements; we fill their bytes.
        let raw = unsafe {
            std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), std::mem::size_of::<T>() * self.len)
        };
        self.buf.read(0, raw)?;
        Ok(out)
    }
}
