//! A DLPack capsule (`dltensor`, DLPack 0.8 layout: what `torch.from_dlpack` and
//! `torch.utils.dlpack.from_dlpack` take) over device memory kept alive by the capsule.

use std::ffi::{CStr, c_void};
use std::sync::Arc;

use pyo3::ffi;
use pyo3::prelude::*;

/// `kDLCUDA`.
pub const DL_CUDA: i32 = 2;

#[repr(C)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

/// What the capsule owns: the memory's keeper and the shape array the tensor points into.
struct Owner {
    _keep: Arc<dyn Send + Sync>,
    shape: Box<[i64; 1]>,
}

/// The capsule's name until a consumer takes the tensor (it renames it `used_dltensor` and calls the deleter).
const NAME: &CStr = c"dltensor";

/// Frees a managed tensor made by [`capsule`].
unsafe extern "C" fn deleter(t: *mut DlManagedTensor) {
    if t.is_null() {
        return;
    }
    // SAFETY: `t` was made by `Box::into_raw` in `capsule`, and its `manager_ctx` by `Box::into_raw` of an
    // `Owner`; DLPack calls the deleter exactly once (the consumer after use, or our capsule destructor when
    // nobody consumed it).
    unsafe {
        let t = Box::from_raw(t);
        drop(Box::from_raw(t.manager_ctx as *mut Owner));
    }
}

/// Capsule destructor: frees the tensor unless a consumer took it (and renamed the capsule).
unsafe extern "C" fn destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with our capsule; `PyCapsule_IsValid` checks the name before the pointer is read.
    unsafe {
        // A consumed capsule (renamed `used_dltensor`) is not valid under our name: its consumer calls the deleter.
        // `PyCapsule_IsValid` sets no exception, so one being raised while the capsule is freed stays as it is.
        if ffi::PyCapsule_IsValid(capsule, NAME.as_ptr()) == 1 {
            let t = ffi::PyCapsule_GetPointer(capsule, NAME.as_ptr()) as *mut DlManagedTensor;
            deleter(t);
        }
    }
}

/// A 1-D DLPack capsule of `len` elements of type (`code`, `bits`) at device address `ptr` on CUDA device
/// `device`; `keep` stays alive until the consumer is done with the tensor.
pub fn capsule(
    py: Python<'_>,
    ptr: u64,
    device: usize,
    len: usize,
    (code, bits): (u8, u8),
    keep: Arc<dyn Send + Sync>,
) -> PyResult<Py<PyAny>> {
    let mut owner = Box::new(Owner { _keep: keep, shape: Box::new([len as i64]) });
    let shape = owner.shape.as_mut_ptr();
    let managed = Box::new(DlManagedTensor {
        dl_tensor: DlTensor {
            data: ptr as *mut c_void,
            device: DlDevice { device_type: DL_CUDA, device_id: device as i32 },
            ndim: 1,
            dtype: DlDataType { code, bits, lanes: 1 },
            shape,
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        },
        manager_ctx: Box::into_raw(owner) as *mut c_void,
        deleter: Some(deleter),
    });
    let raw = Box::into_raw(managed);
    // SAFETY: `raw` is a valid, uniquely owned DLManagedTensor; the capsule's destructor frees it unless a
    // consumer renamed the capsule (then the consumer calls `deleter`).
    let obj = unsafe { ffi::PyCapsule_New(raw as *mut c_void, NAME.as_ptr(), Some(destructor)) };
    if obj.is_null() {
        // SAFETY: the capsule was not made, so nobody else owns `raw`.
        unsafe { deleter(raw) };
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `obj` is a new, non-null reference returned by PyCapsule_New.
    Ok(unsafe { Bound::from_owned_ptr(py, obj) }.unbind())
}
