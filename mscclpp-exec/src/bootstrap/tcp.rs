//! TCP bootstrap. Rank 0 runs a rendezvous at the job's address; every rank also listens for direct peer
//! connections. Every accepted connection must prove that it belongs to the job (a MAC over a fresh nonce,
//! keyed with the job secret); anything else is refused and logged.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::Bootstrap;
use super::wire::{self, MAX_ADDRESS_FRAME, MAX_FRAME, NONCE_LEN};
use crate::error::{Error, Result};

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

/// Bound of one inbound handshake, start to finish (a slow client is dropped when it runs out).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Most inbound handshakes in progress at once per listener; further connections are closed at once.
pub const MAX_PENDING_HANDSHAKES: usize = 256;

fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1))
}

/// A socket whose reads and writes all end by one deadline (a per-call timeout alone lets a client that sends
/// one byte at a time hold a handshake open for ever).
struct Deadlined<'a> {
    s: &'a mut TcpStream,
    deadline: Instant,
}

impl Deadlined<'_> {
    fn arm(&mut self) -> std::io::Result<()> {
        if Instant::now() >= self.deadline {
            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "the handshake ran past its deadline"));
        }
        self.s.set_read_timeout(Some(remaining(self.deadline)))?;
        self.s.set_write_timeout(Some(remaining(self.deadline)))
    }
}

impl Read for Deadlined<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.arm()?;
        self.s.read(buf)
    }
}

impl Write for Deadlined<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.arm()?;
        self.s.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.s.flush()
    }
}

fn write_frame(s: &mut TcpStream, tag: u64, data: &[u8]) -> std::io::Result<()> {
    wire::write_frame(s, tag, data)
}

fn nonce() -> std::io::Result<[u8; NONCE_LEN]> {
    let mut n = [0u8; NONCE_LEN];
    random_bytes(&mut n).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(n)
}

/// Server side of the handshake, bounded by [`HANDSHAKE_TIMEOUT`]. Returns the claimed (and proven) rank.
fn accept_handshake(s: &mut TcpStream, secret: &[u8; 32], nranks: usize) -> std::io::Result<usize> {
    let n = nonce()?;
    let rank =
        wire::accept_handshake(&mut Deadlined { s, deadline: Instant::now() + HANDSHAKE_TIMEOUT }, secret, nranks, &n)?;
    s.set_read_timeout(None)?;
    s.set_write_timeout(None)?;
    Ok(rank)
}

/// Client side of the handshake.
fn connect_handshake(s: &mut TcpStream, secret: &[u8; 32], rank: usize, timeout: Duration) -> std::io::Result<()> {
    let n = nonce()?;
    wire::connect_handshake(&mut Deadlined { s, deadline: Instant::now() + timeout }, secret, rank, &n)?;
    s.set_read_timeout(None)?;
    s.set_write_timeout(None)?;
    Ok(())
}

/// Counts the inbound handshakes in progress; a slot is taken per connection and given back when it ends.
struct Pending(Arc<AtomicUsize>);

impl Pending {
    fn take(count: &Arc<AtomicUsize>) -> Option<Pending> {
        let prev = count.fetch_add(1, Ordering::AcqRel);
        if prev >= MAX_PENDING_HANDSHAKES {
            count.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Pending(count.clone()))
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
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

/// One rank that passed the rendezvous handshake: its connection and listening address.
type Arrival = (usize, TcpStream, SocketAddr);

/// Handshake and address of one connection to the rendezvous, in its own thread (a slow or silent client holds
/// only its own thread, never the rendezvous).
fn root_admit(mut s: TcpStream, from: SocketAddr, secret: [u8; 32], nranks: usize) -> Option<Arrival> {
    let _ = s.set_nonblocking(false);
    let _ = s.set_nodelay(true);
    let rank = match accept_handshake(&mut s, &secret, nranks) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!("bootstrap root: refused connection from {from}: {e}");
            return None;
        }
    };
    let frame =
        wire::read_frame(&mut Deadlined { s: &mut s, deadline: Instant::now() + HANDSHAKE_TIMEOUT }, MAX_ADDRESS_FRAME);
    let _ = s.set_read_timeout(None);
    let _ = s.set_write_timeout(None);
    match frame.map_err(|e| e.to_string()).and_then(|(_, a)| wire::parse_address(&a).map_err(|e| e.to_string())) {
        Ok(addr) => Some((rank, s, addr)),
        Err(e) => {
            tracing::warn!("bootstrap root: rank {rank} at {from} sent no usable address ({e}); refused");
            None
        }
    }
}

/// The rendezvous run by rank 0: collect every rank's peer address, then send the table to all.
fn run_root(listener: TcpListener, secret: [u8; 32], nranks: usize, deadline: Instant) -> Result<()> {
    listener.set_nonblocking(true).map_err(|e| Error::io("root listener", e))?;
    let mut conns: Vec<Option<(TcpStream, SocketAddr)>> = (0..nranks).map(|_| None).collect();
    let mut count = 0;
    let pending = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = std::sync::mpsc::channel::<Arrival>();
    while count < nranks {
        while let Ok((rank, s, a)) = rx.try_recv() {
            if conns[rank].is_none() {
                conns[rank] = Some((s, a));
                count += 1;
            } else {
                tracing::warn!("bootstrap root: rank {rank} arrived twice (from {a}); the second is refused");
            }
        }
        if count == nranks {
            break;
        }
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
            Ok((s, from)) => {
                let Some(slot) = Pending::take(&pending) else {
                    tracing::warn!("bootstrap root: {MAX_PENDING_HANDSHAKES} handshakes in progress; dropped {from}");
                    continue;
                };
                let tx = tx.clone();
                let spawned = std::thread::Builder::new().name("mscclpp-bootstrap-admit".into()).spawn(move || {
                    let _slot = slot;
                    if let Some(arrival) = root_admit(s, from, secret, nranks) {
                        let _ = tx.send(arrival);
                    }
                });
                if let Err(e) = spawned {
                    tracing::warn!("bootstrap root: no thread for {from} ({e}); dropped");
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
        match wire::read_frame(&mut s, MAX_FRAME) {
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
    let pending = Arc::new(AtomicUsize::new(0));
    while !shared.stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((mut s, from)) => {
                let Some(slot) = Pending::take(&pending) else {
                    tracing::warn!(
                        "bootstrap rank {}: {MAX_PENDING_HANDSHAKES} handshakes in progress; dropped {from}",
                        shared.rank
                    );
                    continue;
                };
                let _ = s.set_nonblocking(false);
                let _ = s.set_nodelay(true);
                let shared2 = shared.clone();
                let spawned = std::thread::Builder::new().name("mscclpp-bootstrap-peer".into()).spawn(move || {
                    let handshake = accept_handshake(&mut s, &shared2.secret, shared2.nranks);
                    drop(slot);
                    match handshake {
                        Ok(peer) => reader_loop(shared2, s, peer),
                        Err(e) => {
                            tracing::warn!("bootstrap rank {}: refused connection from {from}: {e}", shared2.rank)
                        }
                    }
                });
                if let Err(e) = spawned {
                    tracing::warn!("bootstrap rank {}: no thread for {from} ({e}); dropped", shared.rank);
                }
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
                match bind_rendezvous(SocketAddr::new(id.addr.ip(), port)) {
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
        let table = wire::read_frame(&mut to_root, wire::max_table_frame(nranks));
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
        let peers = wire::parse_address_table(&table, nranks)
            .map_err(|e| Error::Protocol { peer: 0, reason: e.to_string() })?;
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

/// Bind the rendezvous on exactly `addr`'s interface. Only when that address is not one of this host's (e.g. a
/// name that resolves to a NAT address) does it fall back to every interface, with a warning: the handshake
/// still admits only holders of the job secret.
fn bind_rendezvous(addr: SocketAddr) -> std::io::Result<TcpListener> {
    match TcpListener::bind(addr) {
        Err(e) if e.kind() == std::io::ErrorKind::AddrNotAvailable => {
            let any = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), addr.port());
            tracing::warn!("bootstrap: {addr} is not an address of this host; the rendezvous listens on {any}");
            TcpListener::bind(any)
        }
        other => other,
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
            let mut mb = self.shared.mailbox.lock().map_err(|_| Error::Poisoned { what: "the bootstrap mailbox" })?;
            mb.queues.entry((peer, tag)).or_default().push_back(data.to_vec());
            self.shared.arrived.notify_all();
            return Ok(());
        }
        let mut slot = self.out[peer].lock().map_err(|_| Error::Poisoned { what: "a bootstrap connection" })?;
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
            return Err(Error::PeerLeft { peer, what: format!("sending tag {tag} to it failed ({e})") });
        }
        Ok(())
    }

    fn recv(&self, peer: usize, tag: u64) -> Result<Vec<u8>> {
        self.check_peer(peer)?;
        let deadline = Instant::now() + self.timeout;
        let mut mb = self.shared.mailbox.lock().map_err(|_| Error::Poisoned { what: "the bootstrap mailbox" })?;
        loop {
            if let Some(m) = mb.queues.get_mut(&(peer, tag)).and_then(|q| q.pop_front()) {
                return Ok(m);
            }
            if let Some(why) = mb.broken.get(&peer) {
                return Err(Error::PeerLeft {
                    peer,
                    what: format!("its connection closed ({why}) before it sent tag {tag}"),
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
                .map_err(|_| Error::Poisoned { what: "the bootstrap mailbox" })?
                .0;
        }
    }

    fn try_recv(&self, peer: usize, tag: u64) -> Result<Option<Vec<u8>>> {
        self.check_peer(peer)?;
        let mut mb = self.shared.mailbox.lock().map_err(|_| Error::Poisoned { what: "the bootstrap mailbox" })?;
        Ok(mb.queues.get_mut(&(peer, tag)).and_then(|q| q.pop_front()))
    }
}

impl Drop for TcpBootstrap {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}
