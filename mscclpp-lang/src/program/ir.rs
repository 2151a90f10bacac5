//! The recorded program: per rank and thread block, the operations in program order, before lowering.

use std::collections::BTreeMap;

use super::sync_type::SyncType;
use crate::plan::{BufferType, ChannelType, Operation};

/// An eDSL call that recorded an operation: the call's name and the program source line that made it.
pub(crate) type Site = (&'static str, super::line::Line);

/// One recorded operation: the plan operation it becomes (with thread-block-local channel and buffer ids already
/// resolved), plus what the lowering needs to know about it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IrOp {
    /// The operation as it will be emitted (before fusion).
    pub op: Operation,
    /// Where `nop`s go around a synchronisation operation.
    pub sync: SyncType,
    /// The pipeline this operation was recorded in, if any.
    pub pipeline: Option<usize>,
    /// For a pipeline: its inner operations.
    pub inner: Vec<IrOp>,
    /// The eDSL method that recorded it (for errors).
    pub origin: &'static str,
    /// The calls that recorded it, in program order: one, several after fusion, none for an operation the
    /// lowering inserted (a data-sync `nop`).
    pub sites: Vec<Site>,
}

impl IrOp {
    /// An operation; [`State::record`](super::builder::State::record) adds the call site.
    pub(crate) fn new(op: Operation, origin: &'static str) -> Self {
        IrOp { op, sync: SyncType::None, pipeline: None, inner: Vec::new(), origin, sites: Vec::new() }
    }
}

/// A thread block of one rank.
#[derive(Debug, Clone, Default)]
pub(crate) struct TbState {
    pub ops: Vec<IrOp>,
    /// Rank-level channel ids per type, in thread-block-local order; types in order of first use.
    pub channels: Vec<(ChannelType, Vec<u32>)>,
    /// Rank-level remote-buffer ids per access type, in thread-block-local order; types in order of first use.
    pub remote_refs: Vec<(ChannelType, Vec<u32>)>,
}

impl TbState {
    /// Thread-block-local index of a rank-level channel, registering it on first use.
    pub(crate) fn channel(&mut self, kind: ChannelType, id: u32) -> u32 {
        let list = match self.channels.iter().position(|(k, _)| *k == kind) {
            Some(p) => &mut self.channels[p].1,
            None => {
                self.channels.push((kind, Vec::new()));
                let last = self.channels.len() - 1;
                &mut self.channels[last].1
            }
        };
        match list.iter().position(|&c| c == id) {
            Some(p) => p as u32,
            None => {
                list.push(id);
                (list.len() - 1) as u32
            }
        }
    }
    /// Thread-block-local index of a rank-level remote buffer accessed through `kind`, registering it on first use.
    pub(crate) fn remote(&mut self, kind: ChannelType, id: u32) -> u32 {
        let list = match self.remote_refs.iter().position(|(k, _)| *k == kind) {
            Some(p) => &mut self.remote_refs[p].1,
            None => {
                self.remote_refs.push((kind, Vec::new()));
                let last = self.remote_refs.len() - 1;
                &mut self.remote_refs[last].1
            }
        };
        match list.iter().position(|&c| c == id) {
            Some(p) => p as u32,
            None => {
                list.push(id);
                (list.len() - 1) as u32
            }
        }
    }
}

/// A switch channel as one member rank declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SwitchDecl {
    pub buffer: BufferType,
    pub ranks: Vec<usize>,
}

/// A remote buffer a rank accesses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RemoteDecl {
    pub owner: usize,
    pub buffer: BufferType,
    pub access: Vec<ChannelType>,
}

/// Everything one rank declares.
#[derive(Debug, Clone, Default)]
pub(crate) struct RankState {
    /// Memory/port channel declarations: type, then peers in channel-id order; types in order of first creation.
    pub peers: Vec<(ChannelType, Vec<usize>)>,
    pub switches: Vec<SwitchDecl>,
    pub remote_buffers: Vec<RemoteDecl>,
    pub semaphores: Vec<i64>,
    /// Scratch chunks allocated so far.
    pub scratch: usize,
    pub tbs: BTreeMap<usize, TbState>,
    /// Barrier ids by thread-block set.
    pub barriers: Vec<Vec<usize>>,
}

impl RankState {
    /// Declares one more channel of `kind` to `peer` and returns its rank-level id.
    pub(crate) fn add_peer(&mut self, kind: ChannelType, peer: usize) -> u32 {
        let list = match self.peers.iter().position(|(k, _)| *k == kind) {
            Some(p) => &mut self.peers[p].1,
            None => {
                self.peers.push((kind, Vec::new()));
                let last = self.peers.len() - 1;
                &mut self.peers[last].1
            }
        };
        list.push(peer);
        (list.len() - 1) as u32
    }
    /// Rank-level id of the remote buffer `(owner, buffer)`, adding `access` to its access types.
    pub(crate) fn remote_buffer(&mut self, owner: usize, buffer: BufferType, access: ChannelType) -> u32 {
        if let Some(p) = self.remote_buffers.iter().position(|r| r.owner == owner && r.buffer == buffer) {
            if !self.remote_buffers[p].access.contains(&access) {
                self.remote_buffers[p].access.push(access);
            }
            return p as u32;
        }
        self.remote_buffers.push(RemoteDecl { owner, buffer, access: vec![access] });
        (self.remote_buffers.len() - 1) as u32
    }
    pub(crate) fn tb(&mut self, tb: usize) -> &mut TbState {
        self.tbs.entry(tb).or_default()
    }
}
