//! Finding the real NCCL at first use and resolving its functions.
//!
//! Order: the `libnccl.so.2` already loaded in the process (`dlopen` with `RTLD_NOLOAD`: torch loads it with
//! `RTLD_LOCAL`, so `dlsym(RTLD_NEXT, ...)` would not see it), else the file named by `MSCCLPP_NCCL_LIB_PATH`.
//! Functions are resolved by their `pnccl*` names (the real library's own aliases), and a symbol that resolves
//! into this library itself is refused, so a forward can never call back into us.

use std::ffi::{CStr, CString, c_void};
use std::sync::OnceLock;

/// The real NCCL library, or why there is none.
struct Real {
    handle: Option<usize>,
    /// Where it came from, or why there is none (for messages).
    origin: String,
}

static REAL: OnceLock<Real> = OnceLock::new();

fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string owned by libc, valid until the next dl call here.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown dlopen error".to_string()
    } else {
        // SAFETY: non-null, NUL-terminated (see above).
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

fn load() -> Real {
    // SAFETY: a constant NUL-terminated name; RTLD_NOLOAD only returns a library that is already loaded.
    let h = unsafe { libc::dlopen(c"libnccl.so.2".as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
    if !h.is_null() {
        return Real { handle: Some(h as usize), origin: "the libnccl.so.2 loaded in this process".into() };
    }
    match mscclpp_config::NCCL_LIB_PATH.get() {
        Some(path) => {
            let Ok(c) = CString::new(path.as_os_str().as_encoded_bytes()) else {
                return Real {
                    handle: None,
                    origin: format!("MSCCLPP_NCCL_LIB_PATH={} contains a NUL byte", path.display()),
                };
            };
            // SAFETY: a NUL-terminated path; loading a library runs its constructors, which NCCL keeps inert.
            let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            if h.is_null() {
                Real {
                    handle: None,
                    origin: format!(
                        "MSCCLPP_NCCL_LIB_PATH={} could not be loaded ({}); point it at NCCL's libnccl.so.2",
                        path.display(),
                        dl_error()
                    ),
                }
            } else {
                Real { handle: Some(h as usize), origin: format!("MSCCLPP_NCCL_LIB_PATH={}", path.display()) }
            }
        }
        None => Real {
            handle: None,
            origin: "no libnccl.so.2 is loaded in this process and MSCCLPP_NCCL_LIB_PATH is not set".into(),
        },
    }
}

fn real() -> &'static Real {
    REAL.get_or_init(load)
}

/// Whether a real NCCL was found.
pub fn available() -> bool {
    real().handle.is_some()
}

/// Where the real NCCL came from, or why there is none.
pub fn origin() -> &'static str {
    &real().origin
}

/// The base address of the object that holds `addr` (`dladdr`), if any.
fn object_base(addr: *const c_void) -> Option<usize> {
    let mut info: libc::Dl_info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: valid out-pointer; dladdr only inspects the address.
    let ok = unsafe { libc::dladdr(addr, &mut info) };
    (ok != 0).then_some(info.dli_fbase as usize)
}

/// Resolve the real NCCL's `name` (without the `p` prefix: `ncclAllReduce`), caching the address in `slot`.
/// `None` when there is no real NCCL or it lacks the function.
pub fn resolve(slot: &OnceLock<Option<usize>>, name: &str) -> Option<usize> {
    *slot.get_or_init(|| {
        let handle = real().handle?;
        let own = object_base(resolve as *const c_void);
        for candidate in [format!("p{name}"), name.to_string()] {
            let c = CString::new(candidate).ok()?;
            // SAFETY: a live handle from dlopen and a NUL-terminated name.
            let p = unsafe { libc::dlsym(handle as *mut c_void, c.as_ptr()) };
            if p.is_null() {
                continue;
            }
            // Never forward into this library itself.
            if own.is_some() && object_base(p) == own {
                continue;
            }
            return Some(p as usize);
        }
        None
    })
}

/// Calls the real NCCL's function, or (without one) returns [`Missing::missing`] after recording why.
/// `forward!("ncclAllReduce", fn(*const c_void, ...) -> NcclResult, a, b, ...)`.
#[macro_export]
#[doc(hidden)]
macro_rules! forward {
    ($name:literal, fn($($ty:ty),* $(,)?) -> $ret:ty $(, $arg:expr)* $(,)?) => {{
        static SLOT: ::std::sync::OnceLock<Option<usize>> = ::std::sync::OnceLock::new();
        match $crate::real::resolve(&SLOT, $name) {
            Some(p) => {
                // SAFETY: `p` is the real NCCL's function of this name, declared in nccl.h with exactly this
                // signature.
                let f: unsafe extern "C" fn($($ty),*) -> $ret = unsafe { ::std::mem::transmute(p) };
                // SAFETY: the caller's arguments are passed through unchanged, under NCCL's own contract.
                let r = unsafe { f($($arg),*) };
                $crate::state::note_forwarded(&r);
                r
            }
            None => <$ret as $crate::real::Missing>::missing($name),
        }
    }};
}

/// The value an exported function returns when it must forward and there is no real NCCL.
pub trait Missing {
    /// Record why in the last error and return the error value.
    fn missing(name: &str) -> Self;
}

fn missing_message(name: &str) -> String {
    format!(
        "{name} is not accelerated by mscclpp and needs the real NCCL, but {}; set MSCCLPP_NCCL_LIB_PATH to NCCL's \
         libnccl.so.2",
        origin()
    )
}

impl Missing for crate::abi::NcclResult {
    fn missing(name: &str) -> Self {
        crate::state::set_last_error(missing_message(name));
        crate::abi::INVALID_USAGE
    }
}

impl Missing for *const std::ffi::c_char {
    fn missing(name: &str) -> Self {
        crate::state::set_last_error(missing_message(name));
        c"unavailable: no real NCCL loaded (see ncclGetLastError)".as_ptr()
    }
}

impl Missing for () {
    fn missing(_name: &str) -> Self {}
}
