//! Memory-channel bandwidth: put and get, 1 KiB to 1 GiB, one direction and both directions, in GB/s; every
//! size is checked.
//!
//! `mpirun -np 2 target/release/examples/memory_channel_bw [max_bytes]`

mod common;

use common::{Setup, human, main_with, result, verify};
use mscclpp_exec::sys::driver::{KernelArgs, LaunchConfig};
use mscclpp_exec::{DeviceArray, GpuBuffer, Result};

fn run() -> Result<()> {
    let s = Setup::from_env()?;
    let (rank, size) = (s.rank(), s.size());
    if size != 2 {
        return Err(mscclpp_exec::Error::InvalidArgument("memory_channel_bw runs on exactly 2 ranks".into()));
    }
    let peer = 1 - rank;
    let max: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1 << 30);
    // A: local source of puts / destination of gets. B: what the peer puts into / gets from.
    let a_buf = GpuBuffer::new(s.ctx.device(), max)?;
    let b_buf = GpuBuffer::new(s.ctx.device(), max)?;
    let a_reg = s.comm.register(&a_buf)?;
    let b_reg = s.comm.register(&b_buf)?;
    // Channel: src_ = our A, dst_ = peer's B.
    let conn = s.comm.connect(peer, 1)?;
    let sem = s.comm.build_memory_semaphore(&conn, 1)?;
    s.comm.send_memory(&b_reg, peer, 1)?;
    let peer_b = s.comm.recv_memory(peer, 1)?;
    let ch = mscclpp_exec::MemoryChannel::new(sem, peer_b, &a_reg, None)?;
    let handles = DeviceArray::from_slice(s.ctx.device(), &[ch.device_handle()])?;
    let sms = s.ctx.device().multiprocessor_count()? as u32;

    if rank == 0 {
        println!("{:>8} {:>5} {:>4} {:>10} {:>10}", "size", "op", "dir", "GB/s", "us/iter");
    }
    let mut bytes = 1024usize;
    while bytes <= max {
        for mode in [0i32, 1] {
            for bidir in [false, true] {
                let op = if mode == 0 { "put" } else { "get" };
                let dir = if bidir { "bi" } else { "uni" };
                let active = bidir || rank == 0;
                // Put: the active side fills A, the peer checks B. Get: the peer fills B, the active side checks A.
                let seed = (bytes as u32).wrapping_mul(31) ^ (mode as u32 * 7) ^ (rank as u32);
                let peer_seed = (bytes as u32).wrapping_mul(31) ^ (mode as u32 * 7) ^ (peer as u32);
                if mode == 0 {
                    s.fill(&a_buf, bytes, seed)?;
                    b_buf.fill(0)?;
                } else {
                    s.fill(&b_buf, bytes, seed)?;
                    a_buf.fill(0)?;
                }
                s.barrier()?;
                let blocks = (bytes.div_ceil(1024 * 16 * 4) as u32).clamp(1, 2 * sms);
                let iters = ((4usize << 30) / bytes).clamp(5, 2000) as i32;
                let launch = || -> Result<()> {
                    let mut a = KernelArgs::new();
                    a.push(handles.ptr()).push(bytes as u64).push(mode);
                    s.launch("mscclpp_memory_copy_sliced", LaunchConfig::linear(blocks, 1024), &a)
                };
                let mut ms = 0.0;
                if active {
                    launch()?;
                    s.sync()?;
                    ms = s.time_ms(|| {
                        for _ in 0..iters {
                            launch()?;
                        }
                        Ok(())
                    })?;
                }
                s.barrier()?;
                // Verify.
                let errors = if mode == 0 {
                    // We received the peer's A in our B if the peer was active.
                    if bidir || rank == 1 { s.check(&b_buf, 0, bytes, peer_seed)? } else { 0 }
                } else if active {
                    s.check(&a_buf, 0, bytes, peer_seed)?
                } else {
                    0
                };
                verify(&format!("{op} {dir} {}", human(bytes)), rank, errors)?;
                if rank == 0 {
                    let per_iter_us = ms * 1000.0 / iters as f64;
                    let gbps = bytes as f64 / (per_iter_us * 1e3);
                    println!("{:>8} {op:>5} {dir:>4} {gbps:>10.1} {per_iter_us:>10.2}", human(bytes));
                    result(&format!("memory_channel_{op}_{dir}_{}", human(bytes)), gbps, "GB/s");
                }
                s.barrier()?;
            }
        }
        bytes *= 4;
    }
    if rank == 0 {
        println!("memory_channel_bw: all sizes verified");
    }
    Ok(())
}

fn main() {
    main_with("memory_channel_bw", run);
}
