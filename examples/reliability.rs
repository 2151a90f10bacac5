//! Reliability checks of the executor on 2 ranks (the GPU suite's `reliability` part runs each subcommand under
//! its launcher; shared-GPU mode works):
//!
//! ```text
//! reliability bad-input | two-communicators | two-executors [ITERATIONS [PLAN_A PLAN_B]] | first-use
//! ```
//!
//! - `bad-input`: message sizes the plan's layout admits (1000 B on 2 ranks: 2 chunks of 500 B) give the right
//!   result and those it refuses (not a multiple of the alignment, not whole chunks) a clear error, as does a
//!   message past its allocation; a pointer 4 bytes past a 16-byte boundary gives the right result, 1 and 2 bytes
//!   (between f32 elements) a clear error; a freed buffer is refused and a new one (even at the same address)
//!   runs right; a stream of another GPU is refused (skipped, with the reason, when each rank sees one GPU); two
//!   plans on one buffer both run right. Never a wrong answer.
//! - `two-communicators`: two communicators in this process (their own bootstraps), each running its own plan on
//!   its own stream and buffer in its own thread, ITERATIONS (1,000) times, every result checked.
//! - `two-executors`: two executors on one communicator, concurrently, the same way.
//! - `first-use`: each rank launches an element type for the first time while its other executor's collective
//!   waits for the peer, in opposite orders on even and odd ranks. A launch that loaded its kernel then (CUDA
//!   loads functions lazily, and a load waits for every running kernel) would deadlock the two ranks until the
//!   wait timeout; the executor loads every entry point when it is created, so this passes.
//!
//! Prints `reliability: …` lines; exits non-zero on a wrong result or a missing error.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use mscclpp_algorithms as _;
use mscclpp_exec::bootstrap::{LaunchEnv, TcpBootstrap, UniqueId};
use mscclpp_exec::executor::{ExecutionPlan, Executor};
use mscclpp_exec::sys::driver::{Device, DevicePtr, Stream, device_count};
use mscclpp_exec::sys::interpreter::{ElementType, PacketType};
use mscclpp_exec::{Communicator, GpuBuffer};
use mscclpp_lang::plan::{Layout, Plan};
use mscclpp_lang::registry::{self, Target};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const SIZE: u64 = 64 << 10;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let iters: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let r = match args.get(1).map(String::as_str) {
        Some("bad-input") => bad_input(),
        Some("two-communicators") => two_communicators(iters, plans_of(&args)),
        Some("two-executors") => two_executors(iters, plans_of(&args)),
        Some("first-use") => first_use(),
        _ => Err(
            "usage: reliability bad-input | two-communicators | two-executors [ITERATIONS [PLAN_A PLAN_B]] | first-use"
                .into(),
        ),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reliability: FAIL: {e}");
            ExitCode::from(1)
        }
    }
}

/// An in-place f32 allreduce plan of program `name` for `world` ranks.
fn plan(name: &str, world: usize) -> Res<ExecutionPlan> {
    let meta = registry::find(name)?;
    Ok(ExecutionPlan::new(meta.build_plan(&Target::new(world).inplace(true))?)?)
}

/// Element i of rank r in round k: r + (i + k) % 1000 (the sum over ranks is exact in f32).
fn fill(buf: &GpuBuffer, at: usize, rank: usize, round: usize, bytes: u64) -> Res<()> {
    let data: Vec<u8> =
        (0..bytes as usize / 4).flat_map(|i| ((rank + (i + round) % 1000) as f32).to_le_bytes()).collect();
    buf.write(at, &data)?;
    Ok(())
}

/// Number of wrong elements after an allreduce of `fill(.., round, ..)` over `world` ranks.
fn wrong(buf: &GpuBuffer, at: usize, world: usize, round: usize, bytes: u64) -> Res<usize> {
    let mut got = vec![0u8; bytes as usize];
    buf.read(at, &mut got)?;
    Ok(got
        .chunks_exact(4)
        .enumerate()
        .filter(|(i, c)| {
            let want: f32 = (0..world).map(|r| (r + (i + round) % 1000) as f32).sum();
            f32::from_le_bytes([c[0], c[1], c[2], c[3]]) != want
        })
        .count())
}

/// Element i of rank r in round k as i32 (and u32): r + (i + k) % 1000.
fn fill_i32(buf: &GpuBuffer, rank: usize, round: usize, bytes: u64) -> Res<()> {
    let data: Vec<u8> =
        (0..bytes as usize / 4).flat_map(|i| ((rank + (i + round) % 1000) as i32).to_le_bytes()).collect();
    buf.write(0, &data)?;
    Ok(())
}

/// Number of wrong elements after an i32 (or u32) allreduce of `fill_i32(.., round, ..)` over `world` ranks.
fn wrong_i32(buf: &GpuBuffer, world: usize, round: usize, bytes: u64) -> Res<usize> {
    let mut got = vec![0u8; bytes as usize];
    buf.read(0, &mut got)?;
    Ok(got
        .chunks_exact(4)
        .enumerate()
        .filter(|(i, c)| {
            let want: i32 = (0..world).map(|r| (r + (i + round) % 1000) as i32).sum();
            i32::from_le_bytes([c[0], c[1], c[2], c[3]]) != want
        })
        .count())
}

/// Runs `plan` in place at `ptr` and waits.
fn run(exec: &Executor, plan: &ExecutionPlan, ptr: DevicePtr, bytes: u64, stream: &Stream) -> Res<()> {
    exec.execute(plan, ptr, ptr, bytes, bytes, ElementType::F32, PacketType::Ll16, stream)?;
    exec.synchronize(stream)?;
    Ok(())
}

/// A case that must be refused before anything runs.
fn must_refuse(what: &str, r: Res<()>) -> Res<()> {
    match r {
        Err(e) if !e.to_string().trim().is_empty() => {
            println!("reliability: bad-input {what}: refused: {e}");
            Ok(())
        }
        Err(_) => Err(format!("{what}: refused with an empty message").into()),
        Ok(()) => Err(format!("{what}: was accepted").into()),
    }
}

/// A case that may be refused, or must compute the right result.
fn error_or_right(what: &str, r: Res<()>, check: impl FnOnce() -> Res<usize>) -> Res<()> {
    match r {
        Err(e) => {
            println!("reliability: bad-input {what}: refused: {e}");
            Ok(())
        }
        Ok(()) => match check()? {
            0 => {
                println!("reliability: bad-input {what}: right result");
                Ok(())
            }
            n => Err(format!("{what}: {n} wrong elements").into()),
        },
    }
}

/// The message sizes the bad-input check runs for `plan` on `rank`, each with the plan layout's verdict: `None`
/// when the plan splits it into whole chunks (the run must give the right result), else why it is refused (the
/// executor must refuse it). 1000 B on 2 ranks is 2 chunks of 500 B, admissible for a 4-byte alignment.
fn size_cases(plan: &Plan, rank: usize) -> Vec<(u64, Option<String>)> {
    [1000u64, 1002, 1004, 4, 8, SIZE + 4]
        .into_iter()
        .map(|b| (b, Layout::new(plan, rank, b, b).err().map(|e| e.to_string())))
        .collect()
}

fn bad_input() -> Res<()> {
    let (comm, _) = Communicator::from_env()?;
    let comm = Arc::new(comm);
    let (rank, world) = (comm.rank(), comm.size());
    let exec = Executor::new(comm.clone())?;
    let p = plan("allreduce_twoshot", world)?;
    let stream = Stream::new(comm.device())?;
    let buf = GpuBuffer::new(comm.device(), SIZE as usize + 64)?;
    // Sizes (symmetric on every rank, so every rank refuses before launching): what the plan's layout admits
    // must run right, what it does not must be refused.
    let cases = size_cases(p.plan(), rank);
    let refused = cases.iter().filter(|(_, why)| why.is_some()).count();
    if refused == 0 || refused == cases.len() {
        return Err(format!("the size cases {cases:?} do not mix admissible and refused sizes").into());
    }
    for (k, (bytes, why)) in cases.into_iter().enumerate() {
        fill(&buf, 0, rank, 40 + k, bytes)?;
        comm.bootstrap().barrier()?;
        let r = run(&exec, &p, buf.ptr(), bytes, &stream);
        match why {
            Some(why) => must_refuse(&format!("size {bytes} B (the plan refuses it: {why})"), r)?,
            None => {
                error_or_right(&format!("size {bytes} B (whole chunks)"), r, || wrong(&buf, 0, world, 40 + k, bytes))?
            }
        }
    }
    must_refuse("message past its allocation", run(&exec, &p, buf.ptr(), 2 * SIZE, &stream))?;
    // Misaligned pointers: 4 bytes (a whole f32, not 16-byte aligned) must run right; 1 and 2 bytes (between
    // elements) must be refused.
    for off in [4usize, 1, 2] {
        fill(&buf, off & !3, rank, off, SIZE)?;
        comm.bootstrap().barrier()?;
        let r = run(&exec, &p, buf.ptr() + off as u64, SIZE, &stream);
        let what = format!("pointer {off} B past a 16-byte boundary");
        if off % 4 == 0 {
            error_or_right(&what, r, || wrong(&buf, off, world, off, SIZE))?;
        } else {
            must_refuse(&what, r)?;
        }
    }
    // Two plans on one buffer, one after the other on one stream.
    let other = plan("allreduce_oneshot_ll", world)?;
    for (k, pl) in [&p, &other, &p].into_iter().enumerate() {
        fill(&buf, 0, rank, 10 + k, SIZE)?;
        comm.bootstrap().barrier()?;
        let r = run(&exec, pl, buf.ptr(), SIZE, &stream);
        error_or_right(&format!("plan {k} of 3 sharing one buffer"), r, || wrong(&buf, 0, world, 10 + k, SIZE))?;
    }
    // A buffer freed between calls, then a new one (possibly at the same address: the executor must not reuse
    // the context whose peers mapped the freed allocation).
    let freed = GpuBuffer::new(comm.device(), SIZE as usize)?;
    fill(&freed, 0, rank, 20, SIZE)?;
    comm.bootstrap().barrier()?;
    run(&exec, &p, freed.ptr(), SIZE, &stream)?;
    let dangling = freed.ptr();
    drop(freed);
    comm.bootstrap().barrier()?;
    must_refuse("a freed buffer", run(&exec, &p, dangling, SIZE, &stream))?;
    for round in 0..2 {
        let fresh = GpuBuffer::new(comm.device(), SIZE as usize)?;
        let same = fresh.ptr() == dangling;
        fill(&fresh, 0, rank, 21 + round, SIZE)?;
        comm.bootstrap().barrier()?;
        let r = run(&exec, &p, fresh.ptr(), SIZE, &stream);
        error_or_right(&format!("new buffer {round} after a free (same address: {same})"), r, || {
            wrong(&fresh, 0, world, 21 + round, SIZE)
        })?;
        comm.bootstrap().barrier()?;
    }
    // A stream of another GPU.
    let n = device_count()?;
    if n >= 2 && std::env::var("MSCCLPP_SHARED_GPU").map_or(true, |v| v != "1") {
        let other_dev = Device::open((comm.device().ordinal() + 1) % n)?;
        let foreign = Stream::new(&other_dev)?;
        comm.device().bind()?;
        fill(&buf, 0, rank, 30, SIZE)?;
        comm.bootstrap().barrier()?;
        must_refuse("a stream of another GPU", run(&exec, &p, buf.ptr(), SIZE, &foreign))?;
    } else {
        println!(
            "reliability: bad-input a stream of another GPU: not run ({n} GPU(s) visible, shared-GPU mode: {}): \
             it needs two GPUs visible to each rank",
            std::env::var("MSCCLPP_SHARED_GPU").unwrap_or_default() == "1"
        );
    }
    comm.bootstrap().barrier()?;
    println!("reliability: bad-input rank {rank}: OK");
    Ok(())
}

/// `iters` checked in-place allreduces of `plan` on `exec`, its own stream and buffer.
fn loop_checked(
    exec: &Executor,
    plan: &ExecutionPlan,
    rank: usize,
    world: usize,
    iters: usize,
    salt: usize,
) -> Res<()> {
    let stream = Stream::new(exec.communicator().device())?;
    let buf = GpuBuffer::new(exec.communicator().device(), SIZE as usize)?;
    for k in 0..iters {
        let round = salt + k;
        fill(&buf, 0, rank, round, SIZE)?;
        run(exec, plan, buf.ptr(), SIZE, &stream)?;
        let bad = wrong(&buf, 0, world, round, SIZE)?;
        if bad > 0 {
            return Err(format!("iteration {k}: {bad} wrong elements").into());
        }
    }
    Ok(())
}

/// Runs the two loops concurrently and reports.
fn concurrently(what: &str, a: impl FnOnce() -> Res<()> + Send, b: impl FnOnce() -> Res<()> + Send) -> Res<()> {
    let start = Instant::now();
    let (ra, rb) = std::thread::scope(|s| {
        let ha = s.spawn(a);
        let hb = s.spawn(b);
        (ha.join(), hb.join())
    });
    let ra = ra.map_err(|_| format!("{what}: the first thread panicked"))?;
    let rb = rb.map_err(|_| format!("{what}: the second thread panicked"))?;
    ra.map_err(|e| format!("{what}, first: {e}"))?;
    rb.map_err(|e| format!("{what}, second: {e}"))?;
    println!("reliability: {what}: OK in {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

/// The two programs of the concurrency checks: arguments 3 and 4, else `allreduce_twoshot` and
/// `allreduce_oneshot_ll` (a Simple and an LL program).
fn plans_of(args: &[String]) -> (String, String) {
    let a = args.get(3).cloned().unwrap_or_else(|| "allreduce_twoshot".into());
    let b = args.get(4).cloned().unwrap_or_else(|| "allreduce_oneshot_ll".into());
    (a, b)
}

fn two_communicators(iters: usize, (a, b): (String, String)) -> Res<()> {
    let (comm, env) = Communicator::from_env()?;
    let comm = Arc::new(comm);
    let (rank, world) = (comm.rank(), comm.size());
    // The second communicator: its own rendezvous next to the job's.
    let second = second_id(&env)?;
    let b2 = TcpBootstrap::new(rank, world, &second, mscclpp_exec::bootstrap::default_timeout())?;
    let comm2 = Arc::new(Communicator::new(Arc::new(b2), *comm.device())?);
    let e1 = Executor::new(comm.clone())?;
    let e2 = Executor::new(comm2)?;
    let (p1, p2) = (plan(&a, world)?, plan(&b, world)?);
    concurrently(
        &format!("two communicators x{iters} (rank {rank})"),
        || loop_checked(&e1, &p1, rank, world, iters, 0),
        || loop_checked(&e2, &p2, rank, world, iters, 500),
    )
}

fn second_id(env: &LaunchEnv) -> Res<UniqueId> {
    let port = env.master.port().checked_add(101).ok_or("the job's port leaves no room for a second rendezvous")?;
    Ok(UniqueId::from_addr(SocketAddr::new(env.master.ip(), port), &format!("{}-second", env.job_id)))
}

fn two_executors(iters: usize, (a, b): (String, String)) -> Res<()> {
    let (comm, _) = Communicator::from_env()?;
    let comm = Arc::new(comm);
    let (rank, world) = (comm.rank(), comm.size());
    let e1 = Executor::new(comm.clone())?;
    let e2 = Executor::new(comm.clone())?;
    let (p1, p2) = (plan(&a, world)?, plan(&b, world)?);
    concurrently(
        &format!("two executors on one communicator x{iters} (rank {rank})"),
        || loop_checked(&e1, &p1, rank, world, iters, 0),
        || loop_checked(&e2, &p2, rank, world, iters, 500),
    )
}

fn first_use() -> Res<()> {
    let start = Instant::now();
    let (comm, _) = Communicator::from_env()?;
    let comm = Arc::new(comm);
    let (rank, world) = (comm.rank(), comm.size());
    let e1 = Executor::new(comm.clone())?;
    let e2 = Executor::new(comm.clone())?;
    let (p1, p2) = (plan("allreduce_twoshot", world)?, plan("allreduce_oneshot_ll", world)?);
    let dev = comm.device();
    let (s1, s2) = (Stream::new(dev)?, Stream::new(dev)?);
    let (b1, b2) = (GpuBuffer::new(dev, SIZE as usize)?, GpuBuffer::new(dev, SIZE as usize)?);
    // Both contexts are set up in the same order on every rank, with u32, which the check itself does not use.
    for (e, p, b, s) in [(&e1, &p1, &b1, &s1), (&e2, &p2, &b2, &s2)] {
        fill_i32(b, rank, 3, SIZE)?;
        e.execute(p, b.ptr(), b.ptr(), SIZE, SIZE, ElementType::U32, PacketType::Ll16, s)?;
        e.synchronize(s)?;
        let bad = wrong_i32(b, world, 3, SIZE)?;
        if bad > 0 {
            return Err(format!("set-up run of `{}`: {bad} wrong elements", p.plan().name).into());
        }
    }
    comm.bootstrap().barrier()?;
    // Now the first f32 launch of e1 and the first i32 launch of e2, in opposite orders on even and odd ranks,
    // without waiting in between: the second launch comes while the first collective waits for the peer.
    fill(&b1, 0, rank, 7, SIZE)?;
    fill_i32(&b2, rank, 9, SIZE)?;
    let launch_1 = || e1.execute(&p1, b1.ptr(), b1.ptr(), SIZE, SIZE, ElementType::F32, PacketType::Ll16, &s1);
    let launch_2 = || e2.execute(&p2, b2.ptr(), b2.ptr(), SIZE, SIZE, ElementType::I32, PacketType::Ll16, &s2);
    if rank % 2 == 0 {
        launch_1()?;
        launch_2()?;
    } else {
        launch_2()?;
        launch_1()?;
    }
    e1.synchronize(&s1)?;
    e2.synchronize(&s2)?;
    let (bad1, bad2) = (wrong(&b1, 0, world, 7, SIZE)?, wrong_i32(&b2, world, 9, SIZE)?);
    if bad1 + bad2 > 0 {
        return Err(format!("first use: {bad1} wrong f32 and {bad2} wrong i32 elements").into());
    }
    comm.bootstrap().barrier()?;
    println!("reliability: first-use rank {rank}: OK in {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_1000_byte_allreduce_on_2_ranks_is_admissible_and_odd_sizes_are_refused() {
        let p = plan("allreduce_twoshot", 2).expect("plan");
        for rank in 0..2 {
            let cases = size_cases(p.plan(), rank);
            assert!(!cases.is_empty());
            let verdict = |b: u64| cases.iter().find(|(s, _)| *s == b).map(|(_, w)| w.clone()).expect("case");
            // 1000 B = 2 chunks of 500 B (125 f32), on a 4-byte alignment.
            assert_eq!(verdict(1000), None, "rank {rank}");
            let unaligned = verdict(1002).expect("1002 B is not a multiple of the 4-byte alignment");
            assert!(unaligned.contains("1002"), "{unaligned}");
            let indivisible = verdict(1004).expect("1004 B does not split into 2 whole chunks");
            assert!(indivisible.contains("1004"), "{indivisible}");
            assert!(verdict(4).is_some(), "one f32 does not split over 2 chunks");
            assert_eq!(verdict(8), None, "2 chunks of one f32");
        }
    }
}
