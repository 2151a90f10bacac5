//! The `reliability` part (faults, late and missing ranks, bad input and concurrency: the `reliability`
//! example) and the `soak-a`/`soak-b` parts (10,000 checked launches of each default program, half of them in
//! each part, then 1,000 graph replays, with resource figures), on 2 ranks (in shared-GPU mode when the host has
//! one GPU). Each step is a bash script that starts the ranks itself with `MSCCLPP_RANK`/`MSCCLPP_WORLD_SIZE`, so
//! one rank can be killed or delayed without the launcher tearing the job down. Every step prints `reliability:`
//! lines that results/2026-11-24-6d56eb0-1xH100/reliability.md collects.

use crate::context::Context;
use crate::step::Step;

/// Shared by every script: the GPU mode, a free rendezvous port, and a function that starts rank `$1`.
const PRELUDE: &str = r#"
set -u
M="$1"; shift
if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -lt 2 ]; then export MSCCLPP_SHARED_GPU=1 CUDA_VISIBLE_DEVICES=0; fi
export MSCCLPP_WORLD_SIZE=2 MSCCLPP_MASTER_ADDR=127.0.0.1
export MSCCLPP_MASTER_PORT=$(( 20000 + RANDOM % 20000 ))
T=$(mktemp -d)
# Start it in the background (`rank R ARGS &`): `exec` makes `$!` the program's own pid, so a kill reaches it.
rank() { local r=$1; shift; MSCCLPP_RANK=$r LOCAL_RANK=$r exec "$M" "$@" >"$T/rank$r.log" 2>&1; }
resources() { # pid label
  local p=$1 g
  g=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null | awk -F', ' -v p="$p" '$1==p{print $2}')
  echo "reliability: resources $2 pid=$p rss_kb=$(awk '/VmRSS/{print $2}' /proc/$p/status 2>/dev/null) fds=$(ls /proc/$p/fd 2>/dev/null | wc -l) threads=$(awk '/Threads/{print $2}' /proc/$p/status 2>/dev/null) gpu_mib=${g:-?}"
}
ms() { date +%s%3N; }
"#;

/// Kills rank 1 with SIGKILL in the middle of a long run; rank 0 must exit non-zero (not by a signal) within
/// the wait timeout (plus teardown slack) with a report matching `$REPORT`, and the next job on the GPU must pass.
const KILL: &str = r#"
export MSCCLPP_WAIT_TIMEOUT_MS=5000
rank 0 "$@" & P0=$!
rank 1 "$@" & P1=$!
sleep 20
kill -9 $P1; K=$(ms)
for i in $(seq 1 600); do kill -0 $P0 2>/dev/null || break; sleep 0.1; done
if kill -0 $P0 2>/dev/null; then echo "reliability: FAIL rank 0 still running 60 s after rank 1 was killed"; kill -9 $P0; exit 1; fi
wait $P0; RC=$?; E=$(ms)
echo "reliability: kill report_ms=$((E-K)) rank0_exit=$RC wait_timeout_ms=$MSCCLPP_WAIT_TIMEOUT_MS"
tail -n 20 "$T/rank0.log"
# The report comes within the wait timeout plus 10 s of teardown.
[ $((E-K)) -le $((MSCCLPP_WAIT_TIMEOUT_MS + 10000)) ] || { echo "reliability: FAIL the report took $((E-K)) ms"; exit 1; }
[ $RC -ne 0 ] || { echo "reliability: FAIL rank 0 exited 0 after its peer was killed"; exit 1; }
# An exit status above 128 is a signal (139: SIGSEGV): a crash, not a report.
[ $RC -lt 128 ] || { echo "reliability: FAIL rank 0 died of signal $((RC-128)) instead of reporting"; exit 1; }
grep -q "^error: " "$T/rank0.log" || { echo "reliability: FAIL rank 0 printed no error"; exit 1; }
grep -qiE "$REPORT" "$T/rank0.log" || { echo "reliability: FAIL the report does not match /$REPORT/"; exit 1; }
# The GPU is usable by the next job.
export MSCCLPP_MASTER_PORT=$(( MSCCLPP_MASTER_PORT + 1 ))
rank 0 test allreduce_twoshot --size 64K --iters 3 --no-timing & Q0=$!
rank 1 test allreduce_twoshot --size 64K --iters 3 --no-timing & Q1=$!
wait $Q0; A=$?; wait $Q1; B=$?
echo "reliability: next job exit=$A,$B"
[ $A -eq 0 ] && [ $B -eq 0 ]
"#;

/// Rank 1 starts 5 s after rank 0 (within the bootstrap timeout): the job passes.
const LATE: &str = r#"
export MSCCLPP_BOOTSTRAP_TIMEOUT_MS=30000
rank 0 "$@" & P0=$!
sleep 5
rank 1 "$@" & P1=$!
wait $P0; A=$?; wait $P1; B=$?
echo "reliability: late rank exit=$A,$B"; tail -n 5 "$T/rank0.log"
[ $A -eq 0 ] && [ $B -eq 0 ]
"#;

/// Rank 1 never starts: rank 0 fails within the bootstrap timeout and names rank 1.
const MISSING: &str = r#"
export MSCCLPP_BOOTSTRAP_TIMEOUT_MS=5000
S=$(ms); rank 0 "$@" & P0=$!; wait $P0; RC=$?; E=$(ms)
echo "reliability: missing rank report_ms=$((E-S)) exit=$RC"; tail -n 5 "$T/rank0.log"
[ $RC -ne 0 ] && grep -q "\[1\]" "$T/rank0.log"
"#;

/// Both ranks run; resources of each are sampled every second, the first and last samples printed.
const SOAK: &str = r#"
rank 0 "$@" & P0=$!
rank 1 "$@" & P1=$!
sleep 5
resources $P0 "start rank0" | tee "$T/res.log"; resources $P1 "start rank1" | tee -a "$T/res.log"
L0=""; L1=""
while kill -0 $P0 2>/dev/null || kill -0 $P1 2>/dev/null; do
  x=$(resources $P0 "end rank0"); case "$x" in *rss_kb=[0-9]*) L0=$x;; esac
  x=$(resources $P1 "end rank1"); case "$x" in *rss_kb=[0-9]*) L1=$x;; esac
  sleep 1
done
echo "$L0"; echo "$L1"
wait $P0; A=$?; wait $P1; B=$?
echo "reliability: soak exit=$A,$B"; tail -n 5 "$T/rank0.log"
# Growth bounds from the first to the last sample: 64 MiB RSS, 16 fds, 8 threads, 64 MiB GPU memory.
field() { echo "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1==k{print $2}'; }
grow() { # start end key bound
  local a b; a=$(field "$1" "$3"); b=$(field "$2" "$3")
  case "$a$b" in *[!0-9]*|"") echo "reliability: soak $3 not sampled"; return 0;; esac
  echo "reliability: soak growth $3=$((b-a)) (bound $4)"; [ $((b-a)) -le $4 ]
}
OK=0
for r in 0 1; do
  S=$(grep "resources start rank$r" "$T/res.log" 2>/dev/null); [ $r = 0 ] && E=$L0 || E=$L1
  for kb in "rss_kb 65536" "fds 16" "threads 8" "gpu_mib 64"; do set -- $kb; grow "$S" "$E" $1 $2 || OK=1; done
done
[ $A -eq 0 ] && [ $B -eq 0 ] && [ $OK -eq 0 ]
"#;

/// Both ranks run the program to the end: both must pass.
const BOTH: &str = r#"
rank 0 "$@" & P0=$!
rank 1 "$@" & P1=$!
wait $P0; A=$?; wait $P1; B=$?
cat "$T/rank0.log" "$T/rank1.log" | grep "reliability:"
echo "reliability: exit=$A,$B"
[ $A -eq 0 ] && [ $B -eq 0 ]
"#;

fn script(ctx: &Context, name: &str, limit: u64, body: &str, args: &[&str]) -> Step {
    script_with(ctx, "mscclpp", name, limit, body, args)
}

fn script_with(ctx: &Context, exe: &str, name: &str, limit: u64, body: &str, args: &[&str]) -> Step {
    let mut argv = vec!["bash".to_string(), "-c".to_string(), format!("{PRELUDE}{body}"), "reliability".into()];
    argv.push(ctx.exe(exe));
    argv.extend(args.iter().map(|a| a.to_string()));
    Step::new(format!("reliability {name}"), limit, argv)
}

/// What rank 0's report must match: the eager run meets the dead peer at a bootstrap barrier (it names rank
/// 1); a graph replay has no host call between launches, so the device wait expires and its report names the
/// thread block, the operation and the peer.
const EAGER_REPORT: &str = "rank 1|peer";
const GRAPH_REPORT: &str =
    "thread block [0-9]+ .*operation [0-9]+ .*peer|peer .*thread block [0-9]+ .*operation [0-9]+";

/// The steps of the `reliability` part.
pub fn steps(ctx: &Context) -> Vec<Step> {
    let long = ["test", "allreduce_twoshot", "--size", "1M", "--dtype", "f32", "--iters", "1000000", "--no-timing"];
    let graph = [
        "test",
        "allreduce_twoshot",
        "--size",
        "1M",
        "--dtype",
        "f32",
        "--graph",
        "--iters",
        "100",
        "--runs",
        "100000",
    ];
    let short = ["test", "allreduce_twoshot", "--size", "64K", "--iters", "3", "--no-timing"];
    let kill =
        |name: &str, report: &str, args: &[&str]| script(ctx, name, 120, &format!("REPORT='{report}'\n{KILL}"), args);
    vec![
        kill("SIGKILL a rank mid-collective (eager)", EAGER_REPORT, &long),
        kill("SIGKILL a rank mid-collective (graph replay)", GRAPH_REPORT, &graph),
        script(ctx, "a late rank joins", 120, LATE, &short),
        script(ctx, "a rank that never arrives is named", 60, MISSING, &short),
        script_with(
            ctx,
            "reliability",
            "bad input (sizes, misaligned, freed, foreign stream, shared buffer)",
            180,
            BOTH,
            &["bad-input"],
        ),
        script_with(
            ctx,
            "reliability",
            "two communicators in one process x1000",
            240,
            BOTH,
            &["two-communicators", "1000"],
        ),
        script_with(
            ctx,
            "reliability",
            "two executors on one communicator x1000",
            240,
            BOTH,
            &["two-executors", "1000"],
        ),
        script_with(
            ctx,
            "reliability",
            "first launch of an element type while the other executor's collective waits on the peer",
            120,
            BOTH,
            &["first-use"],
        ),
    ]
}

/// The soak steps of half `half` (0 or 1) of the default programs (registry order: the first half, rounded up,
/// in `soak-a`), 10,000 checked launches each (35-61 s each on one shared H100); `soak-b` ends with 1,000 replays
/// of a captured graph.
fn soak(ctx: &Context, half: usize) -> Vec<Step> {
    let defaults: Vec<_> = ctx.defaults().collect();
    let first = defaults.len().div_ceil(2);
    let mine = if half == 0 { &defaults[..first] } else { &defaults[first..] };
    let mut s: Vec<Step> = mine
        .iter()
        .filter(|p| ctx.picked(&p.name))
        .map(|p| {
            // 64 KiB, or the smallest size the program admits when that is larger (the middle-size programs).
            let size = (64u64 << 10).max(p.min_size).to_string();
            let args = ["test", p.name.as_str(), "--size", &size, "--dtype", "f32", "--iters", "10000", "--no-timing"];
            script(ctx, &format!("soak {} x10000", p.name), 180, SOAK, &args)
        })
        .collect();
    if half == 1 && ctx.picked("allreduce_twoshot") {
        let replays = [
            "test",
            "allreduce_twoshot",
            "--size",
            "64K",
            "--dtype",
            "f32",
            "--graph",
            "--iters",
            "1",
            "--runs",
            "1000",
        ];
        s.push(script(ctx, "soak graph replays x1000", 180, SOAK, &replays));
    }
    s
}

/// The steps of the `soak-a` part.
pub fn soak_a(ctx: &Context) -> Vec<Step> {
    soak(ctx, 0)
}

/// The steps of the `soak-b` part.
pub fn soak_b(ctx: &Context) -> Vec<Step> {
    soak(ctx, 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parts::find;

    #[test]
    fn the_two_soak_parts_cover_every_default_once_and_fit_their_calls() {
        let ctx = crate::tests::context(2);
        let defaults: Vec<String> = ctx.defaults().map(|p| p.name.clone()).collect();
        assert!(!defaults.is_empty());
        let (a, b) = (find("soak-a").expect("soak-a").steps_in(&ctx), find("soak-b").expect("soak-b").steps_in(&ctx));
        let soaked: Vec<&str> = a.iter().chain(&b).filter_map(|s| s.name.strip_suffix(" x10000")).collect();
        for d in &defaults {
            let n = soaked.iter().filter(|s| s.ends_with(&format!("soak {d}"))).count();
            assert_eq!(n, 1, "{d} is soaked {n} times");
        }
        assert!(b.iter().any(|s| s.name.contains("graph replays x1000")));
        // The last run took up to 61 s per program (10,000 launches of 64 KiB on one shared H100).
        for part in [&a, &b] {
            assert!(part.len() * 61 <= 8 * 60, "{} steps of up to 61 s do not fit 8 minutes", part.len());
        }
    }

    #[test]
    fn the_fault_part_checks_reports_not_crashes() {
        let s = find("reliability").expect("reliability").steps_in(&crate::tests::context(2));
        let graph = s.iter().find(|s| s.name.contains("graph replay")).expect("the graph-replay kill");
        let script = &graph.argv[2];
        assert!(script.contains("-lt 128") && script.contains(GRAPH_REPORT), "{script}");
        assert!(s.iter().any(|s| s.name.contains("two executors")));
        assert!(!s.iter().any(|s| s.name.contains("soak")), "the soaks are parts of their own");
    }
}
