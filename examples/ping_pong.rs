//! Memory-channel ping-pong between rank pairs (0↔1, 2↔3, ...): signal/wait one-way latency, then a data check.
//!
//! `mpirun -np 2 target/release/examples/ping_pong` or `torchrun --no-python --nproc-per-node 2 ...`

mod common;

use common::{Setup, main_with, result, verify};
use mscclpp_exec::sys::driver::{KernelArgs, LaunchConfig};
use mscclpp_exec::{DeviceArray, GpuBuffer, Result};

fn run() -> Result<()> {
    let s = Setup::from_env()?;
    let (rank, size) = (s.rank(), s.size());
    if size % 2 != 0 {
        return Err(mscclpp_exec::Error::InvalidArgument("ping_pong needs an even number of ranks".into()));
    }
    let peer = rank ^ 1;
    let bytes = 1 << 20;
    let buf = GpuBuffer::new(s.ctx.device(), bytes)?;
    let local = s.comm.register(&buf)?;
    let ch = s.comm.memory_channel(peer, 0, &local, None)?;
    let handles = DeviceArray::from_slice(s.ctx.device(), &[ch.device_handle()])?;
    let pp = |iters: i32| -> Result<()> {
        let mut a = KernelArgs::new();
        a.push(handles.ptr()).push((rank % 2) as i32).push(iters);
        s.launch("mscclpp_ping_pong", LaunchConfig::linear(1, 1), &a)
    };
    s.barrier()?;
    pp(1000)?;
    s.sync()?;
    s.barrier()?;
    let iters = 20000;
    let ms = s.time_ms(|| pp(iters))?;
    let one_way_us = ms * 1000.0 / (2.0 * iters as f64);
    if rank == 0 {
        println!("ping_pong: {iters} round trips, one-way signal->wait latency {one_way_us:.3} us");
        result("memory_channel_signal_wait_one_way", one_way_us, "us");
    }
    // Data check: each rank puts a pattern into its peer's buffer, then a device barrier on the channel.
    s.fill(&buf, bytes, 1000 + rank as u32)?;
    s.barrier()?;
    // Put the first half of our buffer into the second half of the peer's.
    let mut a = KernelArgs::new();
    a.push(handles.ptr()).push(bytes as u64 / 2).push(0u64).push(bytes as u64 / 2).push(0i32);
    s.launch("mscclpp_memory_copy", LaunchConfig::linear(32, 1024), &a)?;
    let mut b = KernelArgs::new();
    b.push(handles.ptr());
    s.launch("mscclpp_channel_barrier", LaunchConfig::linear(1, 1), &b)?;
    s.sync()?;
    s.barrier()?;
    // After the put, the second half of our buffer holds the first half of the peer's pattern.
    let errors = s.check(&buf, bytes / 2, bytes / 2, 1000 + peer as u32)?;
    verify("ping_pong data check", rank, errors)?;
    s.barrier()?;
    if rank == 0 {
        println!("ping_pong: data check passed");
    }
    Ok(())
}

fn main() {
    main_with("ping_pong", run);
}
