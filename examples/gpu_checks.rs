//! Fault and edge checks of the runtime on a GPU host, one per subcommand (the GPU suite runs each):
//!
//! - `wait-timeout`: a kernel waits on a semaphore nobody signals; it must stop after MSCCLPP_WAIT_TIMEOUT_MS
//!   and the host must report which wait on which channel.
//! - `nvls-disabled`: with NCCL_NVLS_ENABLE=0 / MSCCLPP_DISABLE_NVLS=1 a real switch channel is refused without
//!   any multicast call.
//! - `no-gpu`: with no visible GPU, opening one is a clear error.
//! - `too-few-gpus`: asking for a GPU beyond the visible ones is a clear error.
//! - `no-nvrtc`: with NVRTC pointed at a missing file, building a kernel is a clear error.
//! - `raw-buffer` (2 ranks, mpirun/torchrun): RawGpuBuffer (cuMem VMM, fd passing) exchange, a memory-channel
//!   put into it and an LL packet exchange, checked.
//! - `syncer`: DeviceSyncer grid barrier.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Setup, main_with, verify};
use mscclpp_exec::bootstrap::{TcpBootstrap, UniqueId};
use mscclpp_exec::sys::driver::{Device, KernelArgs, LaunchConfig, Stream};
use mscclpp_exec::sys::handles::DeviceSyncer;
use mscclpp_exec::{
    Communicator, DeviceArray, Error, GpuBuffer, GpuContext, Kernel, KernelBuilder, MemoryChannel, RawGpuBuffer, Result,
};

fn fail(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

fn single_rank_comm(device: Device) -> Result<Communicator> {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| Error::io("finding a free port", e))?;
    let b = TcpBootstrap::new(0, 1, &UniqueId::from_addr(addr, "gpu-checks"), Duration::from_secs(5))?;
    Communicator::new(Arc::new(b), device)
}

fn wait_timeout() -> Result<()> {
    let device = Device::open(0)?;
    let comm = single_rank_comm(device)?;
    let ctx = GpuContext::new(device, 0)?;
    let kernels = Kernel::builtin(&ctx)?;
    let buf = GpuBuffer::new(&device, 4096)?;
    let reg = comm.register(&buf)?;
    // A loop-back channel to ourselves: nobody signals it.
    let ch = comm.memory_channel(0, 0, &reg, None)?;
    let handles = DeviceArray::from_slice(&device, &[ch.device_handle()])?;
    let stream = Stream::new(&device)?;
    let mut a = KernelArgs::new();
    a.push(handles.ptr());
    let start = Instant::now();
    // SAFETY: mscclpp_wait_unsignalled(MemoryChannelDeviceHandle*); the array lives until the end.
    unsafe { kernels.launch("mscclpp_wait_unsignalled", LaunchConfig::linear(1, 32), &stream, &a)? };
    let res = ctx.synchronize(&stream);
    let took = start.elapsed();
    match res {
        Err(Error::Sys(mscclpp_exec::sys::Error::DeviceWait(report))) => {
            let msg = report.to_string();
            println!("wait-timeout: kernel stopped after {took:?}: {msg}");
            if !msg.contains("wait() on memory channel") || !msg.contains("peer rank 0") {
                return Err(fail(format!("the report does not name the wait and channel: {msg}")));
            }
            if took > ctx.wait_timeout() + Duration::from_secs(4) {
                return Err(fail(format!("took {took:?}, longer than the bound {:?}", ctx.wait_timeout())));
            }
            println!("wait-timeout: OK");
            Ok(())
        }
        Err(e) => Err(fail(format!("expected a device wait report, got: {e}"))),
        Ok(()) => Err(fail("the kernel finished although nobody signalled".into())),
    }
}

fn nvls_disabled() -> Result<()> {
    for (var, val) in [("NCCL_NVLS_ENABLE", "0"), ("MSCCLPP_DISABLE_NVLS", "1")] {
        match mscclpp_config::value_of(var) {
            Some(v) if v == val => {}
            _ => return Err(fail(format!("run this check with {var}={val} set"))),
        }
    }
    match mscclpp_exec::channel::SwitchChannel::nvls(&[0, 1], 1 << 20) {
        Err(Error::Sys(e @ mscclpp_exec::sys::Error::NvlsDisabled { .. })) => {
            println!("nvls-disabled: refused: {e}");
            println!("nvls-disabled: OK");
            Ok(())
        }
        Err(e) => Err(fail(format!("expected the NVLS-disabled error, got: {e}"))),
        Ok(_) => Err(fail("a switch channel was set up although NVLS is disabled".into())),
    }
}

fn expect_error(what: &str, r: Result<()>, needle: &str) -> Result<()> {
    match r {
        Err(e) => {
            let msg = e.to_string();
            println!("{what}: error: {msg}");
            if !msg.contains(needle) {
                return Err(fail(format!("{what}: the message does not mention {needle:?}")));
            }
            println!("{what}: OK");
            Ok(())
        }
        Ok(()) => Err(fail(format!("{what}: expected an error"))),
    }
}

fn raw_buffer() -> Result<()> {
    let s = Setup::from_env()?;
    let (rank, n) = (s.rank(), s.size());
    if n != 2 {
        return Err(fail("raw-buffer runs on 2 ranks".into()));
    }
    let peer = 1 - rank;
    let bytes = 8usize << 20;
    let raw = RawGpuBuffer::new(s.ctx.device(), 2 * bytes)?;
    let src = GpuBuffer::new(s.ctx.device(), bytes)?;
    let raw_reg = s.comm.register_raw(&raw)?;
    let src_reg = s.comm.register(&src)?;
    let conn = s.comm.connect(peer, 5)?;
    let sem = s.comm.build_memory_semaphore(&conn, 5)?;
    let peer_raw = s.comm.exchange_memory(&raw_reg, peer, 5)?;
    let ch = MemoryChannel::new(sem, peer_raw, &src_reg, Some(raw.ptr() + bytes as u64))?;
    let h = DeviceArray::from_slice(s.ctx.device(), &[ch.device_handle()])?;
    s.fill(&src, bytes, 77 + rank as u32)?;
    s.barrier()?;
    // Put our src into the peer's raw buffer [0, bytes), then barrier on the channel.
    let mut a = KernelArgs::new();
    a.push(h.ptr()).push(0u64).push(0u64).push(bytes as u64).push(0i32);
    s.launch("mscclpp_memory_copy", LaunchConfig::linear(64, 1024), &a)?;
    let mut b = KernelArgs::new();
    b.push(h.ptr());
    s.launch("mscclpp_channel_barrier", LaunchConfig::linear(1, 1), &b)?;
    s.sync()?;
    // Copy what arrived into a GpuBuffer to check it with the pattern kernel.
    let got = GpuBuffer::new(s.ctx.device(), bytes)?;
    let mut host = vec![0u8; bytes];
    raw.read(0, &mut host)?;
    got.write(0, &host)?;
    let errors = s.check(&got, 0, bytes, 77 + peer as u32)?;
    verify("RawGpuBuffer put", rank, errors)?;
    s.barrier()?;
    println!("raw-buffer: rank {rank}: VMM buffer exchange and put verified");
    Ok(())
}

fn syncer() -> Result<()> {
    let device = Device::open(0)?;
    let ctx = GpuContext::new(device, 0)?;
    let kernels = Kernel::builtin(&ctx)?;
    let blocks = device.multiprocessor_count()? as u32;
    let state = DeviceArray::from_slice(&device, &[DeviceSyncer::default()])?;
    let counter = GpuBuffer::new(&device, 4)?;
    let out = GpuBuffer::new(&device, 4 * blocks as usize)?;
    let stream = Stream::new(&device)?;
    let mut a = KernelArgs::new();
    a.push(state.ptr()).push(counter.ptr()).push(out.ptr());
    // SAFETY: mscclpp_syncer_check(DeviceSyncer*, u32*, u32*) with buffers that outlive the launch; one block
    // per SM, so all blocks are co-resident.
    unsafe { kernels.launch("mscclpp_syncer_check", LaunchConfig::linear(blocks, 128), &stream, &a)? };
    ctx.synchronize(&stream)?;
    let mut host = vec![0u8; 4 * blocks as usize];
    out.read(0, &mut host)?;
    let bad = host.chunks_exact(4).filter(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) != blocks).count();
    verify("DeviceSyncer", 0, bad as u64)?;
    println!("syncer: {blocks} blocks synchronised: OK");
    Ok(())
}

fn run() -> Result<()> {
    let cmd = std::env::args().nth(1).unwrap_or_default();
    match cmd.as_str() {
        "wait-timeout" => wait_timeout(),
        "nvls-disabled" => nvls_disabled(),
        "no-gpu" => expect_error("no-gpu", Device::open(0).map(|_| ()).map_err(Into::into), "GPU"),
        "too-few-gpus" => expect_error("too-few-gpus", Device::open(64).map(|_| ()).map_err(Into::into), "local rank"),
        "no-nvrtc" => {
            let device = Device::open(0)?;
            let ctx = GpuContext::new(device, 0)?;
            let r = KernelBuilder::new("k.cu", "extern \"C\" __global__ void k() {}")
                .cache(mscclpp_exec::sys::nvrtc::KernelCache::new(None))
                .build(&ctx)
                .map(|_| ());
            expect_error("no-nvrtc", r, "NVRTC")
        }
        "raw-buffer" => raw_buffer(),
        "syncer" => syncer(),
        other => Err(fail(format!(
            "unknown check {other:?}: wait-timeout, nvls-disabled, no-gpu, too-few-gpus, no-nvrtc, raw-buffer, syncer"
        ))),
    }
}

fn main() {
    main_with("gpu_checks", run);
}
