//! Shared setup of the examples: communicator from the launcher's environment, GPU context, built-in kernels,
//! timing and result lines.

#![allow(dead_code)]

use std::time::Duration;

use mscclpp_exec::sys::driver::{Event, KernelArgs, LaunchConfig, Stream};
use mscclpp_exec::{Communicator, GpuBuffer, GpuContext, Kernel, Result};

/// Everything an example needs.
pub struct Setup {
    pub comm: Communicator,
    pub ctx: GpuContext,
    pub kernels: Kernel,
    pub stream: Stream,
}

impl Setup {
    /// Join the job described by the environment (mpirun / torchrun / Slurm).
    pub fn from_env() -> Result<Self> {
        let (comm, env) = Communicator::from_env()?;
        let ctx = GpuContext::new(*comm.device(), comm.rank())?;
        let kernels = Kernel::builtin(&ctx)?;
        let stream = Stream::new(ctx.device())?;
        if comm.rank() == 0 {
            println!(
                "# {} ranks via {}, GPU {} ({}), {} SMs",
                comm.size(),
                env.launcher,
                ctx.device().ordinal(),
                ctx.device().name()?,
                ctx.device().multiprocessor_count()?
            );
        }
        Ok(Setup { comm, ctx, kernels, stream })
    }

    pub fn rank(&self) -> usize {
        self.comm.rank()
    }

    pub fn size(&self) -> usize {
        self.comm.size()
    }

    pub fn barrier(&self) -> Result<()> {
        self.comm.bootstrap().barrier()
    }

    pub fn sync(&self) -> Result<()> {
        self.ctx.synchronize(&self.stream)
    }

    /// Launch a built-in kernel.
    pub fn launch(&self, name: &str, cfg: LaunchConfig, args: &KernelArgs) -> Result<()> {
        // SAFETY: every call site passes the argument list of the named kernel in primitives.cu, with pointers to
        // live buffers owned by the example for the duration of the launch.
        unsafe { self.kernels.launch(name, cfg, &self.stream, args) }
    }

    /// Fill `bytes` of `buf` with the pattern of `seed`.
    pub fn fill(&self, buf: &GpuBuffer, bytes: usize, seed: u32) -> Result<()> {
        self.fill_at(buf, 0, bytes, seed)?;
        self.sync()
    }

    /// Queue a fill of `bytes` of `buf` from `offset` with the pattern of `seed` (not waited for).
    pub fn fill_at(&self, buf: &GpuBuffer, offset: usize, bytes: usize, seed: u32) -> Result<()> {
        let mut a = KernelArgs::new();
        a.push(buf.ptr() + offset as u64).push((bytes / 4) as u64).push(seed);
        self.launch("mscclpp_fill_pattern", LaunchConfig::linear(264, 1024), &a)
    }

    /// Count words of `buf` (at `offset`, `bytes` long) that differ from the pattern of `seed`.
    pub fn check(&self, buf: &GpuBuffer, offset: usize, bytes: usize, seed: u32) -> Result<u64> {
        let errors = GpuBuffer::new(self.ctx.device(), 8)?;
        let mut a = KernelArgs::new();
        a.push(buf.ptr() + offset as u64).push((bytes / 4) as u64).push(seed).push(errors.ptr());
        self.launch("mscclpp_check_pattern", LaunchConfig::linear(264, 1024), &a)?;
        self.sync()?;
        let mut out = [0u8; 8];
        errors.read(0, &mut out)?;
        Ok(u64::from_le_bytes(out))
    }

    /// Time `f` (which queues work on the stream) with CUDA events; milliseconds.
    pub fn time_ms(&self, f: impl FnOnce() -> Result<()>) -> Result<f64> {
        let start = Event::new(self.ctx.device())?;
        let stop = Event::new(self.ctx.device())?;
        start.record(&self.stream)?;
        f()?;
        stop.record(&self.stream)?;
        self.sync()?;
        stop.synchronize(Duration::from_secs(60))?;
        Ok(stop.elapsed_ms_since(&start)? as f64)
    }
}

/// Human size.
pub fn human(bytes: usize) -> String {
    if bytes >= 1 << 30 {
        format!("{}GiB", bytes >> 30)
    } else if bytes >= 1 << 20 {
        format!("{}MiB", bytes >> 20)
    } else if bytes >= 1 << 10 {
        format!("{}KiB", bytes >> 10)
    } else {
        format!("{bytes}B")
    }
}

/// A machine-readable result line, collected into the GPU suite's summary.md (`MSCCLPP_RESULT_PREFIX` labels a run).
pub fn result(name: &str, value: f64, unit: &str) {
    let prefix = mscclpp_config::RESULT_PREFIX.get_or_default();
    println!("RESULT {prefix}{name} {value:.3} {unit}");
}

/// Run `body`; print the error and exit non-zero on failure.
pub fn main_with(name: &str, body: impl FnOnce() -> Result<()>) {
    match body() {
        Ok(()) => {}
        Err(e) => {
            eprintln!("{name}: FAILED: {e}");
            std::process::exit(1);
        }
    }
}

/// Exit non-zero when `errors` is not zero.
pub fn verify(what: &str, rank: usize, errors: u64) -> Result<()> {
    if errors != 0 {
        return Err(mscclpp_exec::Error::InvalidArgument(format!(
            "rank {rank}: {what}: {errors} words differ from the expected data"
        )));
    }
    Ok(())
}
