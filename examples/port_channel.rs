//! Port channels through the proxy service: every rank puts its slice to every peer with
//! putWithSignalAndFlush, then waits for theirs, and checks all slices. Then port-channel bandwidth
//! (put + flush) and putWithSignal round-trip latency.
//!
//! `mpirun -np 2 target/release/examples/port_channel`

mod common;

use std::sync::Arc;

use common::{Setup, human, main_with, result, verify};
use mscclpp_exec::sys::driver::{KernelArgs, LaunchConfig};
use mscclpp_exec::{DeviceArray, GpuBuffer, ProxyService, Result};

fn run() -> Result<()> {
    let s = Setup::from_env()?;
    let (rank, n) = (s.rank(), s.size());
    let slice = 64usize << 20;
    let total = slice * n;
    let buf = GpuBuffer::new(s.ctx.device(), total)?;
    let reg = s.comm.register(&buf)?;
    let mut proxy = ProxyService::new(s.ctx.device())?;
    let src_id = proxy.add_memory(&reg)?;
    let mut handles = Vec::new();
    for peer in (0..n).filter(|p| *p != rank) {
        let conn = s.comm.connect(peer, 0)?;
        let sem = s.comm.build_host_semaphore(&conn, 0)?;
        let remote = s.comm.exchange_memory(&reg, peer, 0)?;
        let sem_id = proxy.add_semaphore(sem)?;
        let dst_id = proxy.add_remote_memory(Arc::clone(&remote))?;
        handles.push(proxy.port_channel(sem_id, dst_id, src_id)?);
    }
    proxy.start()?;
    let chans = DeviceArray::from_slice(s.ctx.device(), &handles)?;

    // 1. The exchange: our slice is rank * slice.
    let seed = |r: usize| 0x5eed_0000 + r as u32;
    // Fill only our slice: fill a scratch buffer then copy is simpler through the pattern kernel on a view.
    {
        let mut a = KernelArgs::new();
        a.push(buf.ptr() + (rank * slice) as u64).push((slice / 4) as u64).push(seed(rank));
        s.launch("mscclpp_fill_pattern", LaunchConfig::linear(264, 1024), &a)?;
        s.sync()?;
    }
    s.barrier()?;
    let mut a = KernelArgs::new();
    a.push(chans.ptr()).push((n - 1) as i32).push(rank as i32).push(slice as u64);
    s.launch("mscclpp_port_exchange", LaunchConfig::linear(1, 32), &a)?;
    s.sync()?;
    proxy.check()?;
    for r in 0..n {
        let errors = s.check(&buf, r * slice, slice, seed(r))?;
        verify(&format!("slice of rank {r}"), rank, errors)?;
    }
    s.barrier()?;
    if rank == 0 {
        println!("port_channel: exchange of {} slices verified on {n} ranks", human(slice));
    }

    // 2. Bandwidth and latency between ranks 0 and 1 (channel 0 of each is to the other when n == 2).
    if n == 2 {
        let ch0 = DeviceArray::from_slice(s.ctx.device(), &handles[..1])?;
        for bytes in [1usize << 20, 16 << 20, 64 << 20] {
            let iters = 20;
            s.barrier()?;
            if rank == 0 {
                let ms = s.time_ms(|| {
                    let mut a = KernelArgs::new();
                    a.push(ch0.ptr()).push(bytes as u64).push(iters);
                    s.launch("mscclpp_port_put", LaunchConfig::linear(1, 1), &a)
                })?;
                let gbps = bytes as f64 * iters as f64 / (ms * 1e6);
                println!("port_channel put+flush {:>7}: {gbps:.1} GB/s", human(bytes));
                result(&format!("port_channel_put_{}", human(bytes)), gbps, "GB/s");
            }
            s.barrier()?;
        }
        // 256 MiB over the whole buffer: put the two slices (2 x 64 MiB would be smaller), so use a bigger one.
        let big = 256usize << 20;
        let big_buf = GpuBuffer::new(s.ctx.device(), big)?;
        let big_reg = s.comm.register(&big_buf)?;
        let big_remote = s.comm.exchange_memory(&big_reg, 1 - rank, 9)?;
        drop(chans);
        proxy.stop()?;
        let mut proxy2 = ProxyService::new(s.ctx.device())?;
        let conn = s.comm.connect(1 - rank, 9)?;
        let sem = s.comm.build_host_semaphore(&conn, 9)?;
        let sem_id = proxy2.add_semaphore(sem)?;
        let src = proxy2.add_memory(&big_reg)?;
        let dst = proxy2.add_remote_memory(big_remote)?;
        let h = proxy2.port_channel(sem_id, dst, src)?;
        proxy2.start()?;
        let ch = DeviceArray::from_slice(s.ctx.device(), &[h])?;
        s.barrier()?;
        if rank == 0 {
            let iters = 10;
            let mut a = KernelArgs::new();
            a.push(ch.ptr()).push(big as u64).push(1i32);
            s.launch("mscclpp_port_put", LaunchConfig::linear(1, 1), &a)?;
            s.sync()?;
            let ms = s.time_ms(|| {
                let mut a = KernelArgs::new();
                a.push(ch.ptr()).push(big as u64).push(iters);
                s.launch("mscclpp_port_put", LaunchConfig::linear(1, 1), &a)
            })?;
            let gbps = big as f64 * iters as f64 / (ms * 1e6);
            println!("port_channel put+flush {:>7}: {gbps:.1} GB/s", human(big));
            result("port_channel_put_256MiB", gbps, "GB/s");
        }
        s.barrier()?;
        // putWithSignal round trip: 1 KiB, and 0 bytes (signal only) to separate the copy from the signal.
        let iters = 2000;
        for bytes in [1024u64, 0] {
            let pp = |it: i32| -> Result<()> {
                let mut a = KernelArgs::new();
                a.push(ch.ptr()).push(rank as i32).push(it).push(bytes);
                s.launch("mscclpp_port_ping_pong", LaunchConfig::linear(1, 1), &a)
            };
            pp(100)?;
            s.sync()?;
            s.barrier()?;
            let before = proxy2.stats();
            let ms = s.time_ms(|| pp(iters))?;
            let after = proxy2.stats();
            let n = (after.triggers - before.triggers).max(1) as f64;
            println!(
                "rank {rank}: proxy per trigger: queue copy {:.2} us, queue signal {:.2} us",
                (after.data_ns - before.data_ns) as f64 / n / 1e3,
                (after.flag_ns - before.flag_ns) as f64 / n / 1e3
            );
            if rank == 0 {
                let rt = ms * 1000.0 / iters as f64;
                let name = if bytes == 0 { "0B".to_string() } else { human(bytes as usize) };
                println!("port_channel putWithSignal {name} round trip: {rt:.2} us");
                result(&format!("port_channel_put_with_signal_round_trip_{name}"), rt, "us");
            }
            s.barrier()?;
        }
        proxy2.stop()?;
    }
    proxy.stop()?;
    if rank == 0 {
        println!("port_channel: done");
    }
    Ok(())
}

fn main() {
    main_with("port_channel", run);
}
