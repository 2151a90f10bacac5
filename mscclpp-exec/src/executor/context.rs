//! The per-(plan, buffers) context: connections, semaphores, channels, registered memory, scratch, device
//! semaphores, barriers and packet flags, set up collectively once and cached by the [`super::Executor`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mscclpp_lang::plan::{BufferType, ChannelType, Plan};
use mscclpp_sys::device_plan::{MAX_SWITCH_MEMBERS, PlanHeader, SwitchInfo};
use mscclpp_sys::driver::{DeviceMemory, DevicePtr};
use mscclpp_sys::handles::{BaseMemoryChannelDeviceHandle, DeviceSyncer};

use super::records::{self, Shape, Wiring};
use crate::communicator::Communicator;
use crate::error::{Error, Result};
use crate::memory::{RegisteredMemory, RemoteMemory};
use crate::proxy::ProxyService;
use crate::semaphore::{Host2DeviceSemaphore, MemoryDevice2DeviceSemaphore};

/// Barrier ids a plan may use.
const SYNCERS: usize = 16;

/// The buffers a context is built for: the caller's input and output (start, bytes and the driver id of their
/// allocations); all zero but the size classes for a buffer-independent plan ([`independent_key`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct BufferKey {
    pub input_base: DevicePtr,
    pub input_range: u64,
    pub input_id: u64,
    pub output_base: DevicePtr,
    pub output_range: u64,
    pub output_id: u64,
}

/// One rank's device plan for one [`Shape`].
#[derive(Debug)]
pub(crate) struct DevicePlan {
    pub mem: DeviceMemory,
    /// The header as written to `mem` (thread blocks, shared memory per block, device addresses of the arrays).
    pub header: PlanHeader,
    /// Hash of the records' operation sequences: the plan-specialised program that runs them
    /// ([`mscclpp_sys::fixed::Signature`]).
    pub fixed: u64,
}

/// Everything one plan needs on one set of buffers.
pub(crate) struct PlanContext {
    pub plan: Arc<Plan>,
    pub rank: usize,
    pub wiring: Wiring,
    pub scratch: DeviceMemory,
    pub scratch_half: u64,
    pub flags: DeviceMemory,
    pub syncers: DeviceMemory,
    pub semaphores: DeviceMemory,
    pub device_plans: Mutex<HashMap<Shape, Arc<DevicePlan>>>,
    // Kept alive for the kernels that use them.
    _proxy: Option<ProxyService>,
    _mem_semaphores: Vec<Arc<MemoryDevice2DeviceSemaphore>>,
    _host_semaphores: Vec<Arc<Host2DeviceSemaphore>>,
    _remote: Vec<Arc<RemoteMemory>>,
    _registered: Vec<RegisteredMemory>,
}

impl std::fmt::Debug for PlanContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanContext").field("plan", &self.plan.name).field("rank", &self.rank).finish()
    }
}

fn setup_err(plan: &Plan, what: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("setting up plan `{}`: {what}", plan.name))
}

/// Bytes of scratch this rank needs for buffers of the given allocation sizes, before the ranks agree on the
/// largest: one chunk of the input (or, without input chunks, the output) allocation, capped at the plan's
/// largest message and rounded up to the buffer alignment, per scratch chunk, then grown for packets and double
/// buffering ([`Plan::scratch_alloc_for`]).
fn scratch_bytes(plan: &Plan, rank: usize, key: &BufferKey) -> u64 {
    let g = &plan.gpus[rank];
    let align = plan.alignment().max(1);
    let cap = |r: u64| r.min(plan.max_message());
    let per_chunk = if g.input_chunks != 0 {
        cap(key.input_range).div_ceil(g.input_chunks as u64)
    } else if g.output_chunks != 0 {
        cap(key.output_range).div_ceil(g.output_chunks as u64)
    } else {
        cap(key.input_range.max(key.output_range))
    };
    let per_chunk = per_chunk.div_ceil(align) * align;
    plan.scratch_alloc_for(per_chunk.saturating_mul(g.scratch_chunks as u64))
}

/// Whether no rank of `plan` ever addresses the caller's input or output remotely: no peer maps them (remote
/// buffers), no switch channel spans them, and no port channel exists (the proxy addresses local memory through
/// its registration). Such a plan reads and writes the caller's buffers only through the launch's own pointers,
/// and reaches peers only through scratch, so its context does not depend on the caller's allocations.
pub(crate) fn buffers_independent(plan: &Plan) -> bool {
    let caller = |t: Option<BufferType>| matches!(t, Some(BufferType::Input | BufferType::Output));
    plan.gpus.iter().all(|g| {
        g.channel_peers(ChannelType::Port).is_empty()
            && g.remote_buffers.iter().all(|rb| !caller(Some(rb.buffer_type)))
            && g.switch_channels().iter().all(|s| !caller(s.switch_buffer()))
    })
}

/// The key of a buffer-independent context for a message of `input_size` and `output_size` bytes: no
/// allocation, and sizes rounded up to a power of two (scratch is sized from them), so every rank derives the
/// same key from the call alone, whatever buffers it passes, and a few contexts serve every size.
pub(crate) fn independent_key(input_size: u64, output_size: u64) -> BufferKey {
    let class = |s: u64| s.max(1).checked_next_power_of_two().unwrap_or(s);
    BufferKey {
        input_base: 0,
        input_range: class(input_size),
        input_id: 0,
        output_base: 0,
        output_range: class(output_size),
        output_id: 0,
    }
}

/// The base of every bootstrap tag of one context: executor id (8 bits) | context serial (16) | section (4) |
/// lower rank (10) | higher rank (10) | index (8), 56 bits in all. Two executors on one communicator (different
/// ids) set up their contexts concurrently without taking each other's messages.
pub(crate) fn tag_base(executor: u32, serial: u64) -> u64 {
    ((executor as u64 & 0xff) << 48) | ((serial & 0xffff) << 32)
}

impl PlanContext {
    /// Collective: every rank of the plan must call this with the same plan, in the same order of contexts, from
    /// the executor with the same id (see [`Communicator::next_executor_id`]).
    pub fn new(
        comm: &Communicator,
        plan: Arc<Plan>,
        key: BufferKey,
        executor: u32,
        serial: u64,
    ) -> Result<PlanContext> {
        let rank = comm.rank();
        let device = *comm.device();
        let me = &plan.gpus[rank];
        let tag_base = tag_base(executor, serial);
        let pair = |a: usize, b: usize| ((a.min(b) as u64 & 0x3ff) << 18) | ((a.max(b) as u64 & 0x3ff) << 8);

        // Local buffers: whole allocations from their bases (remote references add the caller's constant
        // offsets, as MSCCL++'s executor does).
        let sizes = comm.all_gather_tagged(tag_base | (3 << 28), &scratch_bytes(&plan, rank, &key).to_le_bytes())?;
        let mut scratch_size = 0u64;
        for b in &sizes {
            let v: [u8; 8] = b.as_slice().try_into().map_err(|_| setup_err(&plan, "bad scratch size from a peer"))?;
            scratch_size = scratch_size.max(u64::from_le_bytes(v));
        }
        let scratch_size = scratch_size.max(256).div_ceil(256) * 256;
        let scratch = DeviceMemory::zeroed(&device, scratch_size as usize)?;
        let scratch_half = if plan.double_scratch() { scratch_size / 2 } else { 0 };
        // A plan whose peers never address the caller's buffers gets a context without them (the key holds no
        // allocation then, see [`buffers_independent`]): nothing of the caller's is registered.
        let independent = key.input_base == 0 && key.output_base == 0;
        let register = |base: DevicePtr, range: u64| -> Result<Option<RegisteredMemory>> {
            if independent { Ok(None) } else { comm.register_ptr(base, range as usize).map(Some) }
        };
        let reg_input = register(key.input_base, key.input_range)?;
        let reg_output = register(key.output_base, key.output_range)?;
        let reg_scratch = comm.register_ptr(scratch.ptr(), scratch_size as usize)?;
        crate::startup::mark("context: buffers registered");
        let local_reg = |t: BufferType| -> Result<&RegisteredMemory> {
            match t {
                BufferType::Input => reg_input.as_ref(),
                BufferType::Output => reg_output.as_ref(),
                BufferType::Scratch => Some(&reg_scratch),
            }
            .ok_or_else(|| setup_err(&plan, format!("the {t} buffer is not registered in a buffer-free context")))
        };

        let uses_port = plan.gpus.iter().any(|g| !g.channel_peers(ChannelType::Port).is_empty());
        let mut proxy = if uses_port { Some(ProxyService::new(&device)?) } else { None };
        let mut wiring = Wiring::default();
        if let Some(p) = proxy.as_mut() {
            wiring.local_memory_id_begin = p.add_memory(local_reg(BufferType::Input)?)?;
            p.add_memory(local_reg(BufferType::Output)?)?;
            p.add_memory(&reg_scratch)?;
        }

        // Connections and semaphores, per peer in ascending order: memory channels (paired k-th with k-th,
        // extra unpaired ones so both sides make the same number), then port channels.
        let mem_peers = me.channel_peers(ChannelType::Memory);
        let port_peers = me.channel_peers(ChannelType::Port);
        wiring.mem_channels = vec![BaseMemoryChannelDeviceHandle::default(); mem_peers.len()];
        let mut port_handles = vec![None; port_peers.len()];
        let mut mem_semaphores = Vec::new();
        let mut host_semaphores = Vec::new();
        for peer in 0..plan.world_size() {
            if peer == rank {
                continue;
            }
            let theirs = &plan.gpus[peer];
            let mut tag = tag_base | pair(rank, peer);
            for kind in [ChannelType::Memory, ChannelType::Port] {
                let my_list = if kind == ChannelType::Memory { &mem_peers } else { &port_peers };
                let mine: Vec<usize> =
                    my_list.iter().enumerate().filter(|(_, p)| **p as usize == peer).map(|(i, _)| i).collect();
                let their_count = theirs.channel_peers(kind).iter().filter(|p| **p as usize == rank).count();
                let n = mine.len().max(their_count);
                for k in 0..n {
                    let conn = comm.connect(peer, tag)?;
                    if kind == ChannelType::Memory {
                        let sem = comm.build_memory_semaphore(&conn, tag)?;
                        if let Some(&idx) = mine.get(k) {
                            wiring.mem_channels[idx] = BaseMemoryChannelDeviceHandle { semaphore: sem.device_handle() };
                        }
                        mem_semaphores.push(sem);
                    } else {
                        let sem = comm.build_host_semaphore(&conn, tag)?;
                        if let (Some(&idx), Some(p)) = (mine.get(k), proxy.as_mut()) {
                            let id = p.add_semaphore(sem.clone())?;
                            port_handles[idx] = Some(p.base_port_channel(id)?);
                        }
                        host_semaphores.push(sem);
                    }
                    tag += 1;
                }
            }
        }
        for (i, h) in port_handles.into_iter().enumerate() {
            wiring.port_channels.push(h.ok_or_else(|| setup_err(&plan, format!("port channel {i} has no proxy")))?);
        }

        crate::startup::mark("context: connections and semaphores made");
        // Remote buffers: first send ours to every rank that accesses them (in that rank's list order), then
        // receive ours in our list order.
        let rb_tag =
            |accessor: usize, j: usize| tag_base | (1 << 28) | ((accessor as u64 & 0x3ff) << 18) | (j as u64 & 0x3ffff);
        for (accessor, g) in plan.gpus.iter().enumerate() {
            if accessor == rank {
                continue;
            }
            for (j, rb) in g.remote_buffers.iter().enumerate() {
                if rb.rank as usize == rank {
                    comm.send_memory(local_reg(rb.buffer_type)?, accessor, rb_tag(accessor, j))?;
                }
            }
        }
        let mut remote = Vec::new();
        wiring.mem_buffers = vec![0; me.remote_buffers.len()];
        wiring.port_buffers = vec![0; me.remote_buffers.len()];
        for (j, rb) in me.remote_buffers.iter().enumerate() {
            let owner = rb.rank as usize;
            let r = if owner == rank {
                Arc::new(RemoteMemory::map(local_reg(rb.buffer_type)?.desc().clone(), &device)?)
            } else {
                comm.recv_memory(owner, rb_tag(rank, j))?
            };
            if rb.access_channel_types.contains(&ChannelType::Memory) {
                if !r.is_mapped() {
                    return Err(setup_err(
                        &plan,
                        format!(
                            "rank {owner}'s {} buffer is not mapped here: memory channels need the same host",
                            rb.buffer_type
                        ),
                    ));
                }
                wiring.mem_buffers[j] = r.ptr();
            }
            if rb.access_channel_types.contains(&ChannelType::Port) {
                let p =
                    proxy.as_mut().ok_or_else(|| setup_err(&plan, "a port-accessed buffer without port channels"))?;
                wiring.port_buffers[j] = p.add_remote_memory(r.clone())?;
            }
            remote.push(r);
        }

        crate::startup::mark("context: remote buffers mapped");
        // Switch channels: emulated through peer pointers. NVLink multicast is never set up here.
        for (s, decl) in me.switch_channels().iter().enumerate() {
            let bt = decl
                .switch_buffer()
                .ok_or_else(|| setup_err(&plan, format!("switch channel {s} has no buffer_type")))?;
            let members: Vec<usize> = decl
                .rank_groups
                .iter()
                .flatten()
                .next()
                .map(|g| g.ranks.iter().map(|&r| r as usize).collect())
                .unwrap_or_default();
            if members.len() > MAX_SWITCH_MEMBERS {
                return Err(setup_err(&plan, format!("switch channel {s} has more than {MAX_SWITCH_MEMBERS} members")));
            }
            let sw_tag = |s: usize| tag_base | (2 << 28) | (s as u64 & 0xff);
            for &m in &members {
                if m != rank {
                    comm.send_memory(local_reg(bt)?, m, sw_tag(s))?;
                }
            }
            let mut info = SwitchInfo { n_members: members.len() as u32, ..SwitchInfo::default() };
            for (k, &m) in members.iter().enumerate() {
                info.members[k] = if m == rank {
                    local_reg(bt)?.ptr()
                } else {
                    let r = comm.recv_memory(m, sw_tag(s))?;
                    if !r.is_mapped() {
                        return Err(setup_err(&plan, format!("switch channel {s}: rank {m} is on another host")));
                    }
                    let p = r.ptr();
                    remote.push(r);
                    p
                };
            }
            wiring.switches.push(info);
        }

        let ntb = me.threadblocks.len().max(1);
        let flags = DeviceMemory::zeroed(&device, ntb * 4)?;
        let syncers = DeviceMemory::zeroed(&device, SYNCERS * std::mem::size_of::<DeviceSyncer>())?;
        let sems: Vec<u8> = me.semaphores().iter().flat_map(|s| (s.init_value as i32).to_le_bytes()).collect();
        let semaphores = DeviceMemory::zeroed(&device, sems.len().max(4))?;
        if !sems.is_empty() {
            semaphores.copy_from_host(0, &sems)?;
        }
        if let Some(p) = proxy.as_mut() {
            p.start()?;
        }
        comm.all_gather_tagged(tag_base | (4 << 28), &[])?;
        Ok(PlanContext {
            plan,
            rank,
            wiring,
            scratch,
            scratch_half,
            flags,
            syncers,
            semaphores,
            device_plans: Mutex::new(HashMap::new()),
            _proxy: proxy,
            _mem_semaphores: mem_semaphores,
            _host_semaphores: host_semaphores,
            _remote: remote,
            _registered: [reg_input, reg_output, Some(reg_scratch)].into_iter().flatten().collect(),
        })
    }

    /// The device plan for `shape` when it has been made.
    pub fn cached_device_plan(&self, shape: Shape) -> Result<Option<Arc<DevicePlan>>> {
        let plans = self.device_plans.lock().map_err(|_| Error::Poisoned { what: "the device plan cache" })?;
        Ok(plans.get(&shape).cloned())
    }

    /// The device plan for `shape`, built and uploaded on first use (from `built`, the rank's records for
    /// `shape`, when the caller has them already).
    pub fn device_plan(
        &self,
        comm: &Communicator,
        shape: Shape,
        built: Option<records::RankRecords>,
    ) -> Result<Arc<DevicePlan>> {
        let mut plans = self.device_plans.lock().map_err(|_| Error::Poisoned { what: "the device plan cache" })?;
        if let Some(p) = plans.get(&shape) {
            return Ok(p.clone());
        }
        let err = |e: &dyn std::fmt::Display| Error::InvalidArgument(format!("plan `{}`: {e}", self.plan.name));
        let recs = match built {
            Some(r) => r,
            None => records::build(&self.plan, self.rank, shape).map_err(|e| err(&e))?,
        };
        // Size first with a dummy base, then lay out for the real address.
        let sig = recs.signature();
        let (probe, _) = records::serialize(&recs, &sig, &self.wiring, 0).map_err(|e| err(&e))?;
        let mem = DeviceMemory::zeroed(comm.device(), probe.len())?;
        let (bytes, header) = records::serialize(&recs, &sig, &self.wiring, mem.ptr()).map_err(|e| err(&e))?;
        mem.copy_from_host(0, &bytes)?;
        let p = Arc::new(DevicePlan { mem, header, fixed: sig.hash });
        plans.insert(shape, p.clone());
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn independent_keys_hold_no_allocation_and_round_sizes_up() {
        let k = independent_key(1020, 1020);
        assert_eq!((k.input_base, k.output_base), (0, 0));
        assert_eq!((k.input_range, k.output_range), (1024, 1024));
        let k = independent_key(1024, 2048);
        assert_eq!(
            k,
            BufferKey {
                input_base: 0,
                input_range: 1024,
                input_id: 0,
                output_base: 0,
                output_range: 2048,
                output_id: 0
            }
        );
        assert_eq!(independent_key(0, 1).input_range, 1);
        assert_eq!(independent_key(u64::MAX, 1).input_range, u64::MAX);
        // Every size of a class maps to one key, so calls of those sizes share a context.
        assert_eq!(independent_key(3000, 3000), independent_key(4096, 4096));
        assert_ne!(independent_key(4096, 4096), independent_key(4097, 4097));
    }

    #[test]
    fn executors_on_one_communicator_get_disjoint_tags_below_the_communicator_limit() {
        // The largest tag a context uses: section 4, ranks 1023/1023, index 255 on top of the base.
        let span = (4u64 << 28) | (0x3ff << 18) | (0x3ff << 8) | 0xff;
        let ids = [0u32, 1, 2, 255];
        for &a in &ids {
            for &b in &ids {
                for serial in [0u64, 1, 0xffff] {
                    let (x, y) = (tag_base(a, serial), tag_base(b, serial));
                    assert!(x + span < 1 << 56, "executor {a}, serial {serial}: tag past 2^56");
                    if a != b {
                        assert!(x + span < y || y + span < x, "executors {a} and {b} share tags at serial {serial}");
                    }
                }
            }
        }
        assert_ne!(tag_base(0, 1), tag_base(0, 2));
    }
}
