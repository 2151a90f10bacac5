//! `mscclpp bench --nccl`: NCCL itself, loaded at run time from `libnccl.so.2` (or `MSCCLPP_NCCL_LIB_PATH`), with a
//! communicator whose id travels over our bootstrap. Only what the benchmark calls is bound; every call's result
//! is checked and a failure names NCCL's own message.

use std::ffi::{CStr, c_char, c_int, c_void};

use anyhow::{Context, anyhow, bail};
use libloading::Library;
use mscclpp_lang::data::DataType;
use mscclpp_lang::plan::Collective;

/// The soname loaded when `MSCCLPP_NCCL_LIB_PATH` is unset.
pub const DEFAULT_SONAME: &str = "libnccl.so.2";

type Comm = *mut c_void;

/// `ncclUniqueId`: 128 opaque bytes.
#[repr(C)]
#[derive(Clone, Copy)]
struct UniqueId {
    internal: [c_char; 128],
}

type GetUniqueId = unsafe extern "C" fn(*mut UniqueId) -> c_int;
type CommInitRank = unsafe extern "C" fn(*mut Comm, c_int, UniqueId, c_int) -> c_int;
type CommDestroy = unsafe extern "C" fn(Comm) -> c_int;
type GetErrorString = unsafe extern "C" fn(c_int) -> *const c_char;
type AllReduce = unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, *mut c_void) -> c_int;
type AllGather = unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, Comm, *mut c_void) -> c_int;
type ReduceScatter = unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, *mut c_void) -> c_int;
type Broadcast = unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, *mut c_void) -> c_int;
type Send = unsafe extern "C" fn(*const c_void, usize, c_int, c_int, Comm, *mut c_void) -> c_int;
type Recv = unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, Comm, *mut c_void) -> c_int;
type Group = unsafe extern "C" fn() -> c_int;

/// The NCCL functions the benchmark calls, resolved from the loaded library.
struct Api {
    get_unique_id: GetUniqueId,
    comm_init_rank: CommInitRank,
    comm_destroy: CommDestroy,
    get_error_string: GetErrorString,
    all_reduce: AllReduce,
    all_gather: AllGather,
    reduce_scatter: ReduceScatter,
    broadcast: Broadcast,
    send: Send,
    recv: Recv,
    group_start: Group,
    group_end: Group,
    /// Keeps the functions above valid.
    _lib: Library,
}

/// The library to load: `MSCCLPP_NCCL_LIB_PATH` when set, else [`DEFAULT_SONAME`].
pub fn library_path() -> String {
    mscclpp_config::NCCL_LIB_PATH.get().map_or_else(|| DEFAULT_SONAME.into(), |p| p.display().to_string())
}

impl Api {
    fn load(path: &str) -> anyhow::Result<Api> {
        // SAFETY: loading libnccl runs its initialisers, which only set up NCCL's own state.
        let lib = unsafe { Library::new(path) }.map_err(|e| {
            anyhow!(
                "`--nccl` needs NCCL, and `{path}` could not be loaded ({e}); install NCCL 2 (e.g. `apt install \
                 libnccl2` or `pip install nvidia-nccl-cu12`) and put its directory on LD_LIBRARY_PATH, or set \
                 MSCCLPP_NCCL_LIB_PATH to the full path of libnccl.so.2"
            )
        })?;
        macro_rules! sym {
            ($name:literal, $ty:ty) => {{
                // SAFETY: the symbol is NCCL's public C function of this name, declared with its C signature.
                let s = unsafe { lib.get::<$ty>(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| anyhow!("`{path}` has no `{}` ({e}); is it NCCL 2.7 or later?", $name))?;
                *s
            }};
        }
        Ok(Api {
            get_unique_id: sym!("ncclGetUniqueId", GetUniqueId),
            comm_init_rank: sym!("ncclCommInitRank", CommInitRank),
            comm_destroy: sym!("ncclCommDestroy", CommDestroy),
            get_error_string: sym!("ncclGetErrorString", GetErrorString),
            all_reduce: sym!("ncclAllReduce", AllReduce),
            all_gather: sym!("ncclAllGather", AllGather),
            reduce_scatter: sym!("ncclReduceScatter", ReduceScatter),
            broadcast: sym!("ncclBroadcast", Broadcast),
            send: sym!("ncclSend", Send),
            recv: sym!("ncclRecv", Recv),
            group_start: sym!("ncclGroupStart", Group),
            group_end: sym!("ncclGroupEnd", Group),
            _lib: lib,
        })
    }

    fn check(&self, what: &str, code: c_int) -> anyhow::Result<()> {
        if code == 0 {
            return Ok(());
        }
        // SAFETY: ncclGetErrorString returns a static NUL-terminated string for any code (or null).
        let msg = unsafe {
            let p = (self.get_error_string)(code);
            if p.is_null() { String::from("unknown error") } else { CStr::from_ptr(p).to_string_lossy().into_owned() }
        };
        bail!("{what} failed: NCCL error {code}: {msg}")
    }
}

/// NCCL's code for an element type.
fn nccl_type(t: DataType) -> c_int {
    match t {
        DataType::U8 => 1,
        DataType::I32 => 2,
        DataType::U32 => 3,
        DataType::F16 => 6,
        DataType::F32 => 7,
        DataType::Bf16 => 9,
    }
}

/// An NCCL communicator over the ranks of this job.
pub struct Nccl {
    api: Api,
    comm: Comm,
    world: usize,
}

impl Nccl {
    /// Loads NCCL and creates a communicator: rank 0 makes the id, the bootstrap broadcasts it. The calling thread
    /// must have the GPU's context current (NCCL uses the current device).
    pub fn new(bootstrap: &dyn mscclpp_exec::bootstrap::Bootstrap) -> anyhow::Result<Nccl> {
        let path = library_path();
        // Every rank loads first and tells the others, so that a rank without NCCL fails the whole job at once
        // instead of leaving its peers waiting for an id.
        let loaded = Api::load(&path);
        let verdicts = bootstrap.all_gather(&[u8::from(loaded.is_ok())])?;
        let api = loaded?;
        if let Some(r) = verdicts.iter().position(|v| v.first() != Some(&1)) {
            bail!("rank {r} could not load NCCL from `{path}`; see its error");
        }
        let rank = bootstrap.rank();
        let world = bootstrap.size();
        let mut id = UniqueId { internal: [0; 128] };
        if rank == 0 {
            // SAFETY: `id` is a valid, writable ncclUniqueId.
            api.check("ncclGetUniqueId", unsafe { (api.get_unique_id)(&mut id) })?;
        }
        let bytes: Vec<u8> = id.internal.iter().map(|&c| c as u8).collect();
        let got = bootstrap.broadcast(0, &bytes)?;
        if got.len() != 128 {
            bail!("the NCCL id from rank 0 has {} bytes, not 128", got.len());
        }
        for (d, s) in id.internal.iter_mut().zip(&got) {
            *d = *s as c_char;
        }
        let mut comm: Comm = std::ptr::null_mut();
        // SAFETY: `comm` is writable; the id came from ncclGetUniqueId on rank 0; ranks and world are this job's.
        api.check("ncclCommInitRank", unsafe { (api.comm_init_rank)(&mut comm, world as c_int, id, rank as c_int) })
            .context("creating the NCCL communicator")?;
        Ok(Nccl { api, comm, world })
    }

    /// Queues one `collective` of a message of `bytes` bytes (the output of an all-gather, the input otherwise)
    /// from `input` to `output` (device addresses) on `stream`; all-to-all as grouped sends and receives,
    /// broadcast from rank 0, reductions with sum.
    pub fn launch(
        &self,
        collective: Collective,
        dtype: DataType,
        bytes: u64,
        input: u64,
        output: u64,
        stream: *mut c_void,
    ) -> anyhow::Result<()> {
        let es = dtype.size() as u64;
        let t = nccl_type(dtype);
        let n = self.world as u64;
        let (send, recv) = (input as *const c_void, output as *mut c_void);
        let api = &self.api;
        // Every call below: `input`/`output` are device buffers of this rank sized for the collective at `bytes`
        // (the caller's `BufferSizes`), `comm` is live, `stream` is a stream of this GPU.
        match collective {
            Collective::AllReduce => {
                let count = (bytes / es) as usize;
                // SAFETY: see above; `count` elements fit each buffer.
                let code = unsafe { (api.all_reduce)(send, recv, count, t, 0, self.comm, stream) };
                api.check("ncclAllReduce", code)
            }
            Collective::AllGather => {
                let count = (bytes / n / es) as usize;
                // SAFETY: see above; the input holds `count` elements, the output `count` per rank.
                let code = unsafe { (api.all_gather)(send, recv, count, t, self.comm, stream) };
                api.check("ncclAllGather", code)
            }
            Collective::ReduceScatter => {
                let count = (bytes / n / es) as usize;
                // SAFETY: see above; the output holds `count` elements, the input `count` per rank.
                let code = unsafe { (api.reduce_scatter)(send, recv, count, t, 0, self.comm, stream) };
                api.check("ncclReduceScatter", code)
            }
            Collective::Broadcast => {
                let count = (bytes / es) as usize;
                // SAFETY: see above; `count` elements fit each buffer; root 0 exists.
                let code = unsafe { (api.broadcast)(send, recv, count, t, 0, self.comm, stream) };
                api.check("ncclBroadcast", code)
            }
            Collective::AllToAll => {
                let part = bytes / n;
                let count = (part / es) as usize;
                // SAFETY: group calls take no arguments.
                api.check("ncclGroupStart", unsafe { (api.group_start)() })?;
                for peer in 0..self.world {
                    let off = peer as u64 * part;
                    let s = (input + off) as *const c_void;
                    let r = (output + off) as *mut c_void;
                    // SAFETY: as above; block `peer` of each buffer lies inside it.
                    api.check("ncclSend", unsafe { (api.send)(s, count, t, peer as c_int, self.comm, stream) })?;
                    // SAFETY: as above.
                    api.check("ncclRecv", unsafe { (api.recv)(r, count, t, peer as c_int, self.comm, stream) })?;
                }
                // SAFETY: group calls take no arguments.
                api.check("ncclGroupEnd", unsafe { (api.group_end)() })
            }
            other => bail!("NCCL has no `{other}` here"),
        }
    }
}

impl Drop for Nccl {
    fn drop(&mut self) {
        // SAFETY: `comm` was created by ncclCommInitRank and is destroyed once.
        let _ = unsafe { (self.api.comm_destroy)(self.comm) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_libnccl_names_what_to_install() {
        let e = Api::load("/nonexistent/libnccl.so.2").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("/nonexistent/libnccl.so.2"), "{e}");
        assert!(e.contains("install NCCL") && e.contains("MSCCLPP_NCCL_LIB_PATH"), "{e}");
    }

    #[test]
    fn element_codes_are_nccls() {
        assert_eq!(nccl_type(DataType::F16), 6);
        assert_eq!(nccl_type(DataType::Bf16), 9);
        assert_eq!(nccl_type(DataType::F32), 7);
    }
}
