//! A user's own CUDA source (examples/custom_kernel.cu, or the file given as the first argument) compiled by
//! the kernel launcher with the mscclpp headers and launched with an array of memory-channel handles: an LL16
//! packet all-reduce, checked on every rank.
//!
//! `mpirun -np 2 target/release/examples/custom_kernel [kernel.cu]`

mod common;

use common::{Setup, main_with, verify};
use mscclpp_exec::sys::driver::{KernelArgs, LaunchConfig};
use mscclpp_exec::{DeviceArray, GpuBuffer, KernelBuilder, MemoryChannel, Result};

const SOURCE: &str = include_str!("custom_kernel.cu");

fn run() -> Result<()> {
    let s = Setup::from_env()?;
    let (rank, n) = (s.rank(), s.size());
    let builder = match std::env::args().nth(1) {
        Some(path) => KernelBuilder::from_file(path)?,
        None => KernelBuilder::new("custom_kernel.cu", SOURCE),
    };
    let kernel = builder.build(&s.ctx)?;
    let count = 1usize << 20;
    let bytes = count * 4;
    let data = GpuBuffer::new(s.ctx.device(), bytes)?;
    let scratch = GpuBuffer::new(s.ctx.device(), 2 * bytes * n)?;
    let data_reg = s.comm.register(&data)?;
    let scratch_reg = s.comm.register(&scratch)?;
    let mut handles = Vec::new();
    let mut keep = Vec::new();
    for peer in (0..n).filter(|p| *p != rank) {
        let conn = s.comm.connect(peer, 3)?;
        let sem = s.comm.build_memory_semaphore(&conn, 3)?;
        let peer_scratch = s.comm.exchange_memory(&scratch_reg, peer, 3)?;
        let ch = MemoryChannel::new(sem, peer_scratch, &data_reg, Some(scratch.ptr()))?;
        handles.push(ch.device_handle());
        keep.push(ch);
    }
    let chans = DeviceArray::from_slice(s.ctx.device(), &handles)?;
    let value = |r: usize, i: usize| (r + 1) as f32 + (i % 7) as f32;
    for flag in 1..=3u32 {
        let host: Vec<f32> = (0..count).map(|i| value(rank, i)).collect();
        let raw: Vec<u8> = host.iter().flat_map(|v| v.to_le_bytes()).collect();
        data.write(0, &raw)?;
        s.barrier()?;
        let mut a = KernelArgs::new();
        a.push(chans.ptr()).push((n - 1) as i32).push(rank as i32).push(data.ptr()).push(count as u64).push(flag);
        // SAFETY: the arguments match packet_allreduce(MemoryChannelDeviceHandle*, int, int, float*, unsigned long
        // long, unsigned int); all buffers live until the stream is synchronized below.
        unsafe { kernel.launch("packet_allreduce", LaunchConfig::linear(32, 512), &s.stream, &a)? };
        s.sync()?;
        let mut out = vec![0u8; bytes];
        data.read(0, &mut out)?;
        let errors = out
            .chunks_exact(4)
            .enumerate()
            .filter(|(i, c)| {
                let got = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                let want: f32 = (0..n).map(|r| value(r, *i)).sum();
                got != want
            })
            .count();
        verify(&format!("packet all-reduce round {flag}"), rank, errors as u64)?;
        s.barrier()?;
    }
    if rank == 0 {
        println!("custom_kernel: packet all-reduce of {count} floats on {n} ranks verified (3 rounds)");
    }
    Ok(())
}

fn main() {
    main_with("custom_kernel", run);
}
