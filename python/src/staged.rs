//! Collectives staged through two buffers of ours: the caller's data is copied into our input buffer on the
//! caller's stream, a plan runs between our two buffers, and the result is copied out. The executor only ever
//! sees these two allocations, the same on every rank, so nothing is set up per torch allocation and ranks whose
//! allocators differ never disagree about a setup exchange.
//!
//! CUDA graphs: a call is captured only when the same (program, sizes, type, operator) already ran eagerly, so
//! its context and device plan exist and capture allocates nothing; otherwise the caller falls back. Every
//! decision depends only on the sequence of calls, so it is the same on every rank. A capture on another stream
//! than the previous call's does not wait for it (a capture cannot wait on work recorded outside it; torch's
//! `torch.cuda.graph` synchronizes the device before capturing).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use mscclpp_exec::GpuBuffer;
use mscclpp_exec::executor::{ExecutionPlan, Executor};
use mscclpp_lang::plan::{Collective, ReduceOp};
use mscclpp_lang::registry::{self, ProgramMeta, Request};
use mscclpp_sys::driver::{Device, DevicePtr, Event, RawStream, Stream};
use mscclpp_sys::interpreter::PacketType;

use crate::errors::{Res, err, unsupported};
use crate::types::DataType;

/// Default bytes of each staging buffer.
pub const DEFAULT_STAGING: usize = 32 << 20;

/// One call.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    /// The collective.
    pub collective: Collective,
    /// Input (device address).
    pub send: DevicePtr,
    /// Output (device address).
    pub recv: DevicePtr,
    /// Input bytes of this rank.
    pub in_bytes: u64,
    /// Output bytes of this rank.
    pub out_bytes: u64,
    /// Element type.
    pub dtype: DataType,
    /// Reduction.
    pub reduce: ReduceOp,
    /// The caller's `CUstream` (0: the legacy default stream).
    pub stream: u64,
    /// The program to run (`None`: the registry's choice).
    pub program: Option<&'static ProgramMeta>,
    /// Thread blocks per rank wanted (0: the program's table).
    pub nblocks: usize,
    /// Threads per block wanted (0: the program's table).
    pub nthreads: u32,
}

/// Identity of a prepared plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    collective: Collective,
    program: Option<&'static str>,
    in_bytes: u64,
    out_bytes: u64,
    dtype: DataType,
    reduce: ReduceOp,
    nblocks: usize,
    nthreads: u32,
}

/// A plan ready to run, and whether it runs in place.
struct Prepared {
    plan: ExecutionPlan,
    inplace: bool,
}

/// What a call turned into.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Ran (queued on the caller's stream).
    Ran,
    /// Not ours (why): the caller falls back.
    Fallback(String),
}

/// The staging buffers and prepared plans of one communicator.
pub struct Staged {
    rank: usize,
    world: usize,
    device: Device,
    exec: Arc<Executor>,
    input: GpuBuffer,
    output: GpuBuffer,
    plans: HashMap<Key, Result<Prepared, String>>,
    warmed: HashSet<Key>,
    last_stream: Option<u64>,
    order: Event,
}

fn timeout() -> Duration {
    mscclpp_exec::bootstrap::default_timeout()
}

/// The plan for a call on `world` ranks: the named program or the registry's choice, trying the placements in
/// `placements` order (`true`: in place).
#[allow(clippy::too_many_arguments)]
pub fn prepare_plan(
    placements: &[bool],
    world: usize,
    collective: Collective,
    program: Option<&'static ProgramMeta>,
    in_bytes: u64,
    dtype: DataType,
    reduce: ReduceOp,
    nblocks: usize,
    nthreads: u32,
) -> Result<(ExecutionPlan, bool), String> {
    let mut reasons = Vec::new();
    for &inplace in placements {
        let request = Request::new(collective, world, in_bytes).inplace(inplace).dtype(dtype.lang());
        let threads = (nthreads > 0).then_some(nthreads);
        // The registry's choice comes sized (a tuned table's row keeps its instance count); a named program is
        // sized here by its own table.
        let (meta, target) = match program {
            Some(m) => match request.rejection(m) {
                None => {
                    match m.tuned_target(request.target().threads_per_block(threads), request.plan_message_size()) {
                        Ok(t) => (m, t),
                        Err(e) => {
                            reasons.push(e.to_string());
                            continue;
                        }
                    }
                }
                Some(r) => {
                    reasons.push(r);
                    continue;
                }
            },
            None => match registry::select(&request) {
                Ok(s) => (s.program, if threads.is_some() { s.target.threads_per_block(threads) } else { s.target }),
                Err(e) => {
                    reasons.push(e.to_string());
                    continue;
                }
            },
        };
        let target = if nblocks > 0 {
            let per =
                meta.build_plan(&target.instances(1)).map(|p| registry::max_thread_blocks(&p).max(1)).unwrap_or(1);
            target.instances((nblocks / per).max(1))
        } else {
            target
        };
        let mut plan = match meta.build_plan(&target) {
            Ok(p) => p,
            Err(e) => {
                reasons.push(e.to_string());
                continue;
            }
        };
        if reduce != ReduceOp::Sum {
            plan.set_reduce_op(reduce);
        }
        match ExecutionPlan::new(plan) {
            Ok(p) => return Ok((p, inplace)),
            Err(e) => reasons.push(e.to_string()),
        }
    }
    reasons.dedup();
    Err(reasons.join("; "))
}

impl Staged {
    /// Staging buffers of `bytes` each on the communicator's GPU.
    pub fn new(exec: Arc<Executor>, bytes: usize) -> Res<Staged> {
        let comm = exec.communicator().clone();
        let device = *comm.device();
        let input = GpuBuffer::new(&device, bytes)?;
        let output = GpuBuffer::new(&device, bytes)?;
        let order = Event::new(&device)?;
        Ok(Staged {
            rank: comm.rank(),
            world: comm.size(),
            device,
            exec,
            input,
            output,
            plans: HashMap::new(),
            warmed: HashSet::new(),
            last_stream: None,
            order,
        })
    }

    /// Bytes of each staging buffer.
    pub fn capacity(&self) -> u64 {
        self.input.len().min(self.output.len()) as u64
    }

    /// Run `call`, or say why the caller must fall back. Errors: a launch or copy that failed.
    pub fn run(&mut self, call: &Call) -> Res<Outcome> {
        let cap = self.capacity();
        if call.in_bytes == 0 || call.in_bytes > cap || call.out_bytes > cap {
            return Ok(Outcome::Fallback(format!(
                "{} B in, {} B out: outside the staging buffers (1 to {cap} B)",
                call.in_bytes, call.out_bytes
            )));
        }
        let key = Key {
            collective: call.collective,
            program: call.program.map(|p| p.name),
            in_bytes: call.in_bytes,
            out_bytes: call.out_bytes,
            dtype: call.dtype,
            reduce: call.reduce,
            nblocks: call.nblocks,
            nthreads: call.nthreads,
        };
        // SAFETY: the caller passes a live stream of this communicator's GPU (torch's current stream, or 0 for the
        // legacy default stream); the borrowed handle is never destroyed by us.
        let stream = unsafe { Stream::borrow_raw(&self.device, call.stream as usize as RawStream) };
        let capturing = stream.is_capturing()?;
        if capturing && !self.warmed.contains(&key) {
            return Ok(Outcome::Fallback(
                "captured before the same call ran eagerly (run it once outside the graph first)".into(),
            ));
        }
        // A call on another stream than the last one first waits for it (the staging buffers are shared). Not
        // inside a capture, which cannot wait on work recorded outside it: torch.cuda.graph synchronizes the
        // device before it starts capturing, so the earlier work is done by then.
        let switched = !capturing && self.last_stream.is_some_and(|s| s != call.stream);
        let world = self.world;
        let prepared = self.plans.entry(key).or_insert_with(|| {
            prepare_plan(
                &[false, true],
                world,
                call.collective,
                call.program,
                call.in_bytes,
                call.dtype,
                call.reduce,
                call.nblocks,
                call.nthreads,
            )
            .map(|(plan, inplace)| Prepared { plan, inplace })
        });
        let p = match prepared {
            Ok(p) => p,
            Err(reason) => return Ok(Outcome::Fallback(reason.clone())),
        };
        let (rank, si, so) = (self.rank as u64, self.input.ptr(), self.output.ptr());
        let (inb, outb) = (call.in_bytes, call.out_bytes);
        let (copy_in, input, output, copy_out) = match (p.inplace, call.collective) {
            (false, _) => (si, si, so, so),
            (true, Collective::AllGather) => (so + rank * inb, so + rank * inb, so, so),
            (true, Collective::ReduceScatter) => (so, so, so + rank * outb, so + rank * outb),
            (true, _) => (so, so, so, so),
        };
        if switched && let Some(prev) = self.last_stream {
            // SAFETY: the previous call's stream; a caller keeps a stream alive while it uses it with us (a
            // destroyed one makes the record fail, reported as an error).
            let prev = unsafe { Stream::borrow_raw(&self.device, prev as usize as RawStream) };
            self.order.record(&prev)?;
            self.order.wait_on(&stream)?;
        }
        stream.copy_d2d(copy_in, call.send, inb as usize)?;
        self.exec.execute(&p.plan, input, output, inb, outb, call.dtype.element(), PacketType::Ll16, &stream)?;
        stream.copy_d2d(call.recv, copy_out, outb as usize)?;
        self.warmed.insert(key);
        self.last_stream = Some(call.stream);
        Ok(Outcome::Ran)
    }
}

impl Drop for Staged {
    /// Our kernels may still run on the caller's stream: wait (bounded) before the buffers are freed.
    fn drop(&mut self) {
        if let Some(last) = self.last_stream {
            // SAFETY: the last call's stream; one the caller already destroyed makes the record fail, and then
            // nothing of ours is left to wait for on it.
            let stream = unsafe { Stream::borrow_raw(&self.device, last as usize as RawStream) };
            if self.order.record(&stream).is_ok() {
                let _ = self.order.synchronize(timeout());
            }
        }
    }
}

/// Check a zero-copy run's arguments and run `plan` directly on the caller's buffers.
#[allow(clippy::too_many_arguments)]
pub fn run_direct(
    exec: &Executor,
    plan: &ExecutionPlan,
    send: DevicePtr,
    recv: DevicePtr,
    in_bytes: u64,
    out_bytes: u64,
    dtype: DataType,
    stream: u64,
) -> Res<()> {
    if send == 0 || recv == 0 {
        return Err(err("a buffer pointer is 0: pass tensor.data_ptr() of a CUDA tensor"));
    }
    let device = *exec.communicator().device();
    // SAFETY: the caller passes a live stream of this communicator's GPU (or 0 for the legacy default stream).
    let stream = unsafe { Stream::borrow_raw(&device, stream as usize as RawStream) };
    exec.execute(plan, send, recv, in_bytes, out_bytes, dtype.element(), PacketType::Ll16, &stream).map_err(|e| {
        let text = e.to_string();
        if text.contains("is for") || text.contains("range") || text.contains("split") {
            unsupported(text)
        } else {
            e.into()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_torch_collectives_have_plans_in_their_window() {
        let mut checked = 0;
        for world in [2usize, 4, 8] {
            for dtype in [DataType::float16, DataType::bfloat16, DataType::float32] {
                for piece in [1024u64, 32 << 10, 256 << 10] {
                    for (c, in_bytes) in [
                        (Collective::AllReduce, piece),
                        (Collective::AllGather, piece),
                        (Collective::ReduceScatter, piece * world as u64),
                        (Collective::Broadcast, piece),
                    ] {
                        let (p, _) = prepare_plan(&[false, true], world, c, None, in_bytes, dtype, ReduceOp::Sum, 0, 0)
                            .unwrap_or_else(|e| panic!("{c:?} {in_bytes} B {dtype:?} on {world} ranks: {e}"));
                        assert_eq!(p.plan().world_size(), world);
                        assert_eq!(p.plan().collective, c);
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 3 * 3 * 3 * 4);
    }

    #[test]
    fn a_named_program_outside_its_range_says_why() {
        let meta = registry::find("allreduce_oneshot_ll").expect("registered");
        let err = prepare_plan(
            &[false, true],
            2,
            Collective::AllReduce,
            Some(meta),
            1 << 30,
            DataType::float16,
            ReduceOp::Sum,
            0,
            0,
        )
        .expect_err("1 GiB is outside the one-shot LL range");
        assert!(!err.is_empty());
        let (p, _) = prepare_plan(
            &[false, true],
            2,
            Collective::AllReduce,
            Some(meta),
            4096,
            DataType::float16,
            ReduceOp::Max,
            0,
            0,
        )
        .expect("4 KiB fits");
        assert_eq!(mscclpp_lang::verify::plan_reduce_op(p.plan()), ReduceOp::Max);
        let (wide, _) = prepare_plan(
            &[false, true],
            2,
            Collective::AllReduce,
            Some(meta),
            64 << 10,
            DataType::float16,
            ReduceOp::Sum,
            8,
            0,
        )
        .expect("8 thread blocks");
        assert!(registry::max_thread_blocks(wide.plan()) >= 2);
    }
}
