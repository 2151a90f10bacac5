//! An all-reduce through the MPI bootstrap (feature `mpi`): MPI gives the ranks and carries the setup messages;
//! the GPU data moves through the executor as with any other bootstrap. The GPU suite's `launchers` part runs it.
//!
//! ```text
//! mscclpp plan allreduce_twoshot --world-size 2 --in-place -o ar.json
//! mpirun -np 2 target/release/examples/mpi_allreduce ar.json 1048576
//! ```
//!
//! Runs 20 in-place f32 all-reduces of SIZE bytes, every element of every result checked, and prints
//! `mpi_allreduce: rank R of N: ... OK`; exits 1 on a wrong result or an error.

use std::process::ExitCode;
use std::sync::Arc;

use mscclpp_exec::bootstrap::{Bootstrap, MpiBootstrap, default_timeout};
use mscclpp_exec::executor::{ExecutionPlan, Executor};
use mscclpp_exec::sys::driver::{Device, Stream};
use mscclpp_exec::sys::interpreter::{ElementType, PacketType};
use mscclpp_exec::{Communicator, GpuBuffer};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const LAUNCHES: usize = 20;

fn run(plan_path: &str, bytes: u64) -> Res<String> {
    let boot = MpiBootstrap::new(default_timeout())?;
    let (rank, world) = (boot.rank(), boot.size());
    let local = mscclpp_exec::env::local_rank(rank);
    let device = Device::open(mscclpp_exec::env::gpu_ordinal(local)?)?;
    let comm = Arc::new(Communicator::new(Arc::new(boot), device)?);
    let plan = ExecutionPlan::from_file(plan_path)?;
    if !plan.plan().inplace {
        return Err(
            format!("{plan_path} is an out-of-place plan; generate it with `mscclpp plan ... --in-place`").into()
        );
    }
    let exec = Executor::new(comm.clone())?;
    let stream = Stream::new(comm.device())?;
    let buf = GpuBuffer::new(comm.device(), bytes as usize)?;
    let n = bytes as usize / 4;
    for k in 0..LAUNCHES {
        let data: Vec<u8> = (0..n).flat_map(|i| ((rank + (i + k) % 1000) as f32).to_le_bytes()).collect();
        buf.write(0, &data)?;
        comm.bootstrap().barrier()?;
        exec.execute(&plan, buf.ptr(), buf.ptr(), bytes, bytes, ElementType::F32, PacketType::Ll16, &stream)?;
        exec.synchronize(&stream)?;
        let mut got = vec![0u8; bytes as usize];
        buf.read(0, &mut got)?;
        let wrong = got
            .chunks_exact(4)
            .enumerate()
            .filter(|(i, c)| {
                let want: f32 = (0..world).map(|r| (r + (i + k) % 1000) as f32).sum();
                f32::from_le_bytes([c[0], c[1], c[2], c[3]]) != want
            })
            .count();
        if wrong > 0 {
            return Err(format!("launch {k}: {wrong} of {n} elements wrong").into());
        }
    }
    comm.bootstrap().barrier()?;
    Ok(format!(
        "mpi_allreduce: rank {rank} of {world} (local rank {local}, GPU {}): {LAUNCHES} checked launches of `{}`, \
         {bytes} B: OK",
        comm.device().ordinal(),
        plan.plan().name
    ))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(bytes)) = (args.get(1), args.get(2).and_then(|s| s.parse::<u64>().ok())) else {
        eprintln!("usage: mpi_allreduce PLAN.json SIZE_BYTES (an in-place allreduce plan; SIZE a multiple of 4)");
        return ExitCode::from(2);
    };
    match run(path, bytes) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mpi_allreduce: FAIL: {e}");
            ExitCode::from(1)
        }
    }
}
