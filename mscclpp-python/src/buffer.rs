//! `mscclpp.RawGpuBuffer`: symmetric memory (cuMem VMM, shareable with the other ranks) exported to torch and
//! other frameworks through DLPack.

use std::sync::Arc;

use mscclpp_exec::env;
use mscclpp_sys::driver::Device;
use pyo3::prelude::*;

use crate::dlpack;
use crate::errors::{Res, err, guard};
use crate::types::DataType;

/// GPU memory that every rank allocates the same way (cuMem VMM with shareable handles): the buffers of
/// zero-copy (`symmetric_memory=True`) runs, and scratch space. `torch.from_dlpack(buf)` or
/// `torch.utils.dlpack.from_dlpack(buf.to_dlpack(data_type=torch.float16))` view it as a tensor.
#[pyclass(module = "mscclpp", frozen)]
pub struct RawGpuBuffer {
    /// The allocation.
    pub buf: Arc<mscclpp_exec::RawGpuBuffer>,
    /// Bytes asked for (the allocation may be larger: a multiple of the granularity).
    pub nbytes: usize,
}

/// The default GPU of this process: the one its local rank picks (`LOCAL_RANK` etc.; see `MSCCLPP_SHARED_GPU`).
pub fn default_device() -> Res<Device> {
    Ok(Device::open(env::gpu_ordinal(env::local_rank(0))?)?)
}

impl RawGpuBuffer {
    fn capsule(&self, py: Python<'_>, dtype: DataType) -> PyResult<Py<PyAny>> {
        let len = self.nbytes / dtype.size();
        let keep: Arc<dyn Send + Sync> = self.buf.clone();
        dlpack::capsule(py, self.buf.ptr(), self.buf.device().ordinal(), len, dtype.dlpack(), keep)
    }
}

/// A `DataType` from a `mscclpp.DataType` or a torch dtype (through `mscclpp.utils`).
pub fn data_type(obj: &Bound<'_, PyAny>) -> PyResult<DataType> {
    if let Ok(t) = obj.extract::<DataType>() {
        return Ok(t);
    }
    let utils = obj.py().import("mscclpp.utils")?;
    let mapped = utils.call_method1("torch_dtype_to_mscclpp_dtype", (obj,))?;
    Ok(mapped.extract::<DataType>()?)
}

#[pymethods]
impl RawGpuBuffer {
    /// Allocate `nbytes` (zeroed) on `device` (default: this process's GPU by its local rank).
    #[new]
    #[pyo3(signature = (nbytes, device=None))]
    fn new(nbytes: i64, device: Option<usize>) -> PyResult<Self> {
        guard(|| {
            if nbytes <= 0 {
                return Err(err(format!("RawGpuBuffer: nbytes must be positive, not {nbytes}")));
            }
            let dev = match device {
                Some(d) => Device::open(d)?,
                None => default_device()?,
            };
            let buf = mscclpp_exec::RawGpuBuffer::new(&dev, nbytes as usize)?;
            Ok(RawGpuBuffer { buf: Arc::new(buf), nbytes: nbytes as usize })
        })
    }

    /// Bytes asked for.
    #[getter]
    fn nbytes(&self) -> usize {
        self.nbytes
    }

    /// The CUDA device ordinal.
    #[getter]
    fn device(&self) -> usize {
        self.buf.device().ordinal()
    }

    /// The device address (an integer, like `tensor.data_ptr()`).
    fn data_ptr(&self) -> u64 {
        self.buf.ptr()
    }

    /// DLPack: `(kDLCUDA, device ordinal)`.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (dlpack::DL_CUDA, self.buf.device().ordinal() as i32)
    }

    /// DLPack: a 1-D `uint8` tensor over the buffer (`torch.from_dlpack(buf)`). The memory is ready for any
    /// stream (allocation is synchronous), so `stream` needs no wait.
    #[pyo3(signature = (stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<Py<PyAny>>,
        max_version: Option<Py<PyAny>>,
        dl_device: Option<Py<PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        let _ = (stream, max_version, dl_device);
        if copy == Some(true) {
            return guard(|| Err(err("RawGpuBuffer.__dlpack__: copy=True is not supported (the point is to share)")));
        }
        self.capsule(py, DataType::uint8)
    }

    /// A DLPack capsule of the buffer as a 1-D tensor of `data_type` (a `mscclpp.DataType` or a torch dtype;
    /// default uint8): `torch.utils.dlpack.from_dlpack(buf.to_dlpack(data_type=torch.float16))`.
    #[pyo3(signature = (data_type=None))]
    fn to_dlpack(&self, py: Python<'_>, data_type: Option<Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let dtype = match data_type {
            Some(d) => self::data_type(&d)?,
            None => DataType::uint8,
        };
        self.capsule(py, dtype)
    }

    fn __len__(&self) -> usize {
        self.nbytes
    }

    fn __repr__(&self) -> String {
        format!(
            "RawGpuBuffer(nbytes={}, device={}, ptr={:#x})",
            self.nbytes,
            self.buf.device().ordinal(),
            self.buf.ptr()
        )
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RawGpuBuffer>()?;
    Ok(())
}
