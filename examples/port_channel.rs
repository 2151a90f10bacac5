//! Port channels through the proxy service: every rank puts its slice to every peer with
//! putWithSignalAndFlush, then waits for theirs, and checks all slices. Then port-channel bandwidth
//! (put + flush) and putWithSignal round-trip latency.
//!
//! `mpirun -np 2 target/release/examples/port_channel`

mod common;

use common::{Setup, human, main_with, result, verify};
use mscclpp_exec::sys::driver::{KernelArgs, LaunchConfig};
use mscclpp_exec::sys::handles::PortChannelDeviceHandle;
use mscclpp_exec::{DeviceArray, GpuBuffer, ProxyService, RegisteredMemory, Result};

/// A started proxy service (keeping statistics) with one port channel per peer in `peers`, from `reg` to the
/// peer's registration of its own buffer; connections, semaphores and registrations under `tag`. `direct_max`
/// overrides the direct-path limit.
fn port_channels(
    s: &Setup,
    reg: &RegisteredMemory,
    peers: &[usize],
    tag: u64,
    direct_max: Option<u64>,
) -> Result<(ProxyService, Vec<PortChannelDeviceHandle>)> {
    let mut proxy = ProxyService::new(s.ctx.device())?;
    proxy.enable_stats()?;
    if let Some(bytes) = direct_max {
        proxy.set_direct_max(bytes)?;
    }
    let src = proxy.add_memory(reg)?;
    let mut handles = Vec::new();
    for &peer in peers {
        let conn = s.comm.connect(peer, tag)?;
        let sem = s.comm.build_host_semaphore(&conn, tag)?;
        let remote = s.comm.exchange_memory(reg, peer, tag)?;
        let sem_id = proxy.add_semaphore(sem)?;
        let dst = proxy.add_remote_memory(remote)?;
        handles.push(proxy.port_channel(sem_id, dst, src)?);
    }
    proxy.start()?;
    Ok((proxy, handles))
}

/// The exchange: every rank fills its `slice` bytes at `rank * slice` of `buf` with the pattern `seed(rank)`,
/// puts them to every peer over `chans` (putWithSignalAndFlush, then wait) and checks every rank's slice.
/// Returns the triggers the proxy handled meanwhile.
fn exchange(
    s: &Setup,
    proxy: &ProxyService,
    chans: &DeviceArray<PortChannelDeviceHandle>,
    buf: &GpuBuffer,
    slice: usize,
    seed: impl Fn(usize) -> u32,
) -> Result<u64> {
    let (rank, n) = (s.rank(), s.size());
    s.fill_at(buf, rank * slice, slice, seed(rank))?;
    s.sync()?;
    s.barrier()?;
    let before = proxy.handled();
    let mut a = KernelArgs::new();
    a.push(chans.ptr()).push((n - 1) as i32).push(rank as i32).push(slice as u64);
    s.launch("mscclpp_port_exchange", LaunchConfig::linear(1, 32), &a)?;
    s.sync()?;
    proxy.check()?;
    for r in 0..n {
        let errors = s.check(buf, r * slice, slice, seed(r))?;
        verify(&format!("{} slice of rank {r}", human(slice)), rank, errors)?;
    }
    let through_proxy = proxy.handled() - before;
    s.barrier()?;
    Ok(through_proxy)
}

fn run() -> Result<()> {
    let s = Setup::from_env()?;
    let (rank, n) = (s.rank(), s.size());
    let slice = 64usize << 20;
    let total = slice * n;
    let buf = GpuBuffer::new(s.ctx.device(), total)?;
    let reg = s.comm.register(&buf)?;
    let peers: Vec<usize> = (0..n).filter(|p| *p != rank).collect();
    let (mut proxy, handles) = port_channels(&s, &reg, &peers, 0, None)?;
    let chans = DeviceArray::from_slice(s.ctx.device(), &handles)?;

    // 1. The exchange: our slice is rank * slice.
    exchange(&s, &proxy, &chans, &buf, slice, |r| 0x5eed_0000 + r as u32)?;
    if rank == 0 {
        println!("port_channel: exchange of {} slices verified on {n} ranks", human(slice));
    }

    // 1b. The same exchange with 1 KiB slices: small enough for the direct path (the GPU thread copies over
    // NVLink and signals the peer's direct token; no proxy round trip).
    let small = 1024usize;
    let seed_small = |r: usize| 0x5a11_0000 + r as u32;
    let through_proxy = exchange(&s, &proxy, &chans, &buf, small, seed_small)?;
    if rank == 0 {
        println!(
            "port_channel: exchange of 1KiB slices verified on {n} ranks ({through_proxy} triggers through the proxy)"
        );
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
        // Ordering of the two paths: a large put through the proxy, then a small putWithSignal that must not take
        // the direct path (and signal) before the large one has landed.
        {
            let big = 32usize << 20;
            let seed_big = |r: usize| 0x0bd0_0000 + r as u32;
            s.fill(&buf, 2 * big + 2 * small, 0)?;
            s.fill_at(&buf, rank * big, big, seed_big(rank))?;
            s.fill_at(&buf, 2 * big + rank * small, small, seed_small(rank))?;
            s.sync()?;
            let result = GpuBuffer::new(s.ctx.device(), 8)?;
            s.barrier()?;
            let mut a = KernelArgs::new();
            a.push(ch0.ptr())
                .push(buf.ptr())
                .push(rank as i32)
                .push(big as u64)
                .push(small as u64)
                .push(seed_big(1 - rank))
                .push(result.ptr());
            s.launch("mscclpp_port_order_check", LaunchConfig::linear(1, 32), &a)?;
            s.sync()?;
            proxy.check()?;
            let mut out = [0u8; 4];
            result.read(0, &mut out)?;
            verify("large put landed before the small put's signal", rank, u32::from_le_bytes(out) as u64)?;
            let errors = s.check(&buf, (1 - rank) * big, big, seed_big(1 - rank))?
                + s.check(&buf, 2 * big + (1 - rank) * small, small, seed_small(1 - rank))?;
            verify("large and small puts of the peer", rank, errors)?;
            s.barrier()?;
            if rank == 0 {
                println!("port_channel: a small putWithSignal after a large put waits for it (order verified)");
            }
        }
        // 256 MiB over the whole buffer: put the two slices (2 x 64 MiB would be smaller), so use a bigger one.
        let big = 256usize << 20;
        let big_buf = GpuBuffer::new(s.ctx.device(), big)?;
        let big_reg = s.comm.register(&big_buf)?;
        drop(chans);
        proxy.stop()?;
        let (mut proxy2, h) = port_channels(&s, &big_reg, &[1 - rank], 9, None)?;
        let ch = DeviceArray::from_slice(s.ctx.device(), &h)?;
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
        // putWithSignal round trips: through the direct path where it applies (the default), then through the
        // proxy only (MSCCLPP_PORT_DIRECT_MAX=0); 0 bytes separates the copy from the signal.
        round_trips(&s, &ch, &proxy2, "", &[1024, 4096, 16384, 0])?;
        proxy2.stop()?;
        drop(ch);
        let (mut proxy3, h) = port_channels(&s, &big_reg, &[1 - rank], 10, Some(0))?;
        let ch = DeviceArray::from_slice(s.ctx.device(), &h)?;
        round_trips(&s, &ch, &proxy3, "proxy_only_", &[1024, 0])?;
        proxy3.stop()?;
    }
    proxy.stop()?;
    if rank == 0 {
        println!("port_channel: done");
    }
    Ok(())
}

/// Time `iters` putWithSignal round trips per size on channel `ch` (ranks 0 and 1).
fn round_trips(
    s: &Setup,
    ch: &DeviceArray<PortChannelDeviceHandle>,
    proxy: &ProxyService,
    prefix: &str,
    sizes: &[u64],
) -> Result<()> {
    let rank = s.rank();
    // Two ranks sharing one GPU (MSCCLPP_SHARED_GPU=1) time-slice it, so a round trip takes milliseconds there:
    // fewer of them keep each timed run inside the wait timeout (the figure means nothing in that mode anyway).
    let shared = std::env::var("MSCCLPP_SHARED_GPU").is_ok_and(|v| v == "1");
    let iters = if shared { 50 } else { 2000 };
    for &bytes in sizes {
        let pp = |it: i32| -> Result<()> {
            let mut a = KernelArgs::new();
            a.push(ch.ptr()).push(rank as i32).push(it).push(bytes);
            s.launch("mscclpp_port_ping_pong", LaunchConfig::linear(1, 1), &a)
        };
        pp(100)?;
        s.sync()?;
        s.barrier()?;
        let before = proxy.stats();
        let ms = s.time_ms(|| pp(iters))?;
        let after = proxy.stats();
        let n = (after.triggers - before.triggers) as f64;
        if n > 0.0 {
            println!(
                "rank {rank}: {} triggers through the proxy; per trigger: queue copy {:.2} us, queue signal {:.2} us",
                n,
                (after.data_ns - before.data_ns) as f64 / n / 1e3,
                (after.flag_ns - before.flag_ns) as f64 / n / 1e3
            );
        }
        if rank == 0 {
            let rt = ms * 1000.0 / iters as f64;
            let name = if bytes == 0 { "0B".to_string() } else { human(bytes as usize) };
            let path = if prefix.is_empty() { "" } else { " (proxy only)" };
            println!("port_channel putWithSignal {name} round trip{path}: {rt:.2} us");
            result(&format!("{prefix}port_channel_put_with_signal_round_trip_{name}"), rt, "us");
        }
        s.barrier()?;
    }
    Ok(())
}

fn main() {
    main_with("port_channel", run);
}
