//! The conversion of one rank's part of a plan into the plan interpreter's device records (mirrored in
//! [`mscclpp_sys::device_plan`]) and their layout in one upload.
//!
//! Every byte offset and size is final: the chunk math ([`mscclpp_lang::plan::Layout`], shared with the CPU
//! verifier), thread-block-group slices, constant offsets of remote and switch references, the local
//! constant offsets of port-channel sources and the 2x expansion of packet buffers are applied here, so the
//! kernel divides nothing. Only the pipeline offset and the scratch half of a double-buffered scratch are added
//! on the device.

use mscclpp_lang::plan::{
    BufferRef, BufferType, ChannelType, Gpu, LL128_CHUNK_ALIGN, Layout, Locator, OpName, Operation, Plan, Protocol,
    ReduceOp, SizeError, ThreadBlock, split_balanced,
};
use mscclpp_sys::device_plan::{
    LL128_GROUP_BYTES, LL128_GROUP_PAYLOAD_BYTES, Loc, MAX_OP_IDS, OPS_OFFSET, Op, PlanHeader, REF_PACKET, REF_SCRATCH,
    Ref, SwitchInfo, TbInfo,
};
use mscclpp_sys::driver::{DeviceRepr, as_bytes};
use mscclpp_sys::fixed::Signature;
use mscclpp_sys::handles::{BaseMemoryChannelDeviceHandle, BasePortChannelDeviceHandle};
use mscclpp_sys::interpreter::ElementType;

/// Why a plan cannot become device records for a given launch shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rank {rank}, thread block {tb}, operation {op} (`{name}`): {message}")]
pub struct RecordError {
    /// Rank.
    pub rank: usize,
    /// Thread block.
    pub tb: usize,
    /// Operation index (pipeline inner operations count after their pipeline).
    pub op: usize,
    /// Operation name.
    pub name: &'static str,
    /// What is wrong and what to do.
    pub message: String,
}

/// The sizes and offsets one launch is built for (the key of a device plan inside a context).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Input bytes.
    pub input_size: u64,
    /// Output bytes.
    pub output_size: u64,
    /// Offset of the caller's input pointer from its allocation base.
    pub const_src_offset: u64,
    /// Offset of the caller's output pointer from its allocation base.
    pub const_dst_offset: u64,
    /// Element type (reductions need whole elements).
    pub dtype: ElementType,
}

/// One thread block's records and the rank-level resources it uses, in tb-local order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TbRecords {
    /// Operations, pipeline inner operations right after their pipeline.
    pub ops: Vec<Op>,
    /// References of all operations.
    pub refs: Vec<Ref>,
    /// Rank-level memory channel index of each tb-local memory channel.
    pub mem_channels: Vec<u32>,
    /// Rank-level port channel index of each tb-local port channel.
    pub port_channels: Vec<u32>,
    /// Rank-level remote-buffer index of each tb-local memory remote buffer.
    pub mem_buffers: Vec<u32>,
    /// Rank-level remote-buffer index of each tb-local port remote buffer.
    pub port_buffers: Vec<u32>,
    /// Rank-level switch channel index of each tb-local switch channel.
    pub switches: Vec<u32>,
}

/// One rank's device records for one [`Shape`], independent of the buffers' addresses.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankRecords {
    /// Thread blocks, by id.
    pub tbs: Vec<TbRecords>,
}

impl RankRecords {
    /// The operation sequences of the thread blocks: which plan-specialised program runs these records, and
    /// which of its variants each block takes (written into the blocks' heads by [`serialize`]).
    pub fn signature(&self) -> Signature {
        Signature::of(self.tbs.iter().map(|tb| (&tb.ops[..], &tb.refs[..])))
    }
}

/// Everything that depends on a context's connections and buffers: device handles and addresses by rank-level
/// index.
#[derive(Clone, Debug, Default)]
pub struct Wiring {
    /// MemoryId of the local input; output = +1, scratch = +2.
    pub local_memory_id_begin: u32,
    /// Memory channel handles, by rank-level memory channel index.
    pub mem_channels: Vec<BaseMemoryChannelDeviceHandle>,
    /// Port channel handles, by rank-level port channel index.
    pub port_channels: Vec<BasePortChannelDeviceHandle>,
    /// Mapped base of each rank-level remote buffer reachable through memory channels (0 otherwise).
    pub mem_buffers: Vec<u64>,
    /// MemoryId of each rank-level remote buffer reachable through port channels (0 otherwise).
    pub port_buffers: Vec<u32>,
    /// Switch channels, by rank-level switch channel index.
    pub switches: Vec<SwitchInfo>,
}

fn buffer_code(t: BufferType) -> u8 {
    match t {
        BufferType::Input => Loc::Input as u8,
        BufferType::Output => Loc::Output as u8,
        BufferType::Scratch => Loc::Scratch as u8,
    }
}

fn channel_code(t: Option<ChannelType>) -> u8 {
    match t {
        None => 0,
        Some(ChannelType::Memory) => 1,
        Some(ChannelType::Port) => 2,
        Some(ChannelType::Switch) => 3,
    }
}

fn reduce_code(r: ReduceOp) -> u8 {
    match r {
        ReduceOp::Sum => 0,
        ReduceOp::Min => 1,
        ReduceOp::Max => 2,
    }
}

/// Whether the LL128 packets of a chunk of `bytes` fit in the twice its size the scratch holds for it.
fn ll128_fits(bytes: u64) -> bool {
    bytes.div_ceil(LL128_GROUP_PAYLOAD_BYTES) * LL128_GROUP_BYTES <= 2 * bytes
}

struct Builder<'a> {
    plan: &'a Plan,
    rank: usize,
    gpu: &'a Gpu,
    tb_index: usize,
    tb: &'a ThreadBlock,
    /// `None` when the rank has no chunks at all (then no operation may reference data).
    layout: Option<Layout>,
    shape: Shape,
    mem_remote: Vec<u32>,
    port_remote: Vec<u32>,
    switch_ids: Vec<u32>,
    out: TbRecords,
    op_index: usize,
    op_name: &'static str,
}

impl Builder<'_> {
    fn err(&self, message: impl Into<String>) -> RecordError {
        RecordError {
            rank: self.rank,
            tb: self.tb_index,
            op: self.op_index,
            name: self.op_name,
            message: message.into(),
        }
    }

    fn const_offset(&self, t: BufferType) -> u64 {
        match t {
            BufferType::Input => self.shape.const_src_offset,
            BufferType::Output => self.shape.const_dst_offset,
            BufferType::Scratch => 0,
        }
    }

    /// Convert one buffer reference.
    fn reference(&self, op: &Operation, r: &BufferRef, packet: bool, port_source: bool) -> Result<Ref, RecordError> {
        let layout = self.layout.ok_or_else(|| {
            self.err("the rank has neither input nor output chunks, so buffer references have no size")
        })?;
        let lines = self.plan.protocol == Protocol::Ll128 && op.name.moves_packets();
        let (payload_off, bytes, packet_off) = if lines {
            // LL128: line groups are counted from the chunk reference's start, so a thread-block group splits it
            // at whole groups, and a slice's packets start at its first group's.
            let (chunk_off, chunk_bytes) = layout.range(r.index, r.size);
            if packet && (!chunk_off.is_multiple_of(LL128_CHUNK_ALIGN) || !ll128_fits(chunk_bytes)) {
                return Err(self.err(format!(
                    "LL128 packets need chunks that start at multiples of {LL128_CHUNK_ALIGN} bytes and whose \
                     128-byte lines fit in twice their size (at least 256 bytes, not 481-548); this one is \
                     {chunk_bytes} bytes at {chunk_off}: use a larger message"
                )));
            }
            let (o, b) = match op.tbg_info {
                None => (0, chunk_bytes),
                Some(g) => split_balanced(chunk_bytes, LL128_GROUP_PAYLOAD_BYTES, g.tbg_size as u64, g.tb_id as u64),
            };
            (chunk_off + o, b, 2 * chunk_off + o / LL128_GROUP_PAYLOAD_BYTES * LL128_GROUP_BYTES)
        } else {
            let (o, b) = layout.range_tbg(r.index, r.size, op.tbg_info);
            (o, b, 2 * o)
        };
        let size = u32::try_from(bytes).map_err(|_| {
            self.err(format!(
                "{bytes} bytes in one reference exceed the interpreter's 32-bit sizes; use a smaller message"
            ))
        })?;
        let (loc, id, target, constant) = match r.locator() {
            Some(Locator::Local(t)) => {
                // Port channels address local memory from the allocation base (registered memory), so their
                // sources carry the caller's offset inside the allocation.
                let c = if port_source { self.const_offset(t) } else { 0 };
                (buffer_code(t), 0u8, t, c)
            }
            Some(Locator::Remote(b)) => {
                let (list, loc) = match op.channel_type {
                    Some(ChannelType::Port) => (&self.port_remote, Loc::Port),
                    Some(ChannelType::Memory) | None => (&self.mem_remote, Loc::Memory),
                    Some(ChannelType::Switch) => {
                        return Err(self.err("a `buffer_id` reference cannot go through a switch channel"));
                    }
                };
                let rank_level = *list.get(b as usize).ok_or_else(|| {
                    self.err(format!("buffer_id {b} is not in the thread block's remote_buffer_refs"))
                })?;
                let rb = self
                    .gpu
                    .remote_buffers
                    .get(rank_level as usize)
                    .ok_or_else(|| self.err(format!("remote buffer {rank_level} does not exist")))?;
                let id = u8::try_from(b).map_err(|_| self.err("more than 255 remote buffers in a thread block"))?;
                (loc as u8, id, rb.buffer_type, self.const_offset(rb.buffer_type))
            }
            Some(Locator::Switch(s)) => {
                let rank_level = *self.switch_ids.get(s as usize).ok_or_else(|| {
                    self.err(format!("switch_channel_id {s} is not among the thread block's switch channels"))
                })?;
                let decl = self.gpu.switch_channels();
                let bt = decl
                    .get(rank_level as usize)
                    .and_then(|d| d.switch_buffer())
                    .ok_or_else(|| self.err(format!("switch channel {rank_level} has no buffer_type")))?;
                let id = u8::try_from(s).map_err(|_| self.err("more than 255 switch channels in a thread block"))?;
                (Loc::Switch as u8, id, bt, self.const_offset(bt))
            }
            None => {
                return Err(
                    self.err("a buffer reference needs exactly one of `type`, `buffer_id`, `switch_channel_id`")
                );
            }
        };
        let mut flags = 0;
        if target == BufferType::Scratch {
            flags |= REF_SCRATCH;
        }
        if packet {
            flags |= REF_PACKET;
        }
        let offset = if packet { packet_off } else { payload_off };
        Ok(Ref { offset: offset + constant, size, loc, id, flags, reserved: 0 })
    }

    fn ids(&self, values: &[u32], what: &str) -> Result<([u8; MAX_OP_IDS], u8), RecordError> {
        if values.len() > MAX_OP_IDS {
            return Err(self.err(format!("{} {what}; an operation takes at most {MAX_OP_IDS}", values.len())));
        }
        let mut ids = [0u8; MAX_OP_IDS];
        for (slot, &v) in ids.iter_mut().zip(values) {
            *slot = u8::try_from(v).map_err(|_| self.err(format!("{what} {v} is out of range")))?;
        }
        Ok((ids, values.len() as u8))
    }

    fn channel_ids(&self, op: &Operation) -> Result<([u8; MAX_OP_IDS], u8), RecordError> {
        let kind = op.channel_type;
        let available = match kind {
            Some(ChannelType::Memory) => self.out.mem_channels.len(),
            Some(ChannelType::Port) => self.out.port_channels.len(),
            Some(ChannelType::Switch) => self.switch_ids.len(),
            None => 0,
        };
        if let Some(&bad) = op.channels().iter().find(|&&c| c as usize >= available) {
            return Err(self.err(format!(
                "channel id {bad} does not exist: the thread block has {available} {} channels",
                kind.map(|k| k.as_str()).unwrap_or("(no type)")
            )));
        }
        self.ids(op.channels(), "channel ids")
    }

    fn op(&mut self, op: &Operation) -> Result<(), RecordError> {
        self.op_name = op.name.as_str();
        let mut rec = Op { ty: op.name.code(), channel_type: channel_code(op.channel_type), ..Op::default() };
        rec.reduce_op = reduce_code(op.reduce());
        let port = op.channel_type == Some(ChannelType::Port);
        let src_packet = |i: usize| op.name.holds_packets(port, true, i);
        let dst_packet = |i: usize| op.name.holds_packets(port, false, i);
        let mut srcs: Vec<Ref> = Vec::new();
        let mut dsts: Vec<Ref> = Vec::new();
        match op.name {
            OpName::MultiLoadReduce => {
                // Standalone `glre`: load-reduce chunks [buffer_offset, +size) of the switch buffer into the local
                // destination chunk.
                let sw = op.channels().first().copied().unwrap_or(0);
                let offset = op.buffer_offset.ok_or_else(|| self.err("`glre` needs `buffer_offset`"))?;
                let size = op.size.ok_or_else(|| self.err("`glre` needs `size`"))?;
                let dst = op.dst_chunk.ok_or_else(|| self.err("`glre` needs `dst_chunk`"))?;
                let src = BufferRef::switch(sw, offset, size);
                let mut local = dst;
                local.rank = None;
                srcs.push(self.reference(op, &src, false, false)?);
                dsts.push(self.reference(op, &local, false, false)?);
                rec.channel_type = 3;
            }
            _ => {
                for (i, r) in op.srcs().iter().enumerate() {
                    let is_local = matches!(r.locator(), Some(Locator::Local(_)));
                    srcs.push(self.reference(op, r, src_packet(i), port && is_local)?);
                }
                for (i, r) in op.dsts().iter().enumerate() {
                    dsts.push(self.reference(op, r, dst_packet(i), false)?);
                }
            }
        }
        match op.name {
            OpName::SemAcquire | OpName::SemRelease => {
                let n = self.gpu.semaphores().len();
                if let Some(&bad) = op.semaphores().iter().find(|&&s| s as usize >= n) {
                    return Err(self.err(format!("semaphore {bad} does not exist: rank {} declares {n}", self.rank)));
                }
                (rec.ids, rec.n_ids) = self.ids(op.semaphores(), "semaphore ids")?;
            }
            OpName::Barrier => {
                rec.barrier_id = op.barrier_id.unwrap_or(0) as u16;
                rec.n_blocks = op.num_threadblocks.unwrap_or(0);
            }
            _ => {
                (rec.ids, rec.n_ids) = self.channel_ids(op)?;
            }
        }
        self.check(op, &rec, &srcs, &dsts)?;
        if srcs.len() > 255 || dsts.len() > 255 {
            return Err(self.err("too many buffer references"));
        }
        rec.n_src = srcs.len() as u8;
        rec.n_dst = dsts.len() as u8;
        rec.ref_begin =
            u16::try_from(self.out.refs.len()).map_err(|_| self.err("too many references in one thread block"))?;
        self.out.refs.extend(srcs);
        self.out.refs.extend(dsts);
        self.out.ops.push(rec);
        Ok(())
    }

    /// Checks that depend on the launch shape: what the kernel needs in order to stay in bounds and correct.
    fn check(&self, op: &Operation, rec: &Op, srcs: &[Ref], dsts: &[Ref]) -> Result<(), RecordError> {
        use OpName::*;
        let need = |n: usize, side: &[Ref], what: &str| -> Result<(), RecordError> {
            if side.len() < n {
                Err(self.err(format!("needs at least {n} {what} buffer reference(s), has {}", side.len())))
            } else {
                Ok(())
            }
        };
        match op.name {
            Put | PutWithSignal | PutWithSignalAndFlush | Get | Copy | PutPackets => {
                need(1, srcs, "source")?;
                need(1, dsts, "destination")?;
            }
            ReadPutPackets | CopyPackets | UnpackPackets | MultiStorePackets | MultiStore | Reduce | ReduceSend
            | ReadReduce | ReadReduceSend | MultiLoadReduceStore | MultiLoadReduce => {
                need(1, srcs, "source")?;
                need(1, dsts, "destination")?;
            }
            ReducePackets | ReduceSendPackets | ReduceCopyPackets | ReduceCopySendPackets => {
                need(1, srcs, "source")?;
                need(1, dsts, "destination")?;
            }
            _ => {}
        }
        let port = op.channel_type == Some(ChannelType::Port);
        if port && op.name.is_put() {
            if rec.n_ids == 0 && !dsts.is_empty() {
                return Err(self.err("a port-channel transfer needs `channel_ids`"));
            }
            for r in srcs.iter().chain(dsts) {
                let scale = if matches!(op.name, PutPackets | ReadPutPackets) { 2 } else { 1 };
                if r.offset + r.size as u64 * scale > u32::MAX as u64 {
                    return Err(self.err(
                        "port-channel offsets are 32-bit (< 4 GiB from the allocation base); use smaller buffers",
                    ));
                }
            }
        }
        // Every data reference of one operation moves the same number of bytes.
        if let Some(first) = dsts.first().or(srcs.first()) {
            let n = first.size;
            if !op.name.is_sync()
                && matches!(op.name, Reduce | ReduceSend | ReadReduce | ReadReduceSend | MultiLoadReduceStore)
                && srcs.iter().chain(dsts).any(|r| r.size != n)
            {
                return Err(self.err("the references of a reduction cover different numbers of bytes"));
            }
        }
        if op.name.is_reduction() {
            let e = self.shape.dtype.size() as u64;
            if let Some(r) = srcs.iter().chain(dsts).find(|r| !(r.size as u64).is_multiple_of(e)) {
                return Err(self.err(format!(
                    "a reduction over {} bytes does not hold whole {} elements; pick a size the plan splits into \
                     multiples of {e} bytes",
                    r.size,
                    self.shape.dtype.as_str()
                )));
            }
        }
        let members = |refs: &[Ref]| refs.iter().filter(|r| r.loc == Loc::Switch as u8).count();
        if members(srcs) + members(dsts) > 0 && (srcs.len() + dsts.len()) > 2 * mscclpp_lang::plan::MAX_REFS_PER_OP {
            return Err(self.err("too many switch references"));
        }
        Ok(())
    }
}

/// Convert rank `rank`'s thread blocks of `plan` into device records for `shape`.
pub fn build(plan: &Plan, rank: usize, shape: Shape) -> Result<RankRecords, RecordError> {
    let err0 = |message: String| RecordError { rank, tb: 0, op: 0, name: "-", message };
    let gpu = plan
        .gpus
        .get(rank)
        .ok_or_else(|| err0(format!("the plan has {} ranks; it is not for rank {rank}", plan.gpus.len())))?;
    let layout = match Layout::for_gpu(gpu, rank, plan.alignment(), shape.input_size, shape.output_size) {
        Ok(l) => Some(l),
        // A rank with scratch chunks only (the DSL's unit tests): one chunk is the whole message.
        Err(SizeError::NoChunks { .. }) => {
            let mut one = gpu.clone();
            one.input_chunks = 1;
            one.output_chunks = 0;
            one.threadblocks.clear();
            let size = shape.input_size.max(shape.output_size);
            Layout::for_gpu(&one, rank, plan.alignment(), size, 0).ok()
        }
        Err(e) => return Err(err0(e.to_string())),
    };
    let mut out = RankRecords::default();
    for (t, tb) in gpu.threadblocks.iter().enumerate() {
        let mut b = Builder {
            plan,
            rank,
            gpu,
            tb_index: t,
            tb,
            layout,
            shape,
            mem_remote: tb.remote_buffer_ids(ChannelType::Memory),
            port_remote: tb.remote_buffer_ids(ChannelType::Port),
            switch_ids: tb.channel_ids(ChannelType::Switch),
            out: TbRecords::default(),
            op_index: 0,
            op_name: "-",
        };
        b.out.mem_channels = tb.channel_ids(ChannelType::Memory);
        b.out.port_channels = tb.channel_ids(ChannelType::Port);
        b.out.mem_buffers = b.mem_remote.clone();
        b.out.port_buffers = b.port_remote.clone();
        b.out.switches = b.switch_ids.clone();
        for op in &b.tb.ops {
            if op.name == OpName::Pipeline {
                let ic = op.iter_context.ok_or_else(|| b.err("a pipeline needs `iter_context`"))?;
                let first = b.out.ops.len();
                b.op_name = "pipeline";
                let layout = b.layout.ok_or_else(|| b.err("a pipeline needs input or output chunks"))?;
                let iterations = layout.pipeline_iterations(ic);
                let unit = u32::try_from(ic.unit_size)
                    .map_err(|_| b.err("pipeline unit_size exceeds the interpreter's 32-bit sizes"))?;
                let n_inner =
                    u8::try_from(op.inner().len()).map_err(|_| b.err("more than 255 operations inside a pipeline"))?;
                b.out.ops.push(Op {
                    ty: OpName::Pipeline.code(),
                    n_inner,
                    iterations: u32::try_from(iterations)
                        .map_err(|_| b.err("the pipeline has more than 2^32 iterations"))?,
                    unit_size: unit,
                    ..Op::default()
                });
                b.op_index += 1;
                for inner in op.inner() {
                    b.op(inner)?;
                    b.op_index += 1;
                }
                debug_assert_eq!(b.out.ops.len(), first + 1 + op.inner().len());
            } else {
                b.op(op)?;
                b.op_index += 1;
            }
        }
        if b.out.ops.len() > mscclpp_lang::plan::MAX_OPS_PER_TB {
            return Err(b.err(format!(
                "{} operations; a thread block holds at most {}",
                b.out.ops.len(),
                mscclpp_lang::plan::MAX_OPS_PER_TB
            )));
        }
        let _ = b.plan;
        out.tbs.push(b.out);
    }
    Ok(out)
}

fn align16(n: usize) -> usize {
    n.div_ceil(16) * 16
}

fn push_bytes<T: DeviceRepr>(buf: &mut Vec<u8>, items: &[T]) -> usize {
    let start = align16(buf.len());
    buf.resize(start, 0);
    buf.extend_from_slice(as_bytes(items));
    start
}

/// Bytes of one block's records: its head, its ops (padded to 16 bytes) and its refs.
pub fn block_bytes(tb: &TbRecords) -> usize {
    refs_offset(tb) + tb.refs.len() * std::mem::size_of::<Ref>()
}

/// Byte offset of a block's refs in its records.
fn refs_offset(tb: &TbRecords) -> usize {
    OPS_OFFSET + align16(tb.ops.len() * std::mem::size_of::<Op>())
}

/// Why the wiring does not fit the records.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("thread block {tb}: {message}")]
pub struct WiringError {
    /// Thread block.
    pub tb: usize,
    /// What is missing.
    pub message: String,
}

/// Lay out the device plan of `records` with the handles and addresses of `wiring`, as it must sit at device
/// address `base`; each block's head names its variant of `signature` (the records' [`RankRecords::signature`]). Returns the bytes to upload and the header they start with (thread blocks, bytes of one
/// block's records, device addresses of the arrays).
///
/// Each block's records (head, ops, refs) are one contiguous piece, `block_stride` bytes apart, so a block
/// stages them into shared memory with one load per thread; a memory-channel reference gets the peer buffer's
/// mapped address added to its offset here, so the kernel resolves no reference through memory.
pub fn serialize(
    records: &RankRecords,
    signature: &Signature,
    wiring: &Wiring,
    base: u64,
) -> Result<(Vec<u8>, PlanHeader), WiringError> {
    let stride = align16(records.tbs.iter().map(block_bytes).max().unwrap_or(0).max(OPS_OFFSET));
    let mut blocks = vec![0u8; stride * records.tbs.len()];
    let mut mem_channels = Vec::new();
    let mut port_channels = Vec::new();
    let mut port_buffers = Vec::new();
    let mut switches = Vec::new();
    for (t, tb) in records.tbs.iter().enumerate() {
        let missing = |what: &str, i: u32| WiringError { tb: t, message: format!("{what} {i} was not set up") };
        let head = TbInfo {
            n_ops: tb.ops.len() as u16,
            n_refs: tb.refs.len() as u16,
            ref_offset: refs_offset(tb) as u32,
            mem_channel_begin: mem_channels.len() as u32,
            port_channel_begin: port_channels.len() as u32,
            port_buffer_begin: port_buffers.len() as u32,
            switch_begin: switches.len() as u32,
            variant: signature.block_variant.get(t).copied().unwrap_or(0),
            reserved: 0,
        };
        let mut refs = tb.refs.clone();
        for r in refs.iter_mut().filter(|r| r.loc == Loc::Memory as u8) {
            let b = *tb.mem_buffers.get(r.id as usize).ok_or_else(|| missing("tb-local remote buffer", r.id as u32))?;
            let addr = *wiring.mem_buffers.get(b as usize).ok_or_else(|| missing("remote buffer", b))?;
            if addr == 0 {
                return Err(missing("remote buffer", b));
            }
            r.offset += addr;
        }
        let block = &mut blocks[t * stride..(t + 1) * stride];
        for (at, bytes) in [
            (0, as_bytes(std::slice::from_ref(&head))),
            (OPS_OFFSET, as_bytes(&tb.ops)),
            (refs_offset(tb), as_bytes(&refs)),
        ] {
            block[at..at + bytes.len()].copy_from_slice(bytes);
        }
        for &c in &tb.mem_channels {
            mem_channels.push(*wiring.mem_channels.get(c as usize).ok_or_else(|| missing("memory channel", c))?);
        }
        for &c in &tb.port_channels {
            port_channels.push(*wiring.port_channels.get(c as usize).ok_or_else(|| missing("port channel", c))?);
        }
        for &b in &tb.port_buffers {
            port_buffers.push(*wiring.port_buffers.get(b as usize).ok_or_else(|| missing("remote buffer", b))?);
        }
        for &s in &tb.switches {
            switches.push(*wiring.switches.get(s as usize).ok_or_else(|| missing("switch channel", s))?);
        }
    }
    let mut buf = Vec::new();
    push_bytes(&mut buf, &[PlanHeader::default()]);
    let o_blocks = push_bytes(&mut buf, &blocks);
    let o_mem = push_bytes(&mut buf, &mem_channels);
    let o_port = push_bytes(&mut buf, &port_channels);
    let o_pbuf = push_bytes(&mut buf, &port_buffers);
    let o_sw = push_bytes(&mut buf, &switches);
    buf.resize(align16(buf.len()).max(16), 0);
    let header = PlanHeader {
        n_tbs: records.tbs.len() as u32,
        local_memory_id_begin: wiring.local_memory_id_begin,
        block_stride: stride as u32,
        reserved: 0,
        blocks: base + o_blocks as u64,
        mem_channels: base + o_mem as u64,
        port_channels: base + o_port as u64,
        port_buffers: base + o_pbuf as u64,
        switches: base + o_sw as u64,
    };
    let mut head = Vec::new();
    push_bytes(&mut head, &[header]);
    buf[..head.len()].copy_from_slice(&head);
    Ok((buf, header))
}
