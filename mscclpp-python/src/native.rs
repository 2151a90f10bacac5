//! Native kernels: `mscclpp.compile_native(name, file)` compiles a user's CUDA source with NVRTC against the
//! mscclpp device headers; `NativeModule.launch` runs one of its kernels with typed arguments, including arrays
//! of memory- or port-channel device handles made by `CommGroup.memory_channels` / `CommGroup.port_channels`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use mscclpp_exec::sys::driver::{KernelArgs, LaunchConfig, RawStream, Stream};
use mscclpp_exec::sys::handles::{MemoryChannelDeviceHandle, PortChannelDeviceHandle};
use mscclpp_exec::{DeviceArray, GpuContext, Kernel, KernelBuilder, MemoryChannel, ProxyService, RegisteredMemory};
use pyo3::prelude::*;

use crate::buffer::{RawGpuBuffer, default_device};
use crate::errors::{Res, err, guard, guard_detached};
use crate::state::CommState;

/// A typed kernel argument: `mscclpp.i32(v)`, `u32`, `i64`, `u64`, `f32`, `f64`, `ptr`.
#[pyclass(module = "mscclpp", frozen)]
#[derive(Clone, Copy, Debug)]
pub enum KernelArg {
    /// `int`.
    I32(i32),
    /// `unsigned int`.
    U32(u32),
    /// `long long`.
    I64(i64),
    /// `unsigned long long`.
    U64(u64),
    /// `float`.
    F32(f32),
    /// `double`.
    F64(f64),
    /// A device pointer.
    Ptr(u64),
}

macro_rules! arg_fn {
    ($name:ident, $py:literal, $t:ty, $v:ident, $doc:literal) => {
        #[doc = $doc]
        #[pyfunction]
        #[pyo3(name = $py)]
        fn $name(value: $t) -> KernelArg {
            KernelArg::$v(value)
        }
    };
}
arg_fn!(arg_i32, "i32", i32, I32, "A kernel argument of C type `int`.");
arg_fn!(arg_u32, "u32", u32, U32, "A kernel argument of C type `unsigned int`.");
arg_fn!(arg_i64, "i64", i64, I64, "A kernel argument of C type `long long`.");
arg_fn!(arg_u64, "u64", u64, U64, "A kernel argument of C type `unsigned long long`.");
arg_fn!(arg_f32, "f32", f32, F32, "A kernel argument of C type `float`.");
arg_fn!(arg_f64, "f64", f64, F64, "A kernel argument of C type `double`.");

/// A device pointer argument from an int, a CUDA tensor or a `RawGpuBuffer`.
#[pyfunction]
fn ptr(value: &Bound<'_, PyAny>) -> PyResult<KernelArg> {
    Ok(KernelArg::Ptr(crate::args::ptr_of(value, "ptr(...)")?))
}

/// What keeps a channel array's channels working: the channels, or the running proxy service.
enum Keep {
    Memory(#[allow(dead_code)] Vec<MemoryChannel>),
    Port(Box<ProxyService>),
}

/// Channel device handles in device memory, one per peer in `peers` order: pass it to a kernel as a pointer.
#[pyclass(module = "mscclpp", frozen)]
pub struct ChannelArray {
    ptr: u64,
    len: usize,
    kind: &'static str,
    peers: Vec<usize>,
    _array: Box<dyn Send + Sync>,
    keep: Mutex<Option<Keep>>,
}

#[pymethods]
impl ChannelArray {
    /// Device address of the first handle.
    #[getter]
    fn ptr(&self) -> u64 {
        self.ptr
    }

    /// `memory` or `port`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind
    }

    /// The peer of each handle.
    #[getter]
    fn peers(&self) -> Vec<usize> {
        self.peers.clone()
    }

    fn __len__(&self) -> usize {
        self.len
    }

    /// Stop the proxy service of port channels (nothing for memory channels); no kernel may use them after.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let keep = guard(|| Ok(self.keep.lock().map_err(|_| err("channel lock poisoned"))?.take()))?;
        guard_detached(py, move || {
            if let Some(Keep::Port(mut p)) = keep {
                p.stop()?;
            }
            Ok(())
        })
    }

    fn __repr__(&self) -> String {
        format!("ChannelArray(kind={:?}, peers={:?}, ptr={:#x})", self.kind, self.peers, self.ptr)
    }
}

/// Device address and size of a buffer argument: a `RawGpuBuffer`, a CUDA tensor, or `(ptr, nbytes)`.
pub fn region(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<(u64, usize, Option<Arc<mscclpp_exec::RawGpuBuffer>>)> {
    if let Ok(b) = obj.cast::<RawGpuBuffer>() {
        let b = b.get();
        return Ok((b.buf.ptr(), b.nbytes, Some(b.buf.clone())));
    }
    if let Ok((p, n)) = obj.extract::<(u64, usize)>() {
        return Ok((p, n, None));
    }
    if obj.hasattr("data_ptr")? && obj.hasattr("nbytes")? {
        let p = crate::args::ptr_of(obj, what)?;
        let n: usize = obj.getattr("nbytes")?.extract()?;
        return Ok((p, n, None));
    }
    guard(|| Err(err(format!("{what} must be a RawGpuBuffer, a CUDA tensor or a (ptr, nbytes) tuple"))))
}

fn register_region(s: &CommState, r: &(u64, usize, Option<Arc<mscclpp_exec::RawGpuBuffer>>)) -> Res<RegisteredMemory> {
    if r.1 == 0 {
        return Err(err("a channel buffer has 0 bytes"));
    }
    Ok(match &r.2 {
        Some(b) => s.comm.register_raw(b)?,
        None => s.comm.register_ptr(r.0, r.1)?,
    })
}

fn peers_of(s: &CommState, peers: Option<Vec<usize>>) -> Res<Vec<usize>> {
    let (me, n) = (s.comm.rank(), s.comm.size());
    let peers = peers.unwrap_or_else(|| (0..n).filter(|p| *p != me).collect());
    if let Some(p) = peers.iter().find(|p| **p >= n || **p == me) {
        return Err(err(format!("peer {p} is not another rank of this {n}-rank communicator (this is rank {me})")));
    }
    Ok(peers)
}

/// Memory channels to `peers` (default: every other rank): writes go from `local` to each peer's `remote`,
/// packets arrive in local `packet_buffer`. Every rank calls it with the same `tag`.
pub fn memory_channels(
    s: &CommState,
    local: (u64, usize, Option<Arc<mscclpp_exec::RawGpuBuffer>>),
    remote: (u64, usize, Option<Arc<mscclpp_exec::RawGpuBuffer>>),
    packet_buffer: Option<u64>,
    tag: u64,
    peers: Option<Vec<usize>>,
) -> Res<ChannelArray> {
    let peers = peers_of(s, peers)?;
    let local_reg = register_region(s, &local)?;
    let remote_reg = register_region(s, &remote)?;
    let mut handles: Vec<MemoryChannelDeviceHandle> = Vec::new();
    let mut chans = Vec::new();
    for &peer in &peers {
        let conn = s.comm.connect(peer, tag)?;
        let sem = s.comm.build_memory_semaphore(&conn, tag)?;
        let peer_remote = s.comm.exchange_memory(&remote_reg, peer, tag)?;
        let ch = MemoryChannel::new(sem, peer_remote, &local_reg, packet_buffer)?;
        handles.push(ch.device_handle());
        chans.push(ch);
    }
    let array = DeviceArray::from_slice(s.comm.device(), &handles)?;
    Ok(ChannelArray {
        ptr: array.ptr(),
        len: handles.len(),
        kind: "memory",
        peers,
        _array: Box::new(array),
        keep: Mutex::new(Some(Keep::Memory(chans))),
    })
}

/// Port channels to `peers` (default: every other rank) through a proxy service of their own: puts go from
/// `local` to each peer's `remote`. Every rank calls it with the same `tag`.
pub fn port_channels(
    s: &CommState,
    local: (u64, usize, Option<Arc<mscclpp_exec::RawGpuBuffer>>),
    remote: (u64, usize, Option<Arc<mscclpp_exec::RawGpuBuffer>>),
    tag: u64,
    peers: Option<Vec<usize>>,
) -> Res<ChannelArray> {
    let peers = peers_of(s, peers)?;
    let local_reg = register_region(s, &local)?;
    let remote_reg = register_region(s, &remote)?;
    let mut proxy = ProxyService::new(s.comm.device())?;
    let src = proxy.add_memory(&local_reg)?;
    let mut handles: Vec<PortChannelDeviceHandle> = Vec::new();
    for &peer in &peers {
        let conn = s.comm.connect(peer, tag)?;
        let sem = s.comm.build_host_semaphore(&conn, tag)?;
        let peer_remote = s.comm.exchange_memory(&remote_reg, peer, tag)?;
        let sem_id = proxy.add_semaphore(sem)?;
        let dst = proxy.add_remote_memory(peer_remote)?;
        handles.push(proxy.port_channel(sem_id, dst, src)?);
    }
    proxy.start()?;
    let array = DeviceArray::from_slice(s.comm.device(), &handles)?;
    Ok(ChannelArray {
        ptr: array.ptr(),
        len: handles.len(),
        kind: "port",
        peers,
        _array: Box::new(array),
        keep: Mutex::new(Some(Keep::Port(Box::new(proxy)))),
    })
}

/// A user's CUDA source compiled against the mscclpp headers.
#[pyclass(module = "mscclpp", frozen)]
pub struct NativeModule {
    name: String,
    builder: KernelBuilder,
    /// Loaded per GPU ordinal.
    loaded: Mutex<std::collections::HashMap<usize, Arc<Kernel>>>,
}

impl NativeModule {
    fn kernel(&self, device: Option<usize>) -> Res<Arc<Kernel>> {
        let dev = match device {
            Some(d) => mscclpp_sys::driver::Device::open(d)?,
            None => default_device()?,
        };
        let mut l = self.loaded.lock().map_err(|_| err("module lock poisoned"))?;
        if let Some(k) = l.get(&dev.ordinal()) {
            return Ok(k.clone());
        }
        let ctx = GpuContext::new(dev, 0)?;
        let k = Arc::new(self.builder.build(&ctx)?);
        l.insert(dev.ordinal(), k.clone());
        Ok(k)
    }
}

#[pymethods]
impl NativeModule {
    /// The name given to `compile_native`.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The cubin for `arch` (e.g. `"sm_90"`): compiles with NVRTC, needs no GPU.
    fn cubin<'py>(&self, py: Python<'py>, arch: String) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let b = &self.builder;
        let bytes = guard_detached(py, move || Ok(b.compile_cubin(&arch)?))?;
        Ok(pyo3::types::PyBytes::new(py, &bytes))
    }

    /// Load the module on `device` (default: this process's GPU) and launch kernel `function` with `grid` and
    /// `block` (ints or 1–3-tuples), `args` (each `mscclpp.i32(...)` etc., a `ChannelArray` or a `RawGpuBuffer`,
    /// both passed as pointers) on `stream` (an int `CUstream`; 0: the default stream).
    #[pyo3(signature = (function, grid, block, args, stream=0, shared_mem=0, device=None))]
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &self,
        py: Python<'_>,
        function: String,
        grid: &Bound<'_, PyAny>,
        block: &Bound<'_, PyAny>,
        args: Vec<Bound<'_, PyAny>>,
        stream: u64,
        shared_mem: u32,
        device: Option<usize>,
    ) -> PyResult<()> {
        let grid = dims(grid, "grid")?;
        let block = dims(block, "block")?;
        let mut ka = KernelArgs::new();
        for (i, a) in args.iter().enumerate() {
            if let Ok(k) = a.cast::<KernelArg>() {
                match *k.get() {
                    KernelArg::I32(v) => ka.push(v),
                    KernelArg::U32(v) => ka.push(v),
                    KernelArg::I64(v) => ka.push(v),
                    KernelArg::U64(v) => ka.push(v),
                    KernelArg::F32(v) => ka.push(v),
                    KernelArg::F64(v) => ka.push(v),
                    KernelArg::Ptr(v) => ka.push_ptr(v),
                };
            } else if let Ok(c) = a.cast::<ChannelArray>() {
                ka.push_ptr(c.get().ptr);
            } else if let Ok(b) = a.cast::<RawGpuBuffer>() {
                ka.push_ptr(b.get().buf.ptr());
            } else {
                return guard(|| {
                    Err(err(format!(
                        "argument {i} of {function}: wrap numbers with their C type (mscclpp.i32, u32, i64, u64, f32, \
                         f64) and pointers with mscclpp.ptr(...); channel arrays and RawGpuBuffers pass as pointers"
                    )))
                });
            }
        }
        guard_detached(py, move || {
            let kernel = self.kernel(device)?;
            let dev = *kernel.context().device();
            // SAFETY: the caller passes a live stream of this GPU (or 0 for the default stream).
            let s = unsafe { Stream::borrow_raw(&dev, stream as usize as RawStream) };
            let config = LaunchConfig { grid, block, shared_mem_bytes: shared_mem };
            // SAFETY: the caller's contract, as for any CUDA launch from Python: `args` match the kernel's
            // parameters (typed explicitly above) and every pointer stays valid while the kernel runs.
            unsafe { kernel.launch(&function, config, &s, &ka)? };
            Ok(())
        })
    }

    fn __repr__(&self) -> String {
        format!("NativeModule(name={:?})", self.name)
    }
}

fn dims(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<(u32, u32, u32)> {
    if let Ok(x) = obj.extract::<u32>() {
        return Ok((x, 1, 1));
    }
    if let Ok(v) = obj.extract::<Vec<u32>>()
        && (1..=3).contains(&v.len())
    {
        return Ok((v[0], *v.get(1).unwrap_or(&1), *v.get(2).unwrap_or(&1)));
    }
    guard(|| Err(err(format!("{what} must be a positive int or a tuple of 1 to 3 ints"))))
}

/// Compile CUDA source `file` with NVRTC against the mscclpp device headers (`#include
/// "mscclpp/memory_channel_device.hpp"` etc.) for `arch` (default: this process's GPU). `include_dirs`,
/// `defines` (`"NAME=VALUE"`) and `options` go to NVRTC.
#[pyfunction]
#[pyo3(signature = (name, file, arch=None, include_dirs=Vec::new(), defines=Vec::new(), options=Vec::new()))]
fn compile_native(
    py: Python<'_>,
    name: String,
    file: PathBuf,
    arch: Option<String>,
    include_dirs: Vec<PathBuf>,
    defines: Vec<String>,
    options: Vec<String>,
) -> PyResult<NativeModule> {
    guard_detached(py, move || {
        if !file.is_file() {
            return Err(err(format!("compile_native: {} is not a file", file.display())));
        }
        let mut b = KernelBuilder::from_file(&file)?;
        for d in include_dirs {
            b = b.include_dir(d);
        }
        for d in defines {
            b = b.define(d);
        }
        for o in options {
            b = b.option(o);
        }
        let m = NativeModule { name, builder: b, loaded: Mutex::new(Default::default()) };
        match arch {
            Some(a) => {
                m.builder.compile_cubin(&a)?;
            }
            None => {
                m.kernel(None)?;
            }
        }
        Ok(m)
    })
}

/// Folders to search for `libnvrtc.so.13` when the dynamic loader cannot find it by name (the package passes its
/// interpreter's `site-packages/nvidia/cu13/lib` at import, before any compile).
#[pyfunction]
fn _add_nvrtc_search_dirs(dirs: Vec<std::path::PathBuf>) {
    mscclpp_sys::loader::add_nvrtc_search_dirs(dirs);
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<KernelArg>()?;
    m.add_function(wrap_pyfunction!(_add_nvrtc_search_dirs, m)?)?;
    m.add_class::<ChannelArray>()?;
    m.add_class::<NativeModule>()?;
    m.add_function(wrap_pyfunction!(compile_native, m)?)?;
    for f in [
        wrap_pyfunction!(arg_i32, m)?,
        wrap_pyfunction!(arg_u32, m)?,
        wrap_pyfunction!(arg_i64, m)?,
        wrap_pyfunction!(arg_u64, m)?,
        wrap_pyfunction!(arg_f32, m)?,
        wrap_pyfunction!(arg_f64, m)?,
        wrap_pyfunction!(ptr, m)?,
    ] {
        m.add_function(f)?;
    }
    Ok(())
}
