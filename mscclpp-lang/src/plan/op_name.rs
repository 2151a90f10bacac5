//! Operation names of the plan schema and the facts about each operation that lowering, validation and the
//! verifier share: whether it reduces, puts to a peer, synchronises, which of its references hold LL packets,
//! whether it honours the pipeline offset.

use serde::{Deserialize, Serialize};

use super::channel_type::ChannelType;

/// Operation names of the MSCCL++ plan format, plus the DSL's standalone `glre`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OpName {
    /// `__syncthreads()`.
    #[serde(rename = "nop")]
    Nop,
    /// Grid-partial barrier across thread blocks.
    #[serde(rename = "barrier")]
    Barrier,
    /// Copy local data to remote buffers.
    #[serde(rename = "put")]
    Put,
    /// Local data to remote scratch packets.
    #[serde(rename = "ppkt")]
    PutPackets,
    /// Local scratch packets re-sent to remote scratch.
    #[serde(rename = "rppkt")]
    ReadPutPackets,
    /// Port put + signal.
    #[serde(rename = "pws")]
    PutWithSignal,
    /// Port put + signal + flush.
    #[serde(rename = "pwsf")]
    PutWithSignalAndFlush,
    /// Copy remote data to local buffers.
    #[serde(rename = "get")]
    Get,
    /// Local copy.
    #[serde(rename = "copy")]
    Copy,
    /// Local data to local scratch packets.
    #[serde(rename = "cpkt")]
    CopyPackets,
    /// Local scratch packets to local data.
    #[serde(rename = "upkt")]
    UnpackPackets,
    /// Signal peers.
    #[serde(rename = "signal")]
    Signal,
    /// Wait for peers.
    #[serde(rename = "wait")]
    Wait,
    /// Wait for the proxy to complete posted transfers.
    #[serde(rename = "flush")]
    Flush,
    /// Local reduction.
    #[serde(rename = "re")]
    Reduce,
    /// Reduction of local data and local packets.
    #[serde(rename = "repkt")]
    ReducePackets,
    /// `repkt` that also writes packets locally.
    #[serde(rename = "recpkt")]
    ReduceCopyPackets,
    /// Local reduction, result also sent to remote buffers.
    #[serde(rename = "res")]
    ReduceSend,
    /// `repkt`, result also sent as packets.
    #[serde(rename = "respkt")]
    ReduceSendPackets,
    /// `recpkt`, result also sent as packets.
    #[serde(rename = "recspkt")]
    ReduceCopySendPackets,
    /// Reduction reading remote sources.
    #[serde(rename = "rre")]
    ReadReduce,
    /// `rre`, result also sent to remote buffers.
    #[serde(rename = "rres")]
    ReadReduceSend,
    /// Multicast load-reduce then multicast store.
    #[serde(rename = "glres")]
    MultiLoadReduceStore,
    /// DSL-only standalone multicast load-reduce (not loadable by the reference executor).
    #[serde(rename = "glre")]
    MultiLoadReduce,
    /// Relaxed signal.
    #[serde(rename = "rlxsignal")]
    RelaxedSignal,
    /// Relaxed wait.
    #[serde(rename = "rlxwait")]
    RelaxedWait,
    /// A loop over its inner operations.
    #[serde(rename = "pipeline")]
    Pipeline,
    /// Release device semaphores.
    #[serde(rename = "sem_release")]
    SemRelease,
    /// Acquire device semaphores.
    #[serde(rename = "sem_acquire")]
    SemAcquire,
    /// Multicast store of local data.
    #[serde(rename = "gstore")]
    MultiStore,
    /// Multicast store of local packets.
    #[serde(rename = "gstorepkt")]
    MultiStorePackets,
}

impl OpName {
    /// Every operation name of the schema.
    pub const ALL: [OpName; 31] = [
        OpName::Nop,
        OpName::Barrier,
        OpName::Put,
        OpName::PutPackets,
        OpName::ReadPutPackets,
        OpName::PutWithSignal,
        OpName::PutWithSignalAndFlush,
        OpName::Get,
        OpName::Copy,
        OpName::CopyPackets,
        OpName::UnpackPackets,
        OpName::Signal,
        OpName::Wait,
        OpName::Flush,
        OpName::Reduce,
        OpName::ReducePackets,
        OpName::ReduceCopyPackets,
        OpName::ReduceSend,
        OpName::ReduceSendPackets,
        OpName::ReduceCopySendPackets,
        OpName::ReadReduce,
        OpName::ReadReduceSend,
        OpName::MultiLoadReduceStore,
        OpName::MultiLoadReduce,
        OpName::RelaxedSignal,
        OpName::RelaxedWait,
        OpName::Pipeline,
        OpName::SemRelease,
        OpName::SemAcquire,
        OpName::MultiStore,
        OpName::MultiStorePackets,
    ];

    /// The JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            OpName::Nop => "nop",
            OpName::Barrier => "barrier",
            OpName::Put => "put",
            OpName::PutPackets => "ppkt",
            OpName::ReadPutPackets => "rppkt",
            OpName::PutWithSignal => "pws",
            OpName::PutWithSignalAndFlush => "pwsf",
            OpName::Get => "get",
            OpName::Copy => "copy",
            OpName::CopyPackets => "cpkt",
            OpName::UnpackPackets => "upkt",
            OpName::Signal => "signal",
            OpName::Wait => "wait",
            OpName::Flush => "flush",
            OpName::Reduce => "re",
            OpName::ReducePackets => "repkt",
            OpName::ReduceCopyPackets => "recpkt",
            OpName::ReduceSend => "res",
            OpName::ReduceSendPackets => "respkt",
            OpName::ReduceCopySendPackets => "recspkt",
            OpName::ReadReduce => "rre",
            OpName::ReadReduceSend => "rres",
            OpName::MultiLoadReduceStore => "glres",
            OpName::MultiLoadReduce => "glre",
            OpName::RelaxedSignal => "rlxsignal",
            OpName::RelaxedWait => "rlxwait",
            OpName::Pipeline => "pipeline",
            OpName::SemRelease => "sem_release",
            OpName::SemAcquire => "sem_acquire",
            OpName::MultiStore => "gstore",
            OpName::MultiStorePackets => "gstorepkt",
        }
    }

    /// Numeric `OperationType` of the reference executor (`glre` has none; it gets 30).
    pub fn code(self) -> u8 {
        match self {
            OpName::Nop => 0,
            OpName::Barrier => 1,
            OpName::Put => 2,
            OpName::PutPackets => 3,
            OpName::ReadPutPackets => 4,
            OpName::PutWithSignal => 5,
            OpName::PutWithSignalAndFlush => 6,
            OpName::Get => 7,
            OpName::Copy => 8,
            OpName::CopyPackets => 9,
            OpName::UnpackPackets => 10,
            OpName::Signal => 11,
            OpName::Wait => 12,
            OpName::Flush => 13,
            OpName::Reduce => 14,
            OpName::ReducePackets => 15,
            OpName::ReduceCopyPackets => 16,
            OpName::ReduceSend => 17,
            OpName::ReduceSendPackets => 18,
            OpName::ReduceCopySendPackets => 19,
            OpName::ReadReduce => 20,
            OpName::ReadReduceSend => 21,
            OpName::MultiLoadReduceStore => 22,
            OpName::RelaxedSignal => 23,
            OpName::RelaxedWait => 24,
            OpName::Pipeline => 25,
            OpName::SemRelease => 26,
            OpName::SemAcquire => 27,
            OpName::MultiStore => 28,
            OpName::MultiStorePackets => 29,
            OpName::MultiLoadReduce => 30,
        }
    }

    /// Signals, waits, flushes and semaphore operations.
    pub fn is_sync(self) -> bool {
        matches!(
            self,
            OpName::Signal
                | OpName::Wait
                | OpName::RelaxedSignal
                | OpName::RelaxedWait
                | OpName::Flush
                | OpName::SemAcquire
                | OpName::SemRelease
        )
    }

    /// Operations whose inputs or outputs include LL packets.
    pub fn uses_packets(self) -> bool {
        self.reads_packets() || self.writes_packets()
    }

    /// Whether reference `i` of the operation's sources (`source`) or destinations holds packets. `port`: the
    /// operation goes through a port channel, where a `put_packets` copies packets raw (its sources hold packets
    /// too).
    pub fn holds_packets(self, port: bool, source: bool, i: usize) -> bool {
        use OpName::*;
        match self {
            PutPackets => port || !source,
            ReadPutPackets | MultiStorePackets => true,
            CopyPackets => !source,
            UnpackPackets => source,
            ReducePackets => source && i >= 1,
            ReduceSendPackets | ReduceCopySendPackets => i >= 1,
            ReduceCopyPackets => i >= 1 && (source || i == 1),
            _ => false,
        }
    }

    /// Operations that read or write packets.
    pub fn moves_packets(self) -> bool {
        (0..2).any(|i| self.holds_packets(false, true, i) || self.holds_packets(false, false, i))
    }

    /// Operations that reduce their sources with the plan's `reduce_op`.
    pub fn is_reduction(self) -> bool {
        matches!(
            self,
            OpName::Reduce
                | OpName::ReduceSend
                | OpName::ReadReduce
                | OpName::ReadReduceSend
                | OpName::ReducePackets
                | OpName::ReduceSendPackets
                | OpName::ReduceCopyPackets
                | OpName::ReduceCopySendPackets
                | OpName::MultiLoadReduceStore
                | OpName::MultiLoadReduce
        )
    }

    /// Puts: local sources written to peers' buffers through a memory or port channel (over a port channel each
    /// destination is a trigger for the proxy).
    pub fn is_put(self) -> bool {
        matches!(
            self,
            OpName::Put
                | OpName::PutPackets
                | OpName::ReadPutPackets
                | OpName::PutWithSignal
                | OpName::PutWithSignalAndFlush
        )
    }

    /// Port puts that also signal the peer (`pws`, `pwsf`): they count as signals when signals and waits pair up.
    pub fn is_put_with_signal(self) -> bool {
        matches!(self, OpName::PutWithSignal | OpName::PutWithSignalAndFlush)
    }

    /// Operations that read LL packets (and wait for their flags): see [`OpName::packet_sources`].
    pub fn reads_packets(self) -> bool {
        matches!(
            self,
            OpName::UnpackPackets
                | OpName::ReadPutPackets
                | OpName::MultiStorePackets
                | OpName::ReducePackets
                | OpName::ReduceSendPackets
                | OpName::ReduceCopyPackets
                | OpName::ReduceCopySendPackets
        )
    }

    /// Operations that write LL packets: see [`OpName::packet_destinations`].
    pub fn writes_packets(self) -> bool {
        matches!(
            self,
            OpName::PutPackets
                | OpName::ReadPutPackets
                | OpName::CopyPackets
                | OpName::MultiStorePackets
                | OpName::ReduceSendPackets
                | OpName::ReduceCopyPackets
                | OpName::ReduceCopySendPackets
        )
    }

    /// Positions of the source references that hold LL packets, for an operation with `srcs` sources: the one
    /// source of packet copies, every source but the first (plain data) of packet reductions.
    pub fn packet_sources(self, srcs: usize) -> std::ops::Range<usize> {
        match self {
            OpName::UnpackPackets | OpName::ReadPutPackets | OpName::MultiStorePackets => 0..srcs.min(1),
            OpName::ReducePackets
            | OpName::ReduceSendPackets
            | OpName::ReduceCopyPackets
            | OpName::ReduceCopySendPackets => srcs.min(1)..srcs,
            _ => 0..0,
        }
    }

    /// Positions of the destination references written as LL packets, for an operation with `dsts`
    /// destinations: every destination of packet puts and copies, every destination but the first (the plain
    /// result) of sending packet reductions, the second (the packet copy) of `recpkt`.
    pub fn packet_destinations(self, dsts: usize) -> std::ops::Range<usize> {
        match self {
            OpName::PutPackets | OpName::ReadPutPackets | OpName::CopyPackets | OpName::MultiStorePackets => 0..dsts,
            OpName::ReduceSendPackets | OpName::ReduceCopySendPackets => dsts.min(1)..dsts,
            OpName::ReduceCopyPackets => dsts.min(1)..dsts.min(2),
            _ => 0..0,
        }
    }

    /// Operations whose plain sources (those not in [`OpName::packet_sources`]) may be local buffers of the
    /// executing rank: copies, puts, stores and reductions. `get` reads peers, switch loads read through the
    /// switch, and packet copies read only packets.
    pub fn reads_local_sources(self) -> bool {
        matches!(
            self,
            OpName::Copy
                | OpName::CopyPackets
                | OpName::Put
                | OpName::PutPackets
                | OpName::PutWithSignal
                | OpName::PutWithSignalAndFlush
                | OpName::MultiStore
                | OpName::Reduce
                | OpName::ReduceSend
                | OpName::ReadReduce
                | OpName::ReadReduceSend
                | OpName::ReducePackets
                | OpName::ReduceSendPackets
                | OpName::ReduceCopyPackets
                | OpName::ReduceCopySendPackets
        )
    }

    /// Operations whose first destination receives a plain (not packet) result in a buffer of the executing
    /// rank: local copies, unpacking, `get` and every reduction but the switch ones.
    pub fn writes_local_result(self) -> bool {
        matches!(
            self,
            OpName::Copy
                | OpName::UnpackPackets
                | OpName::Get
                | OpName::Reduce
                | OpName::ReduceSend
                | OpName::ReadReduce
                | OpName::ReadReduceSend
                | OpName::ReducePackets
                | OpName::ReduceSendPackets
                | OpName::ReduceCopyPackets
                | OpName::ReduceCopySendPackets
        )
    }

    /// Operations whose references move to the current iteration's slice inside a `pipeline` (shifted by
    /// `i * unit_size`, clamped to `unit_size`); the others act on their whole range in every iteration.
    pub fn honours_pipeline_offset(self) -> bool {
        matches!(
            self,
            OpName::Copy
                | OpName::Put
                | OpName::PutWithSignal
                | OpName::PutWithSignalAndFlush
                | OpName::Get
                | OpName::Reduce
                | OpName::ReduceSend
                | OpName::ReadReduce
                | OpName::ReadReduceSend
                | OpName::MultiLoadReduceStore
                | OpName::MultiLoadReduce
                | OpName::MultiStore
        )
    }

    /// Whether the plan entry of this operation carries `channel_ids` (over a channel of type `channel_type`):
    /// channel synchronisation, `get`, signalling puts and `glre` always, the other puts over port channels.
    pub fn carries_channel_ids(self, channel_type: Option<ChannelType>) -> bool {
        match self {
            OpName::Signal
            | OpName::Wait
            | OpName::RelaxedSignal
            | OpName::RelaxedWait
            | OpName::Flush
            | OpName::Get
            | OpName::PutWithSignal
            | OpName::PutWithSignalAndFlush
            | OpName::MultiLoadReduce => true,
            OpName::Put | OpName::ReadPutPackets | OpName::PutPackets => channel_type == Some(ChannelType::Port),
            _ => false,
        }
    }
}

impl std::fmt::Display for OpName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::OpName;

    #[test]
    fn packet_facts_agree() {
        assert!(!OpName::ALL.is_empty());
        for name in OpName::ALL {
            assert_eq!(name.reads_packets(), !name.packet_sources(3).is_empty(), "{name}");
            assert_eq!(name.writes_packets(), !name.packet_destinations(3).is_empty(), "{name}");
            assert!(!name.is_put_with_signal() || name.is_put(), "{name}");
            assert!(!(name.is_sync() && name.uses_packets()), "{name}");
        }
        assert_eq!(OpName::ReduceCopySendPackets.packet_sources(3), 1..3);
        assert_eq!(OpName::UnpackPackets.packet_sources(3), 0..1);
        assert_eq!(OpName::ReduceSendPackets.packet_destinations(3), 1..3);
        assert_eq!(OpName::PutPackets.packet_destinations(3), 0..3);
        assert_eq!(OpName::ReduceCopyPackets.packet_destinations(3), 1..2);
    }
}
