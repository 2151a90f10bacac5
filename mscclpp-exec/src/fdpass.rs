//! Passing cuMem file descriptors between processes of one host over an abstract Unix-domain socket
//! (`SCM_RIGHTS`). Each exported allocation has its own random token; a request without it gets nothing.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

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

static SERVER: OnceLock<std::result::Result<&'static Server, String>> = OnceLock::new();

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
        crate::bootstrap::random_bytes(&mut rnd).map_err(|e| e.to_string())?;
        let name = format!("mscclpp-fd-{}-{:016x}", std::process::id(), u64::from_le_bytes(rnd));
        let listener = listen_abstract(&name).map_err(|e| e.to_string())?;
        let srv: &'static Server = Box::leak(Box::new(Server { name, table: Mutex::new(HashMap::new()) }));
        std::thread::Builder::new()
            .name("mscclpp-fd-server".into())
            .spawn(move || serve(srv, listener))
            .map_err(|e| e.to_string())?;
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
    srv.table.lock().map_err(|_| Error::Config("fd table poisoned".into()))?.insert(id, Exported { fd, size, token });
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

    fn tempfile_fd() -> OwnedFd {
        let f = std::fs::File::open("/dev/null").expect("open");
        OwnedFd::from(f)
    }
}
