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
    /// Not a wait: a plan-specialised interpreter program met a thread block whose records it was not made for
    /// (`expected`: the program's variant count; `observed`: the block's variant in the high half and its
    /// operation count in the low half).
    ProgramMismatch,
    /// Unknown code.
    Unknown(u32),
}

impl DeviceWaitKind {
    /// From the code in a [`DeviceErrorRecord`](crate::handles::DeviceErrorRecord).
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
            10 => Self::ProgramMismatch,
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
            Self::ProgramMismatch => "plan-specialised interpreter program".into(),
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
        if self.kind == DeviceWaitKind::ProgramMismatch {
            return write!(
                f,
                "rank {}: thread block {} ran a plan-specialised interpreter program made for other records (the \
                 program has {} variants; the block is variant {} with {} operations); the kernel was stopped. \
                 Run with MSCCLPP_FIXED_KERNELS=off and report the plan",
                self.rank,
                self.block,
                self.expected,
                self.observed >> 32,
                self.observed & 0xffff_ffff
            );
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn report(kind: DeviceWaitKind, observed: u64) -> DeviceWaitReport {
        DeviceWaitReport {
            kind,
            rank: 1,
            block: 7,
            thread: 0,
            channel: None,
            peer: None,
            expected: 2,
            observed,
            elapsed_ms: 0,
            op: None,
        }
    }

    #[test]
    fn a_program_mismatch_names_the_block_its_variant_and_what_to_do() {
        assert_eq!(DeviceWaitKind::from_code(10), DeviceWaitKind::ProgramMismatch);
        let text = report(DeviceWaitKind::ProgramMismatch, (3u64 << 32) | 9).to_string();
        assert!(text.contains("thread block 7"), "{text}");
        assert!(text.contains("2 variants") && text.contains("variant 3 with 9 operations"), "{text}");
        assert!(text.contains("MSCCLPP_FIXED_KERNELS=off"), "{text}");
        // A wait keeps the wait's wording.
        let wait = report(DeviceWaitKind::Packet, 0).to_string();
        assert!(wait.contains("LL packet read") && wait.contains("never signalled"), "{wait}");
    }
}
