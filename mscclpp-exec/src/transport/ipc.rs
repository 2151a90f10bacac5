//! CUDA IPC between processes of one host: the peer-access check of a connection, the signal path of its proxy,
//! mapping peers' legacy IPC handles and importing their cuMem allocations.
//!
//! cuMem file descriptors are passed over an abstract Unix-domain socket (`SCM_RIGHTS`). Each exported
//! allocation has its own random token; a request without it gets nothing.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mscclpp_sys::driver::{
    Device, DevicePtr, IpcMapping, IpcMemHandle, PinnedHostMemory, Stream, VmmAllocation, VmmMapping,
};

use crate::error::{Error, Result};

struct Exported {
    fd: OwnedFd,
    size: u64,
    token: [u8; 32],
}

struct Server {
    name: String,
    table: Mutex<HashMap<u64, Exported>>,
}

/// The process's fd server, or why it could not start (kept: it is not retried).
static SERVER: OnceLock<std::result::Result<&'static Server, std::sync::Arc<Error>>> = OnceLock::new();

/// Listen on `name` in the abstract namespace (no file on disk).
fn listen_abstract(name: &str) -> Result<UnixListener> {
    SocketAddr::from_abstract_name(name)
        .and_then(|addr| UnixListener::bind_addr(&addr))
        .map_err(|e| Error::io("listening on the fd-passing socket", e))
}

fn connect_abstract(name: &str) -> Result<UnixStream> {
    SocketAddr::from_abstract_name(name).and_then(|addr| UnixStream::connect_addr(&addr)).map_err(|e| {
        Error::io(format!("connecting to the fd server {name} of the exporting process (has it exited?)"), e)
    })
}

fn send_fd(sock: &UnixStream, payload: &[u8], fd: RawFd) -> std::io::Result<()> {
    let mut iov = libc::iovec { iov_base: payload.as_ptr() as *mut libc::c_void, iov_len: payload.len() };
    // SAFETY: CMSG_SPACE is a pure computation.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
    let mut cbuf = vec![0u8; space];
    // SAFETY: msghdr is plain data.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: msg_control points to a buffer of CMSG_SPACE(sizeof fd) bytes, so the first header fits.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
    }
    // SAFETY: `msg` references live buffers.
    let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, 0) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn recv_fd(sock: &UnixStream, payload: &mut [u8]) -> std::io::Result<Option<OwnedFd>> {
    let mut iov = libc::iovec { iov_base: payload.as_mut_ptr().cast(), iov_len: payload.len() };
    // SAFETY: pure computation.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
    let mut cbuf = vec![0u8; space];
    // SAFETY: plain data.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: `msg` references live buffers.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if (n as usize) < payload.len() {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "short fd reply"));
    }
    // SAFETY: walking the control buffer the kernel filled.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if !cmsg.is_null() && (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
            let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>());
            return Ok(Some(OwnedFd::from_raw_fd(fd)));
        }
    }
    Ok(None)
}

fn serve(server: &'static Server, listener: UnixListener) {
    loop {
        let Ok((mut sock, _)) = listener.accept() else {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
        let mut req = [0u8; 40];
        if sock.read_exact(&mut req).is_err() {
            continue;
        }
        let id = u64::from_le_bytes(req[..8].try_into().unwrap_or_default());
        let Ok(table) = server.table.lock() else {
            return;
        };
        match table.get(&id) {
            Some(e) if e.token[..] == req[8..] => {
                let _ = send_fd(&sock, &e.size.to_le_bytes(), e.fd.as_raw_fd());
            }
            _ => {
                tracing::warn!("fd server: refused a request for allocation {id} (unknown id or wrong token)");
                let _ = sock.write_all(&0u64.to_le_bytes());
            }
        }
    }
}

fn server() -> Result<&'static Server> {
    let s = SERVER.get_or_init(|| {
        let mut rnd = [0u8; 8];
        crate::bootstrap::random_bytes(&mut rnd).map_err(std::sync::Arc::new)?;
        let name = format!("mscclpp-fd-{}-{:016x}", std::process::id(), u64::from_le_bytes(rnd));
        let listener = listen_abstract(&name).map_err(std::sync::Arc::new)?;
        let srv: &'static Server = Box::leak(Box::new(Server { name, table: Mutex::new(HashMap::new()) }));
        std::thread::Builder::new()
            .name("mscclpp-fd-server".into())
            .spawn(move || serve(srv, listener))
            .map_err(|e| std::sync::Arc::new(Error::io("spawning the fd-passing server", e)))?;
        Ok(srv)
    });
    s.as_ref().copied().map_err(|e| Error::Unsupported(format!("cannot start the fd-passing server: {e}")))
}

/// Offer `fd` (an allocation of `size` bytes) to other processes. Returns `(server name, id, token)`.
pub fn export(fd: OwnedFd, size: u64) -> Result<(String, u64, [u8; 32])> {
    let srv = server()?;
    let mut token = [0u8; 32];
    crate::bootstrap::random_bytes(&mut token)?;
    let mut idb = [0u8; 8];
    crate::bootstrap::random_bytes(&mut idb)?;
    let id = u64::from_le_bytes(idb);
    srv.table
        .lock()
        .map_err(|_| Error::Poisoned { what: "the exported fd table" })?
        .insert(id, Exported { fd, size, token });
    Ok((srv.name.clone(), id, token))
}

/// Stop offering allocation `id` (closes our copy of its descriptor).
pub fn withdraw(id: u64) {
    if let Some(Ok(srv)) = SERVER.get()
        && let Ok(mut t) = srv.table.lock()
    {
        t.remove(&id);
    }
}

/// Fetch the descriptor of allocation `id` from the process serving `name`. Returns the fd and its size.
pub fn fetch(name: &str, id: u64, token: &[u8; 32]) -> Result<(OwnedFd, u64)> {
    let mut sock = connect_abstract(name)?;
    let _ = sock.set_read_timeout(Some(Duration::from_secs(10)));
    let mut req = [0u8; 40];
    req[..8].copy_from_slice(&id.to_le_bytes());
    req[8..].copy_from_slice(token);
    sock.write_all(&req).map_err(|e| Error::io(format!("asking {name} for allocation {id}"), e))?;
    let mut size = [0u8; 8];
    let fd = recv_fd(&sock, &mut size).map_err(|e| Error::io(format!("receiving allocation {id} from {name}"), e))?;
    match fd {
        Some(fd) => Ok((fd, u64::from_le_bytes(size))),
        None => Err(Error::BootstrapRefused {
            peer: name.to_string(),
            reason: format!("the exporting process refused allocation {id} (unknown id or wrong token)"),
        }),
    }
}

/// Check that `device` can map memory of the peer's GPU `remote_device`, when that GPU is visible in this process
/// and is another GPU (ranks sharing one GPU need no peer access).
pub fn check_peer_access(device: &Device, remote_device: usize) -> Result<()> {
    if let Ok(count) = mscclpp_sys::driver::device_count()
        && remote_device < count
        && remote_device != device.ordinal()
        && !device.can_access_ordinal(remote_device)?
    {
        return Err(mscclpp_sys::Error::NoPeerAccess { from: device.ordinal(), to: remote_device }.into());
    }
    Ok(())
}

/// Map rank `peer`'s legacy IPC handle (`handle`: the `CUipcMemHandle` bytes of a `base_size`-byte allocation) on
/// `device`. Returns the address here of the range `offset` bytes into the allocation, and the mapping.
pub fn open_handle(
    device: &Device,
    peer: usize,
    handle: &[u8],
    base_size: u64,
    offset: u64,
) -> Result<(DevicePtr, Arc<IpcMapping>)> {
    let mut bytes = [0u8; 64];
    if handle.len() != 64 {
        return Err(Error::Protocol { peer, reason: "IPC handle is not 64 bytes".into() });
    }
    bytes.copy_from_slice(handle);
    let h = IpcMemHandle { bytes, base_size, offset };
    let m = h.open(device)?;
    Ok((m.base() + offset, m))
}

/// Where a peer's fd server offers one cuMem allocation: server name, allocation id and the token proving the right
/// to it.
pub type Offer<'a> = (&'a str, u64, &'a [u8]);

/// Import rank `peer`'s cuMem allocation of `size` bytes from its fd server (`offer`) and map it on `device`.
/// Returns the address here of the range `offset` bytes into it, and the mapping.
pub fn import_allocation(
    device: &Device,
    peer: usize,
    (server, id, token): Offer<'_>,
    size: u64,
    offset: u64,
) -> Result<(DevicePtr, VmmMapping)> {
    let mut tok = [0u8; 32];
    if token.len() != 32 {
        return Err(Error::Protocol { peer, reason: "VMM token is not 32 bytes".into() });
    }
    tok.copy_from_slice(token);
    let (fd, served) = fetch(server, id, &tok)?;
    if served != size {
        return Err(Error::Protocol {
            peer,
            reason: format!("allocation size {served} differs from the description ({size})"),
        });
    }
    let m = VmmAllocation::import_fd(device, &fd, size as usize)?;
    Ok((m.ptr() + offset, m))
}

/// Pinned slots of the copy-ring signal path.
const SIGNAL_RING: u64 = 4096;

/// How the proxy stores a new semaphore value into a peer's token on this host.
#[derive(Debug)]
pub enum Signaller {
    /// `cuStreamWriteValue64` on the connection's stream.
    WriteValue,
    /// An 8-byte host-to-device copy from a ring of pinned slots. Slots are taken in the order of the
    /// connection's signals (not by value, so semaphores sharing the connection never share a slot), and the
    /// stream is flushed every half ring so no slot is rewritten before its copy ran.
    CopyRing {
        /// The pinned slots.
        ring: PinnedHostMemory,
        /// Signals sent on this connection so far.
        sent: AtomicU64,
    },
}

impl Signaller {
    /// The copy ring with `MSCCLPP_PROXY_SIGNAL=copy` or when `device` lacks stream memory operations, else
    /// `cuStreamWriteValue64`.
    pub fn new(device: &Device) -> Result<Self> {
        let want_copy = matches!(mscclpp_config::PROXY_SIGNAL.get(), Ok(Some("copy")));
        Ok(if want_copy || !device.supports_stream_mem_ops() {
            Signaller::CopyRing {
                ring: PinnedHostMemory::zeroed(device, (SIGNAL_RING * 8) as usize)?,
                sent: AtomicU64::new(0),
            }
        } else {
            Signaller::WriteValue
        })
    }

    /// Queue a store of `value` into `token` on `stream`; `flush` waits for everything queued on `stream`.
    pub fn signal(
        &self,
        stream: &Stream,
        token: DevicePtr,
        value: u64,
        flush: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        match self {
            Signaller::WriteValue => Ok(stream.write_value_u64(token, value)?),
            Signaller::CopyRing { ring, sent } => {
                let n = sent.fetch_add(1, Ordering::Relaxed);
                if n > 0 && n.is_multiple_of(SIGNAL_RING / 2) {
                    flush()?;
                }
                let off = ring_slot(n);
                ring.atomic_u64(off)?.store(value, Ordering::Release);
                // SAFETY: the slot is pinned, lives as long as the connection, and is not rewritten before this
                // copy ran (the stream is flushed every half ring of signals).
                unsafe { stream.copy_h2d_async(token, ring.host_ptr().add(off), 8) }?;
                Ok(())
            }
        }
    }
}

/// Byte offset in the copy ring of the connection's `n`-th signal.
fn ring_slot(n: u64) -> usize {
    ((n % SIGNAL_RING) * 8) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_fd_travels_and_a_wrong_token_is_refused() {
        let f = tempfile_fd();
        let (name, id, token) = export(f, 4096).expect("export");
        let (fd, size) = fetch(&name, id, &token).expect("fetch");
        assert_eq!(size, 4096);
        assert!(fd.as_raw_fd() >= 0);
        let mut bad = token;
        bad[0] ^= 1;
        assert!(fetch(&name, id, &bad).is_err());
        withdraw(id);
        assert!(fetch(&name, id, &token).is_err());
    }

    #[test]
    fn ring_slots_follow_the_signal_count_not_the_value() {
        // Consecutive signals of a connection take consecutive slots, whatever values their semaphores carry.
        let mut slots: Vec<usize> = (0..SIGNAL_RING).map(ring_slot).collect();
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), SIGNAL_RING as usize, "one slot per signal within a ring");
        assert_eq!(ring_slot(SIGNAL_RING), ring_slot(0), "the ring wraps");
        assert_eq!(ring_slot(1), 8);
    }

    fn tempfile_fd() -> OwnedFd {
        let f = std::fs::File::open("/dev/null").expect("open");
        OwnedFd::from(f)
    }
}
