//! An allreduce through the executor, under mpirun or torchrun (one process per GPU):
//!
//! ```text
//! mpirun -np 2 target/release/examples/allreduce [SIZE_BYTES] [PLAN_NAME_OR_FILE] [INSTANCES]
//! ```
//!
//! Asks the registry (`registry::select`) for the program of an in-place f32 all-reduce at the world size and
//! message size (or takes the given plan), fills each rank's buffer with rank-dependent integers, runs it once and
//! checks the sum, then times 100 launches. Without INSTANCES the program's `thread_blocks` table sizes the plan
//! to the message (as `mscclpp test` does).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mscclpp_algorithms as _;
use mscclpp_exec::executor::{ExecutionPlan, Executor};
use mscclpp_exec::sys::driver::{Event, Stream};
use mscclpp_exec::sys::interpreter::{ElementType, PacketType};
use mscclpp_exec::{Communicator, GpuBuffer};
use mscclpp_lang::data::DataType;
use mscclpp_lang::plan::{Collective, read_plan};
use mscclpp_lang::registry::{self, Request, Target};

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let size: u64 = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(1 << 20);
    // Instances (and threads per block): given, or chosen by the program's table for this size.
    let instances: Option<usize> = args.get(3).map(|s| s.parse()).transpose()?;
    let (comm, _) = Communicator::from_env()?;
    let comm = Arc::new(comm);
    let (rank, world) = (comm.rank(), comm.size());
    let build = |meta: &registry::ProgramMeta| -> Result<_, Box<dyn std::error::Error>> {
        let base = Target::new(world).inplace(true);
        let target = match instances {
            Some(k) => base.instances(k),
            None => meta.tuned_target(base, size)?,
        };
        Ok(meta.build_plan(&target)?)
    };
    let plan = match args.get(2) {
        Some(p) if p.ends_with(".json") => read_plan(p)?,
        Some(name) => build(registry::find(name)?)?,
        None => {
            // The program a library call for this all-reduce gets (its error lists why each was passed over).
            let request = Request::new(Collective::AllReduce, world, size).inplace(true).dtype(DataType::F32);
            build(registry::select(&request)?.program)?
        }
    };
    let name = plan.name.clone();
    let exec = Executor::new(comm.clone())?;
    let plan = ExecutionPlan::new(plan)?;
    let buf = GpuBuffer::new(comm.device(), size as usize)?;
    let stream = Stream::new(comm.device())?;
    let n = (size / 4) as usize;
    // Element i of rank r holds r + i % 1000: the sum over ranks is exact in f32.
    let mine: Vec<u8> = (0..n).flat_map(|i| ((rank + i % 1000) as f32).to_le_bytes()).collect();
    buf.write(0, &mine)?;
    comm.bootstrap().barrier()?;
    exec.execute(&plan, buf.ptr(), buf.ptr(), size, size, ElementType::F32, PacketType::Ll16, &stream)?;
    exec.synchronize(&stream)?;
    let mut got = vec![0u8; size as usize];
    buf.read(0, &mut got)?;
    let mut ok = true;
    for i in 0..n {
        let want: f32 = (0..world).map(|r| (r + i % 1000) as f32).sum();
        let g = f32::from_le_bytes([got[4 * i], got[4 * i + 1], got[4 * i + 2], got[4 * i + 3]]);
        if g != want {
            eprintln!("rank {rank}: element {i}: expected {want}, got {g}");
            ok = false;
            break;
        }
    }
    let iters = 100;
    let start = Event::new(comm.device())?;
    let end = Event::new(comm.device())?;
    comm.bootstrap().barrier()?;
    start.record(&stream)?;
    for _ in 0..iters {
        exec.execute(&plan, buf.ptr(), buf.ptr(), size, size, ElementType::F32, PacketType::Ll16, &stream)?;
    }
    end.record(&stream)?;
    exec.synchronize(&stream)?;
    end.synchronize(Duration::from_secs(60))?;
    let us = end.elapsed_ms_since(&start)? as f64 * 1000.0 / iters as f64;
    if rank == 0 {
        println!(
            "allreduce plan={name} ranks={world} size={size} f32 check={} us_per_call={us:.2} busbw_GBps={:.2}",
            if ok { "ok" } else { "WRONG" },
            size as f64 / (us * 1e3) * 2.0 * (world as f64 - 1.0) / world as f64
        );
    }
    Ok(ok)
}
