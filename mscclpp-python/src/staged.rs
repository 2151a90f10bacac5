//! The collectives behind `mscclpp.torch` and `Algorithm.execute` on staging: one call of a collective on a
//! torch stream, run by the shared runtime `mscclpp_exec::frontend` (the NCCL-ABI library's too): zero copy on
//! the caller's tensors where the plan allows it, registered tensors (agreed between the ranks) or staging
//! buffers otherwise, eagerly or inside a CUDA graph capture (a call first captured sets up what it needs in the
//! relaxed capture mode). The plan for a call is the named program or the registry's choice, and depends only on
//! the call's collective, sizes, type, operator and launch shape, so every rank chooses alike.

use std::sync::Arc;

use mscclpp_exec::executor::{ExecutionPlan, Executor};
use mscclpp_exec::frontend::{self, Decline, Frontend, PlanSource, Prepared, Settings};
use mscclpp_lang::plan::{Collective, ReduceOp};
use mscclpp_lang::registry::{self, ProgramMeta, Request};
use mscclpp_sys::driver::{DevicePtr, RawStream, Stream};
use mscclpp_sys::interpreter::PacketType;

use crate::errors::{Res, err};
use crate::types::DataType;

/// Default bytes each staging buffer may grow to.
pub const DEFAULT_STAGING: usize = 512 << 20;

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

/// What a call turned into.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Ran (queued on the caller's stream).
    Ran,
    /// Not ours (why): the caller falls back.
    Fallback(String),
}

/// The collectives of one communicator, on the shared runtime (`mscclpp_exec::frontend`: zero copy, registered
/// buffers or staging, eager and in CUDA graphs, as the NCCL-ABI library runs them).
pub struct Staged {
    frontend: Frontend<Key>,
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
) -> Result<(ExecutionPlan, bool), Decline> {
    let mut reasons = Vec::new();
    for &inplace in placements {
        let request = Request::new(collective, world, in_bytes).inplace(inplace).dtype(dtype.lang());
        let threads = (nthreads > 0).then_some(nthreads);
        // The registry's choice comes sized (a tuned table's row keeps its instance count); a named program is
        // sized here by its own table.
        let (meta, target) = match program {
            Some(m) => match request.clone().naming(m).rejection(m) {
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
                    reasons.push(r.to_string());
                    continue;
                }
            },
            None => match mscclpp_exec::tune::select(&request) {
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
    Err(Decline::NoPlan(reasons.join("; ")))
}

impl Staged {
    /// The collectives of `exec`'s communicator; staging buffers grow up to `bytes` each.
    pub fn new(exec: Arc<Executor>, bytes: usize) -> Res<Staged> {
        let world = exec.communicator().size();
        let source: PlanSource<Key> = Box::new(move |k: &Key| {
            // The registry's choice yields where this machine's tuned table measured NCCL faster (a named program
            // is the caller's choice and runs).
            if k.program.is_none()
                && frontend::window::table_prefers_fallback(k.collective, world, k.in_bytes, k.dtype.lang())
            {
                return Err(Decline::FallbackFaster);
            }
            let program = match k.program {
                Some(name) => Some(registry::find(name).map_err(|e| Decline::NoPlan(e.to_string()))?),
                None => None,
            };
            // torch's all-reduce and broadcast run in place, its all-gather and reduce-scatter out of place: that
            // placement first, so the usual call runs on the caller's buffers.
            let usual = matches!(k.collective, Collective::AllReduce | Collective::Broadcast);
            let (plan, inplace) = prepare_plan(
                &[usual, !usual],
                world,
                k.collective,
                program,
                k.in_bytes,
                k.dtype,
                k.reduce,
                k.nblocks,
                k.nthreads,
            )?;
            Ok(Prepared { plan, inplace, plan_bytes: k.in_bytes })
        });
        let settings = Settings { staging_max: bytes as u64, ..Settings::default() };
        Ok(Staged { frontend: Frontend::new(exec, source, settings)? })
    }

    /// Run `call`, or say why the caller must fall back. Errors: a launch, copy or setup that failed.
    pub fn run(&mut self, call: &Call) -> Res<Outcome> {
        if call.in_bytes == 0 || call.out_bytes == 0 {
            return Ok(Outcome::Fallback(format!("{} B in, {} B out: nothing to run", call.in_bytes, call.out_bytes)));
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
        let fc = frontend::Call {
            key,
            collective: call.collective,
            send: call.send,
            recv: call.recv,
            in_bytes: call.in_bytes,
            out_bytes: call.out_bytes,
            elem: call.dtype.element(),
            root: 0,
            stream: call.stream,
        };
        Ok(match self.frontend.run(&fc)? {
            frontend::Outcome::Ran(_) => Outcome::Ran,
            frontend::Outcome::Fallback(why) => Outcome::Fallback(why.to_string()),
        })
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
    // A plan that cannot take this call becomes `mscclpp.UnsupportedError` (the error's kind, see errors.rs).
    Ok(exec.execute(plan, send, recv, in_bytes, out_bytes, dtype.element(), PacketType::Ll16, &stream)?)
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
        assert!(
            matches!(&err, Decline::NoPlan(why) if why.contains("allreduce_oneshot_ll") || why.contains("messages")),
            "{err}"
        );
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
