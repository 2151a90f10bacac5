//! A device wait that expired, as the host reports it: which wait, where, and for how long.

/// Which device wait expired (`mscclpp::WaitKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceWaitKind {
    /// `MemoryChannel::wait` (or a memory semaphore wait).
    MemoryChannel,
    /// `PortChannel::wait`.
    PortChannel,
    /// `PortChannel::flush` / `putWithSignalAndFlush`.
    PortChannelFlush,
    /// FIFO push while the FIFO was full (the proxy is not draining it).
    FifoPush,
    /// Waiting for an LL packet.
    Packet,
    /// `DeviceSyncer::sync`.
    DeviceSyncer,
    /// Switch channel barrier.
    SwitchChannel,
    /// `DeviceSemaphore::acquire`.
    DeviceSemaphore,
    /// A user-defined wait.
    User,
    /// Unknown code.
    Unknown(u32),
}

impl DeviceWaitKind {
    /// From the code in a [`DeviceErrorRecord`].
    pub fn from_code(code: u32) -> Self {
        match code {
            1 => Self::MemoryChannel,
            2 => Self::PortChannel,
            3 => Self::PortChannelFlush,
            4 => Self::FifoPush,
            5 => Self::Packet,
            6 => Self::DeviceSyncer,
            7 => Self::SwitchChannel,
            8 => Self::DeviceSemaphore,
            9 => Self::User,
            c => Self::Unknown(c),
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::MemoryChannel => "wait() on memory channel".into(),
            Self::PortChannel => "wait() on port channel".into(),
            Self::PortChannelFlush => "flush() on port channel".into(),
            Self::FifoPush => "push into the full proxy FIFO of port channel".into(),
            Self::Packet => "LL packet read".into(),
            Self::DeviceSyncer => "DeviceSyncer::sync".into(),
            Self::SwitchChannel => "wait() on switch channel".into(),
            Self::DeviceSemaphore => "DeviceSemaphore::acquire".into(),
            Self::User => "user wait".into(),
            Self::Unknown(c) => format!("wait of unknown kind {c}"),
        }
    }
}

/// A device wait that expired, as reported to the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceWaitReport {
    /// What kind of wait.
    pub kind: DeviceWaitKind,
    /// The rank whose kernel stopped.
    pub rank: u32,
    /// Thread block.
    pub block: u32,
    /// Thread within the block.
    pub thread: u32,
    /// Channel id, if any.
    pub channel: Option<u32>,
    /// Peer rank, if any.
    pub peer: Option<u32>,
    /// Value waited for.
    pub expected: u64,
    /// Value last seen.
    pub observed: u64,
    /// Milliseconds waited.
    pub elapsed_ms: u64,
    /// The plan interpreter's operation (flattened index) the block was at, when the kernel was the interpreter.
    pub op: Option<u32>,
}

impl std::fmt::Display for DeviceWaitReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rank {}: {}", self.rank, self.kind.describe())?;
        match (self.channel, matches!(self.kind, DeviceWaitKind::Packet)) {
            (Some(c), true) => write!(f, " on channel {c}")?,
            (Some(c), false) => write!(f, " {c}")?,
            // The interpreter reads packets in its scratch buffer, not through a channel of its own.
            (None, true) => write!(f, " in scratch")?,
            (None, false) => {}
        }
        if let Some(p) = self.peer {
            write!(f, " (peer rank {p})")?;
        }
        write!(
            f,
            " in thread block {} (thread {}) waited {} ms for value {} but saw {}; the kernel was stopped. \
             The peer never signalled: check that both sides run matching signal/wait sequences, or raise \
             MSCCLPP_WAIT_TIMEOUT_MS",
            self.block, self.thread, self.elapsed_ms, self.expected, self.observed
        )
    }
}
