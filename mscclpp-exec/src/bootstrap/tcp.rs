//! TCP bootstrap. Rank 0 runs a rendezvous at the job's address; every rank also listens for direct peer
//! connections. Every accepted connection must prove that it belongs to the job (a MAC over a fresh nonce,
//! keyed with the job secret); anything else is refused and logged.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::Bootstrap;
use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"MSCLPPB1";
const NONCE_LEN: usize = 16;
const MAC_LEN: usize = 32;
const MAX_FRAME: u64 = 1 << 31;

/// Everything a rank needs to join a job: the rendezvous address and the job secret. Rank 0 creates it
/// ([`UniqueId::new`]) and hands it to the others out of band (e.g. through MPI or a file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UniqueId {
    /// Where rank 0 listens (the first of `port_span` candidate ports).
    pub addr: SocketAddr,
    /// Random job secret.
    pub secret: [u8; 32],
    /// Number of consecutive ports rank 0 may use, starting at `addr`'s port, when that one is taken (the
    /// other ranks try them in turn; only the job's rendezvous passes the handshake).
    pub port_span: u16,
}

/// Fill `buf` from the OS random source.
pub(crate) fn random_bytes(buf: &mut [u8]) -> Result<()> {
    let mut f = std::fs::File::open("/dev/urandom").map_err(|e| Error::io("opening /dev/urandom", e))?;
    f.read_exact(buf).map_err(|e| Error::io("reading /dev/urandom", e))
}

/// The address of the interface that routes to the outside (no packet is sent), or loopback.
fn default_local_ip() -> IpAddr {
    if let Ok(Some(name)) = mscclpp_config::SOCKET_IFNAME.get()
        && let Some(ip) = crate::env::interface_ip(&name)
    {
        return ip;
    }
    UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("10.255.255.255:9").map(|_| s))
        .and_then(|s| s.local_addr())
        .map(|a| a.ip())
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

impl UniqueId {
    /// A fresh id: a random secret and a free port on this host's main interface (or `MSCCLPP_SOCKET_IFNAME`).
    pub fn new() -> Result<Self> {
        let ip = default_local_ip();
        let l = TcpListener::bind(SocketAddr::new(ip, 0)).map_err(|e| Error::io(format!("binding {ip}:0"), e))?;
        let addr = l.local_addr().map_err(|e| Error::io("local_addr", e))?;
        let mut secret = [0u8; 32];
        random_bytes(&mut secret)?;
        Ok(UniqueId { addr, secret, port_span: 1 })
    }

    /// An id for a fixed address whose secret is derived from the address and a job id (see
    /// [`super::job_secret`]).
    pub fn from_addr(addr: SocketAddr, job_id: &str) -> Self {
        UniqueId { addr, secret: super::job_secret(&addr.ip().to_string(), addr.port(), job_id), port_span: 1 }
    }

    /// Parse `ip:port`, `host:port` or `ifname:ip:port` (the interface is informational: we bind the ip).
    pub fn parse_addr(s: &str) -> Result<SocketAddr> {
        let parts: Vec<&str> = s.rsplitn(2, ':').collect();
        if parts.len() != 2 {
            return Err(Error::Config(format!("{s:?} is not ip:port, host:port or ifname:ip:port")));
        }
        let port: u16 =
            parts[0].parse().map_err(|_| Error::Config(format!("{s:?}: port {:?} is not a number", parts[0])))?;
        let mut host = parts[1];
        // ifname:ip (IPv4 only: an IPv6 literal must be bracketed).
        if !host.starts_with('[')
            && let Some((_ifname, ip)) = host.split_once(':')
            && ip.parse::<Ipv4Addr>().is_ok()
        {
            host = ip;
        }
        let host = host.trim_start_matches('[').trim_end_matches(']');
        (host, port)
            .to_socket_addrs()
            .map_err(|e| Error::io(format!("resolving {host}"), e))?
            .next()
            .ok_or_else(|| Error::Config(format!("{host} does not resolve to an address")))
    }

    /// Hex text form (`addr/secret`), e.g. to pass through a file or environment variable.
    pub fn to_text(&self) -> String {
        let hex: String = self.secret.iter().map(|b| format!("{b:02x}")).collect();
        format!("{}/{hex}", self.addr)
    }

    /// Parse [`to_text`](Self::to_text).
    pub fn from_text(s: &str) -> Result<Self> {
        let (addr, hex) = s.rsplit_once('/').ok_or_else(|| Error::Config(format!("unique id {s:?} has no '/'")))?;
        let addr = Self::parse_addr(addr)?;
        if hex.len() != 64 {
            return Err(Error::Config("unique id secret must be 64 hex digits".into()));
        }
        let mut secret = [0u8; 32];
        for (i, b) in secret.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
                .map_err(|_| Error::Config("unique id secret is not hex".into()))?;
        }
        Ok(UniqueId { addr, secret, port_span: 1 })
    }
}

fn mac(secret: &[u8; 32], nonce: &[u8], rank: u64) -> [u8; MAC_LEN] {
    let mut h = blake3::Hasher::new_keyed(secret);
    h.update(MAGIC);
    h.update(nonce);
    h.update(&rank.to_le_bytes());
    *h.finalize().as_bytes()
}

fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1))
}

fn write_frame(s: &mut TcpStream, tag: u64, data: &[u8]) -> std::io::Result<()> {
    let mut head = [0u8; 16];
    head[..8].copy_from_slice(&tag.to_le_bytes());
    head[8..].copy_from_slice(&(data.len() as u64).to_le_bytes());
    s.write_all(&head)?;
    s.write_all(data)
}

fn read_frame(s: &mut TcpStream) -> std::io::Result<(u64, Vec<u8>)> {
    let mut head = [0u8; 16];
    s.read_exact(&mut head)?;
    let tag = u64::from_le_bytes(head[..8].try_into().unwrap_or_default());
    let len = u64::from_le_bytes(head[8..].try_into().unwrap_or_default());
    if len > MAX_FRAME {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "frame too large"));
    }
    let mut data = vec![0u8; len as usize];
    s.read_exact(&mut data)?;
    Ok((tag, data))
}

/// Server side of the handshake: send a nonce, check the MAC. Returns the claimed rank.
fn accept_handshake(s: &mut TcpStream, secret: &[u8; 32], nranks: usize) -> std::io::Result<usize> {
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut nonce = [0u8; NONCE_LEN];
    random_bytes(&mut nonce).map_err(|e| std::io::Error::other(e.to_string()))?;
    s.write_all(MAGIC)?;
    s.write_all(&nonce)?;
    let mut reply = [0u8; 8 + 8 + MAC_LEN];
    s.read_exact(&mut reply)?;
    if &reply[..8] != MAGIC {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "not an mscclpp peer"));
    }
    let rank = u64::from_le_bytes(reply[8..16].try_into().unwrap_or_default());
    let expect = mac(secret, &nonce, rank);
    if reply[16..] != expect[..] {
        return Err(std::io::Error::new(std::io::ErrorKind::PermissionDenied, "wrong job secret"));
    }
    if rank as usize >= nranks {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "rank out of range"));
    }
    s.write_all(b"OK")?;
    s.set_read_timeout(None)?;
    Ok(rank as usize)
}

/// Client side of the handshake.
fn connect_handshake(s: &mut TcpStream, secret: &[u8; 32], rank: usize, timeout: Duration) -> std::io::Result<()> {
    s.set_read_timeout(Some(timeout))?;
    let mut hello = [0u8; 8 + NONCE_LEN];
    s.read_exact(&mut hello)?;
    if &hello[..8] != MAGIC {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "not an mscclpp bootstrap"));
    }
    let mut reply = Vec::with_capacity(8 + 8 + MAC_LEN);
    reply.extend_from_slice(MAGIC);
    reply.extend_from_slice(&(rank as u64).to_le_bytes());
    reply.extend_from_slice(&mac(secret, &hello[8..], rank as u64));
    s.write_all(&reply)?;
    let mut ok = [0u8; 2];
    s.read_exact(&mut ok).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "the peer closed the connection during the handshake: it does not share our job secret",
        )
    })?;
    s.set_read_timeout(None)?;
    Ok(())
}

/// Connect with retries until `deadline` (the listener may not be up yet).
fn connect_retry(addr: SocketAddr, deadline: Instant) -> std::io::Result<TcpStream> {
    loop {
        match TcpStream::connect_timeout(&addr, remaining(deadline).min(Duration::from_secs(1))) {
            Ok(s) => {
                s.set_nodelay(true)?;
                return Ok(s);
            }
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

#[derive(Default)]
struct Mailbox {
    queues: HashMap<(usize, u64), VecDeque<Vec<u8>>>,
    broken: HashMap<usize, String>,
}

struct Shared {
    rank: usize,
    nranks: usize,
    secret: [u8; 32],
    mailbox: Mutex<Mailbox>,
    arrived: Condvar,
    stop: AtomicBool,
}

/// TCP implementation of [`Bootstrap`].
pub struct TcpBootstrap {
    shared: Arc<Shared>,
    peers: Vec<SocketAddr>,
    out: Vec<Mutex<Option<TcpStream>>>,
    timeout: Duration,
    listen_addr: SocketAddr,
}

impl std::fmt::Debug for TcpBootstrap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpBootstrap")
            .field("rank", &self.shared.rank)
            .field("nranks", &self.shared.nranks)
            .field("listen", &self.listen_addr)
            .finish()
    }
}

/// The rendezvous run by rank 0: collect every rank's peer address, then send the table to all.
fn run_root(listener: TcpListener, secret: [u8; 32], nranks: usize, deadline: Instant) -> Result<()> {
    listener.set_nonblocking(true).map_err(|e| Error::io("root listener", e))?;
    let mut conns: Vec<Option<(TcpStream, SocketAddr)>> = (0..nranks).map(|_| None).collect();
    let mut count = 0;
    while count < nranks {
        if Instant::now() >= deadline {
            let missing: Vec<usize> = (0..nranks).filter(|r| conns[*r].is_none()).collect();
            let msg = format!("ranks {missing:?} did not arrive at the root");
            for (s, _) in conns.iter_mut().flatten() {
                let _ = write_frame(s, 1, msg.as_bytes());
            }
            return Err(Error::BootstrapTimeout {
                what: "waiting at the rendezvous (rank 0)".into(),
                missing,
                millis: 0,
            });
        }
        match listener.accept() {
            Ok((mut s, from)) => {
                let _ = s.set_nonblocking(false);
                let _ = s.set_nodelay(true);
                match accept_handshake(&mut s, &secret, nranks) {
                    Ok(rank) => {
                        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                        match read_frame(&mut s) {
                            Ok((_, addr)) => {
                                let addr = String::from_utf8_lossy(&addr).parse::<SocketAddr>();
                                match addr {
                                    Ok(a) if conns[rank].is_none() => {
                                        conns[rank] = Some((s, a));
                                        count += 1;
                                    }
                                    Ok(_) => {
                                        tracing::warn!("bootstrap root: rank {rank} arrived twice from {from}; refused")
                                    }
                                    Err(_) => tracing::warn!("bootstrap root: bad address from {from}; refused"),
                                }
                            }
                            Err(e) => tracing::warn!("bootstrap root: {from} sent no address ({e}); refused"),
                        }
                    }
                    Err(e) => tracing::warn!("bootstrap root: refused connection from {from}: {e}"),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(Error::io("accepting at the rendezvous", e)),
        }
    }
    let table: Vec<String> = conns.iter().map(|c| c.as_ref().map(|(_, a)| a.to_string()).unwrap_or_default()).collect();
    let table = table.join(",");
    for (s, _) in conns.iter_mut().flatten() {
        write_frame(s, 0, table.as_bytes()).map_err(|e| Error::io("sending the address table", e))?;
    }
    Ok(())
}

fn reader_loop(shared: Arc<Shared>, mut s: TcpStream, peer: usize) {
    loop {
        match read_frame(&mut s) {
            Ok((tag, data)) => {
                let mut mb = match shared.mailbox.lock() {
                    Ok(m) => m,
                    Err(_) => return,
                };
                mb.queues.entry((peer, tag)).or_default().push_back(data);
                shared.arrived.notify_all();
            }
            Err(e) => {
                if !shared.stop.load(Ordering::Relaxed) {
                    if let Ok(mut mb) = shared.mailbox.lock() {
                        mb.broken.insert(peer, e.to_string());
                    }
                    shared.arrived.notify_all();
                }
                return;
            }
        }
    }
}

fn accept_loop(shared: Arc<Shared>, listener: TcpListener) {
    let _ = listener.set_nonblocking(true);
    while !shared.stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((mut s, from)) => {
                let _ = s.set_nonblocking(false);
                let _ = s.set_nodelay(true);
                let shared2 = shared.clone();
                std::thread::spawn(move || match accept_handshake(&mut s, &shared2.secret, shared2.nranks) {
                    Ok(peer) => reader_loop(shared2, s, peer),
                    Err(e) => tracing::warn!("bootstrap rank {}: refused connection from {from}: {e}", shared2.rank),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(1)),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

impl TcpBootstrap {
    /// Join the job described by `id` as `rank` of `nranks`; rank 0 hosts the rendezvous at `id.addr`.
    pub fn new(rank: usize, nranks: usize, id: &UniqueId, timeout: Duration) -> Result<Self> {
        if nranks == 0 || rank >= nranks {
            return Err(Error::Config(format!("rank {rank} is out of range for {nranks} ranks")));
        }
        let deadline = Instant::now() + timeout;
        // Rank 0 binds the rendezvous first so the others' connects succeed as soon as possible.
        let span = id.port_span.max(1);
        let root = if rank == 0 {
            let mut bound = None;
            let mut last_err = None;
            for k in 0..span {
                let port = id.addr.port().wrapping_add(k);
                let try_addrs =
                    [SocketAddr::new(id.addr.ip(), port), SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port)];
                match TcpListener::bind(&try_addrs[..]) {
                    Ok(l) => {
                        bound = Some(l);
                        break;
                    }
                    Err(e) => last_err = Some(e),
                }
            }
            let l = bound.ok_or_else(|| {
                Error::io(
                    format!(
                        "rank 0 binding the rendezvous at {} (+{} ports): all in use; set MSCCLPP_MASTER_PORT",
                        id.addr,
                        span - 1
                    ),
                    last_err.unwrap_or_else(|| std::io::Error::other("no port tried")),
                )
            })?;
            let secret = id.secret;
            Some(std::thread::spawn(move || run_root(l, secret, nranks, deadline)))
        } else {
            None
        };
        // Connect to the rendezvous first: the local address of that socket is the one peers can reach.
        let mut to_root = connect_rendezvous(id, rank, deadline, timeout)?;
        let local_ip = to_root.local_addr().map_err(|e| Error::io("local_addr", e))?.ip();
        let listener = TcpListener::bind(SocketAddr::new(local_ip, 0))
            .map_err(|e| Error::io(format!("binding {local_ip}:0"), e))?;
        let listen_addr = listener.local_addr().map_err(|e| Error::io("local_addr", e))?;
        write_frame(&mut to_root, 0, listen_addr.to_string().as_bytes())
            .map_err(|e| Error::io("sending our address to the rendezvous", e))?;
        let _ = to_root.set_read_timeout(Some(remaining(deadline) + Duration::from_millis(500)));
        let table = read_frame(&mut to_root);
        if let Some(h) = root {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(Error::BootstrapTimeout { what, missing, .. })) => {
                    return Err(Error::BootstrapTimeout { what, missing, millis: timeout.as_millis() as u64 });
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(Error::Config("the rendezvous thread panicked".into())),
            }
        }
        let (kind, table) = table.map_err(|e| Error::BootstrapTimeout {
            what: format!("waiting for the address table from rank 0 ({e})"),
            missing: vec![0],
            millis: timeout.as_millis() as u64,
        })?;
        let text = String::from_utf8_lossy(&table).into_owned();
        if kind != 0 {
            return Err(Error::BootstrapTimeout {
                what: format!("rank 0 gave up: {text}"),
                missing: parse_missing(&text),
                millis: timeout.as_millis() as u64,
            });
        }
        let peers: Vec<SocketAddr> = text
            .split(',')
            .map(|a| a.parse::<SocketAddr>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| Error::Protocol { peer: 0, reason: "bad address table".into() })?;
        if peers.len() != nranks {
            return Err(Error::Protocol {
                peer: 0,
                reason: format!("address table has {} entries, expected {nranks}", peers.len()),
            });
        }
        let shared = Arc::new(Shared {
            rank,
            nranks,
            secret: id.secret,
            mailbox: Mutex::new(Mailbox::default()),
            arrived: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        let s2 = shared.clone();
        std::thread::Builder::new()
            .name(format!("mscclpp-bootstrap-{rank}"))
            .spawn(move || accept_loop(s2, listener))
            .map_err(|e| Error::io("spawning the bootstrap listener", e))?;
        Ok(TcpBootstrap { shared, peers, out: (0..nranks).map(|_| Mutex::new(None)).collect(), timeout, listen_addr })
    }

    /// Join using the launcher's environment (see [`super::LaunchEnv`]).
    pub fn from_env() -> Result<Self> {
        let env = super::LaunchEnv::detect()?;
        let id = env.unique_id()?;
        Self::new(env.rank, env.world_size, &id, super::default_timeout())
    }

    /// The address peers connect to.
    pub fn listen_addr(&self) -> SocketAddr {
        self.listen_addr
    }

    fn check_peer(&self, peer: usize) -> Result<()> {
        if peer >= self.shared.nranks {
            return Err(Error::InvalidArgument(format!(
                "peer rank {peer} is out of range for {} ranks",
                self.shared.nranks
            )));
        }
        Ok(())
    }
}

/// Connect to the job's rendezvous and pass its handshake, trying the `port_span` candidate ports in turn.
fn connect_rendezvous(id: &UniqueId, rank: usize, deadline: Instant, timeout: Duration) -> Result<TcpStream> {
    let span = id.port_span.max(1);
    let mut refusal: Option<String> = None;
    let mut k: u16 = 0;
    loop {
        let addr = SocketAddr::new(id.addr.ip(), id.addr.port().wrapping_add(k % span));
        if let Ok(mut s) = TcpStream::connect_timeout(&addr, remaining(deadline).min(Duration::from_millis(500))) {
            let _ = s.set_nodelay(true);
            let hs = if span == 1 { remaining(deadline) } else { remaining(deadline).min(Duration::from_secs(2)) };
            match connect_handshake(&mut s, &id.secret, rank, hs) {
                Ok(()) => return Ok(s),
                Err(e) if span == 1 => {
                    return Err(Error::BootstrapRefused { peer: format!("rendezvous {addr}"), reason: e.to_string() });
                }
                Err(e) => refusal = Some(format!("{addr}: {e}")),
            }
        }
        if Instant::now() >= deadline {
            return Err(match refusal {
                Some(reason) => Error::BootstrapRefused { peer: format!("rendezvous {}", id.addr), reason },
                None => Error::BootstrapTimeout {
                    what: format!("connecting to the rendezvous at {} (+{} ports)", id.addr, span - 1),
                    missing: vec![0],
                    millis: timeout.as_millis() as u64,
                },
            });
        }
        k = k.wrapping_add(1);
        if k.is_multiple_of(span) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn parse_missing(text: &str) -> Vec<usize> {
    text.split(|c: char| !c.is_ascii_digit()).filter_map(|t| t.parse().ok()).collect()
}

impl Bootstrap for TcpBootstrap {
    fn rank(&self) -> usize {
        self.shared.rank
    }

    fn size(&self) -> usize {
        self.shared.nranks
    }

    fn send(&self, peer: usize, tag: u64, data: &[u8]) -> Result<()> {
        self.check_peer(peer)?;
        if peer == self.shared.rank {
            let mut mb = self.shared.mailbox.lock().map_err(|_| Error::Config("bootstrap mailbox poisoned".into()))?;
            mb.queues.entry((peer, tag)).or_default().push_back(data.to_vec());
            self.shared.arrived.notify_all();
            return Ok(());
        }
        let mut slot = self.out[peer].lock().map_err(|_| Error::Config("bootstrap connection poisoned".into()))?;
        if slot.is_none() {
            let deadline = Instant::now() + self.timeout;
            let mut s = connect_retry(self.peers[peer], deadline).map_err(|e| Error::BootstrapTimeout {
                what: format!("connecting to rank {peer} at {} ({e})", self.peers[peer]),
                missing: vec![peer],
                millis: self.timeout.as_millis() as u64,
            })?;
            connect_handshake(&mut s, &self.shared.secret, self.shared.rank, self.timeout).map_err(|e| {
                Error::BootstrapRefused { peer: format!("rank {peer} at {}", self.peers[peer]), reason: e.to_string() }
            })?;
            *slot = Some(s);
        }
        let s = slot.as_mut().ok_or_else(|| Error::Config("bootstrap connection missing".into()))?;
        if let Err(e) = write_frame(s, tag, data) {
            *slot = None;
            return Err(Error::BootstrapRefused {
                peer: format!("rank {peer}"),
                reason: format!("sending failed: {e}"),
            });
        }
        Ok(())
    }

    fn recv(&self, peer: usize, tag: u64) -> Result<Vec<u8>> {
        self.check_peer(peer)?;
        let deadline = Instant::now() + self.timeout;
        let mut mb = self.shared.mailbox.lock().map_err(|_| Error::Config("bootstrap mailbox poisoned".into()))?;
        loop {
            if let Some(m) = mb.queues.get_mut(&(peer, tag)).and_then(|q| q.pop_front()) {
                return Ok(m);
            }
            if let Some(why) = mb.broken.get(&peer) {
                return Err(Error::BootstrapRefused {
                    peer: format!("rank {peer}"),
                    reason: format!("its connection closed ({why}) before it sent tag {tag}; did it exit early?"),
                });
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::BootstrapTimeout {
                    what: format!("rank {} waiting for tag {tag} from rank {peer}", self.shared.rank),
                    missing: vec![peer],
                    millis: self.timeout.as_millis() as u64,
                });
            }
            mb = self
                .shared
                .arrived
                .wait_timeout(mb, deadline - now)
                .map_err(|_| Error::Config("bootstrap mailbox poisoned".into()))?
                .0;
        }
    }

    fn try_recv(&self, peer: usize, tag: u64) -> Result<Option<Vec<u8>>> {
        self.check_peer(peer)?;
        let mut mb = self.shared.mailbox.lock().map_err(|_| Error::Config("bootstrap mailbox poisoned".into()))?;
        Ok(mb.queues.get_mut(&(peer, tag)).and_then(|q| q.pop_front()))
    }
}

impl Drop for TcpBootstrap {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}
