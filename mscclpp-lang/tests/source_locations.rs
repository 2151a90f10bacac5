//! Source locations: every eDSL call records the program's own source line, lowering keeps every line of a fused
//! operation, plans carry them in the optional `source_locations` key, and build errors and verifier findings name
//! them. Expected lines come from `line!()` next to the calls.

use std::sync::atomic::{AtomicU32, Ordering};

use mscclpp_lang::plan::{Operation, Plan, SourceLocation, emit_plan, parse_plan};
use mscclpp_lang::prelude::*;
use mscclpp_lang::registry::{self, Target};
use mscclpp_lang::verify::{FindingKind, Report, VerifyOptions, verify, verify_text};

/// Every operation of a plan, pipeline steps included.
fn all_ops(plan: &Plan) -> Vec<&Operation> {
    let mut ops = Vec::new();
    for tb in plan.gpus.iter().flat_map(|g| &g.threadblocks) {
        for op in &tb.ops {
            ops.push(op);
            ops.extend(op.inner());
        }
    }
    ops
}

/// The distinct (call, line) pairs the plan's operations carry, sorted; asserts every one lies in this file.
fn recorded(plan: &Plan) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = Vec::new();
    for s in all_ops(plan).into_iter().flat_map(Operation::sources) {
        assert_eq!(s.file, file!(), "{s}");
        out.push((s.call.clone(), s.line));
    }
    out.sort();
    out.dedup();
    out
}

fn sorted(mut want: Vec<(&'static str, u32)>) -> Vec<(String, u32)> {
    want.sort();
    want.dedup();
    want.into_iter().map(|(c, l)| (c.to_string(), l)).collect()
}

/// "`call` at this-file:line:" — a source location up to its column.
fn at(call: &str, line: u32) -> String {
    format!("`{call}` at {}:{line}:", file!())
}

fn unfused(name: &str, ranks: usize, input: usize, output: usize) -> ProgramSpec {
    let mut spec = ProgramSpec::new(name, Collective::Test, ranks).buffer_chunks(input, output).source_locations(true);
    spec.instr_fusion = false;
    spec
}

/// Calls every Simple operation once (each on its own line, the expected line pushed right after it).
fn simple_calls(p: &mut Program<'_, Simple>, want: &mut Vec<(&'static str, u32)>) -> Result<(), ProgramError> {
    let (i0, o0, i1, o1) = (p.input(0)?, p.output(0)?, p.input(1)?, p.output(1)?);
    let mem = p.memory_channel(1, 0)?;
    let back = p.memory_channel(0, 1)?;
    let port = p.port_channel(1, 0)?;
    let port_back = p.port_channel(0, 1)?;
    let switch = p.switch_channel(&[0, 1], BufferType::Output)?;
    let sem = p.semaphore(0, 0)?;
    let r0 = p.rank(0)?;
    r0.copy(o0.chunk(0)?, i0.chunk(0)?, 0)?;
    want.push(("copy", line!() - 1));
    r0.reduce(o0.chunk(1)?, i0.chunk(1)?, &[i0.chunk(2)?], 0, ReduceOp::Sum)?;
    want.push(("reduce", line!() - 1));
    mem.put(o1.chunk(0)?, i0.chunk(0)?, 1)?;
    want.push(("put", line!() - 1));
    mem.signal(1, SyncType::Both)?;
    want.push(("signal", line!() - 1));
    back.wait(1, SyncType::Both)?;
    want.push(("wait", line!() - 1));
    mem.get(o0.chunk(2)?, i1.chunk(0)?, 2)?;
    want.push(("get", line!() - 1));
    mem.read_reduce(o0.chunk(3)?, i0.chunk(3)?, &[i1.chunk(3)?], 2, ReduceOp::Sum)?;
    want.push(("read_reduce", line!() - 1));
    mem.relaxed_signal(3, SyncType::None)?;
    want.push(("relaxed_signal", line!() - 1));
    back.relaxed_wait(3, SyncType::None)?;
    want.push(("relaxed_wait", line!() - 1));
    port.put_with_signal(o1.chunk(1)?, i0.chunk(1)?, 4)?;
    want.push(("put_with_signal", line!() - 1));
    port.put_with_signal_and_flush(o1.chunk(2)?, i0.chunk(2)?, 5)?;
    want.push(("put_with_signal_and_flush", line!() - 1));
    port_back.wait(4, SyncType::Both)?;
    want.push(("wait", line!() - 1));
    port_back.wait(5, SyncType::Both)?;
    want.push(("wait", line!() - 1));
    port.put(o1.chunk(3)?, i0.chunk(3)?, 6)?;
    want.push(("put", line!() - 1));
    port.flush(6, SyncType::None)?;
    want.push(("flush", line!() - 1));
    sem.release(7, SyncType::None)?;
    want.push(("release", line!() - 1));
    sem.acquire(8, SyncType::None)?;
    want.push(("acquire", line!() - 1));
    r0.barrier(&[9])?;
    want.push(("barrier", line!() - 1));
    p.barrier(0, &[10, 11])?;
    want.push(("barrier", line!() - 1));
    switch.reduce(o0.chunk(0)?, 1, 12, ReduceOp::Sum)?;
    want.push(("switch reduce", line!() - 1));
    switch.broadcast(2, o0.chunk(0)?, 13)?;
    want.push(("broadcast", line!() - 1));
    want.push(("pipeline", line!() + 1));
    p.pipeline(64, 1, |_| {
        mem.put(o1.chunk(0)?, i0.chunk(0)?, 14)?;
        want.push(("put", line!() - 1));
        Ok(())
    })?;
    Ok(())
}

/// Calls every packet operation once.
fn packet_calls(p: &mut Program<'_, LL>, want: &mut Vec<(&'static str, u32)>) -> Result<(), ProgramError> {
    let (i0, o0) = (p.input(0)?, p.output(0)?);
    let (s0, s1) = (p.scratch(0, 4)?, p.scratch(1, 4)?);
    let mem = p.memory_channel(1, 0)?;
    let switch = p.switch_channel(&[0, 1], BufferType::Scratch)?;
    let r0 = p.rank(0)?;
    mem.put_packets(s1.chunk(0)?, i0.chunk(0)?, 0)?;
    want.push(("put_packets", line!() - 1));
    mem.read_put_packets(s1.chunk(1)?, s0.chunk(0)?, 1)?;
    want.push(("read_put_packets", line!() - 1));
    r0.copy_packets(s0.chunk(1)?, i0.chunk(0)?, 2)?;
    want.push(("copy_packets", line!() - 1));
    r0.unpack_packets(o0.chunk(0)?, s0.chunk(2)?, 3)?;
    want.push(("unpack_packets", line!() - 1));
    r0.reduce_packets(o0.chunk(1)?, i0.chunk(1)?, &[s0.chunk(3)?], 4, ReduceOp::Sum)?;
    want.push(("reduce_packets", line!() - 1));
    switch.broadcast_packets(0, s0.chunk(0)?, 5)?;
    want.push(("broadcast_packets", line!() - 1));
    Ok(())
}

#[test]
fn every_edsl_call_records_the_line_of_the_program_that_made_it() {
    let mut want = Vec::new();
    let plan = build_plan(&unfused("every_call", 2, 4, 4), |p| simple_calls(p, &mut want)).unwrap();
    assert!(want.len() > 20, "{want:?}");
    assert_eq!(recorded(&plan), sorted(want));

    let mut want = Vec::new();
    let plan = build_plan(&unfused("every_packet_call", 2, 2, 2), |p| packet_calls(p, &mut want)).unwrap();
    assert_eq!(want.len(), 6);
    assert_eq!(recorded(&plan), sorted(want));
}

/// `reduce` into a chunk, then `put` of that chunk: the lowering fuses both into one `res`.
fn reduce_then_put(p: &mut Program<'_, Simple>, lines: &mut [u32; 2]) -> Result<(), ProgramError> {
    let (i0, o1) = (p.input(0)?, p.output(1)?);
    let ch = p.memory_channel(1, 0)?;
    p.rank(0)?.reduce(i0.chunk(0)?, i0.chunk(0)?, &[i0.chunk(1)?], 0, ReduceOp::Sum)?;
    lines[0] = line!() - 1;
    ch.put(o1.chunk(0)?, i0.chunk(0)?, 0)?;
    lines[1] = line!() - 1;
    Ok(())
}

#[test]
fn a_fused_operation_keeps_the_lines_of_every_call_in_program_order() {
    let mut lines = [0; 2];
    let spec = ProgramSpec::new("fused", Collective::Test, 2).buffer_chunks(2, 2).source_locations(true);
    let plan = build_plan(&spec, |p| reduce_then_put(p, &mut lines)).unwrap();
    let op = &plan.gpus[0].threadblocks[0].ops[0];
    assert_eq!(op.name, OpName::ReduceSend, "{op:?}");
    let calls: Vec<(&str, u32)> = op.sources().iter().map(|s| (s.call.as_str(), s.line)).collect();
    assert_eq!(calls, vec![("reduce", lines[0]), ("put", lines[1])]);
    assert!(op.sources().iter().all(|s| s.file == file!() && s.column > 0));
}

#[test]
fn a_fused_packet_operation_keeps_the_lines_of_every_call() {
    let mut lines = [0; 2];
    let spec = ProgramSpec::new("fused_packets", Collective::Test, 2).buffer_chunks(1, 1).source_locations(true);
    let plan = build_plan::<LL>(&spec, |p| {
        let (i0, o0, s0, s1) = (p.input(0)?, p.output(0)?, p.scratch(0, 1)?, p.scratch(1, 1)?);
        let ch = p.memory_channel(1, 0)?;
        p.rank(0)?.reduce_packets(o0.chunk(0)?, i0.chunk(0)?, &[s0.chunk(0)?], 0, ReduceOp::Sum)?;
        lines[0] = line!() - 1;
        ch.put_packets(s1.chunk(0)?, o0.chunk(0)?, 0)?;
        lines[1] = line!() - 1;
        Ok(())
    })
    .unwrap();
    let op = &plan.gpus[0].threadblocks[0].ops[0];
    assert_eq!(op.name, OpName::ReduceSendPackets, "{op:?}");
    let calls: Vec<(&str, u32)> = op.sources().iter().map(|s| (s.call.as_str(), s.line)).collect();
    assert_eq!(calls, vec![("reduce_packets", lines[0]), ("put_packets", lines[1])]);
}

#[test]
fn plans_carry_source_locations_only_when_asked_and_round_trip_with_them() {
    let mut lines = [0; 2];
    let spec = ProgramSpec::new("fused", Collective::Test, 2).buffer_chunks(2, 2);
    let plain = build_plan(&spec, |p| reduce_then_put(p, &mut lines)).unwrap();
    assert!(all_ops(&plain).iter().all(|op| op.source_locations.is_none()));
    assert!(!emit_plan(&plain).contains("source_locations"));

    let with = build_plan(&spec.source_locations(true), |p| reduce_then_put(p, &mut lines)).unwrap();
    let text = emit_plan(&with);
    assert!(text.contains("\"source_locations\""), "{text}");
    let back = parse_plan(&text).unwrap();
    assert_eq!(back, with);
    assert_eq!(emit_plan(&back), text);
    // Apart from the extension, the plan is the same.
    let mut stripped = with.clone();
    for g in &mut stripped.gpus {
        for tb in &mut g.threadblocks {
            for op in &mut tb.ops {
                op.source_locations = None;
                for inner in op.ops.iter_mut().flatten() {
                    inner.source_locations = None;
                }
            }
        }
    }
    assert_eq!(stripped, plain);
    assert_eq!(emit_plan(&stripped), emit_plan(&plain));
}

#[test]
fn a_source_location_key_with_an_unknown_field_is_a_clear_error() {
    let mut lines = [0; 2];
    let spec = ProgramSpec::new("fused", Collective::Test, 2).buffer_chunks(2, 2).source_locations(true);
    let plan = build_plan(&spec, |p| reduce_then_put(p, &mut lines)).unwrap();
    let text = emit_plan(&plan).replacen("\"column\"", "\"col\"", 1);
    let e = parse_plan(&text).unwrap_err().to_string();
    assert!(e.contains("source_locations") && e.contains("col"), "{e}");
}

/// Rank 0 reduces and puts into rank 1's output chunk 0 (one fused `res`) while rank 1 copies into the same
/// chunk: nothing orders them, a data race.
fn racy(p: &mut Program<'_, Simple>, lines: &mut [u32; 3]) -> Result<(), ProgramError> {
    let mut fused = [0; 2];
    reduce_then_put(p, &mut fused)?;
    (lines[0], lines[1]) = (fused[0], fused[1]);
    p.rank(1)?.copy(p.output(1)?.chunk(0)?, p.input(1)?.chunk(0)?, 0)?;
    lines[2] = line!() - 1;
    Ok(())
}

fn opts() -> VerifyOptions {
    VerifyOptions { schedules: 4, launches: 2, size: Some(4096), ..VerifyOptions::default() }
}

fn finding(report: &Report, kind: FindingKind) -> String {
    let f = report.findings.iter().find(|f| f.kind == kind);
    f.unwrap_or_else(|| panic!("no {kind:?} in:\n{}", report.render())).message.clone()
}

#[test]
fn a_race_names_the_program_lines_of_both_accesses() {
    let mut lines = [0; 3];
    let spec = ProgramSpec::new("racy", Collective::Test, 2).buffer_chunks(2, 2).source_locations(true);
    let plan = build_plan(&spec, |p| racy(p, &mut lines)).unwrap();
    let report = verify(&plan, &opts());
    let race = finding(&report, FindingKind::DataRace);
    let put = format!(" and {}", at("put", lines[1]));
    for part in
        [&at("reduce", lines[0]), &put, ", fused into `res` (rank 0 thread block 0 op 0)", &at("copy", lines[2])]
    {
        assert!(race.contains(part), "missing {part:?} in:\n{race}");
    }
    // The same plan read back from JSON names the same lines.
    let again = verify_text(&emit_plan(&plan), &opts());
    assert_eq!(finding(&again, FindingKind::DataRace), race);
    // Without source locations, the finding reads as before: no source line.
    let plain = build_plan(&spec.source_locations(false), |p| racy(p, &mut [0; 3])).unwrap();
    assert!(all_ops(&plain).iter().all(|op| op.sources().is_empty()));
    let race = finding(&verify(&plain, &opts()), FindingKind::DataRace);
    assert!(!race.contains(file!()) && race.contains("rank 0 thread block 0 op 0 `res`"), "{race}");
}

/// At 2 ranks, two channels each way; rank 0 signals on its first channel, rank 1 waits on its second: the wait
/// pairs with a channel nobody signals.
fn mispaired(p: &mut Program<'_, Simple>, check: bool, lines: &mut [u32; 5]) -> Result<(), ProgramError> {
    p.set_channel_pairing_check(check);
    let first = p.memory_channel(1, 0)?;
    lines[0] = line!() - 1;
    let _second = p.memory_channel(1, 0)?;
    let _back_first = p.memory_channel(0, 1)?;
    lines[1] = line!() - 1;
    let back_second = p.memory_channel(0, 1)?;
    lines[4] = line!() - 1;
    first.signal(0, SyncType::Both)?;
    lines[2] = line!() - 1;
    back_second.wait(0, SyncType::Both)?;
    lines[3] = line!() - 1;
    Ok(())
}

#[test]
fn a_mispaired_wait_names_the_channels_and_the_signal_and_wait_lines_at_build_time() {
    let mut lines = [0; 5];
    let spec = ProgramSpec::new("mispaired", Collective::Test, 2).buffer_chunks(1, 1);
    let e = build_plan(&spec, |p| mispaired(p, true, &mut lines)).unwrap_err();
    assert!(matches!(e, ProgramError::MispairedChannel { src: 0, dst: 1, k: 0, .. }), "{e:?}");
    let text = e.to_string();
    let f = file!();
    for part in [
        format!("rank 0's memory channel 0 to rank 1 (created at {f}:{}:", lines[0]),
        format!(", signalled at {f}:{}:", lines[2]),
        format!("pairs with rank 1's memory channel 0 to rank 0 (created at {f}:{}:", lines[1]),
        format!(
            "; rank 1 waits for rank 0 instead on rank 1's memory channel 1 to rank 0 (created at {f}:{}:",
            lines[4]
        ),
        format!(", waited on at {f}:{}:", lines[3]),
    ] {
        assert!(text.contains(&part), "missing {part:?} in: {text}");
    }
}

#[test]
fn a_deadlock_names_the_line_of_the_blocked_wait() {
    let mut lines = [0; 5];
    let spec = ProgramSpec::new("mispaired", Collective::Test, 2).buffer_chunks(1, 1).source_locations(true);
    let plan = build_plan(&spec, |p| mispaired(p, false, &mut lines)).unwrap();
    let report = verify(&plan, &opts());
    let deadlock = finding(&report, FindingKind::Deadlock);
    let blocked = format!("\n  {}", at("wait", lines[3]));
    assert!(deadlock.contains(&blocked), "missing {blocked:?} in:\n{deadlock}");
    assert!(deadlock.contains(" (rank 1, thread block 0, operation "), "{deadlock}");
}

#[test]
fn build_errors_name_the_line_of_the_call_through_every_helper() {
    let spec = ProgramSpec::new("errors", Collective::Test, 2).buffer_chunks(2, 2);
    let mut line = 0;
    let e = build_plan::<Simple>(&spec, |p| {
        let ch = p.memory_channel(1, 0)?;
        let result = ch.put(p.output(1)?.chunk(0)?, p.input(1)?.chunk(0)?, 3);
        line = line!() - 1;
        result
    })
    .unwrap_err();
    let site = e.site().unwrap();
    assert_eq!(site.source.len(), 1, "{e}");
    assert_eq!((site.source[0].call.as_str(), site.source[0].line), ("put", line));
    assert!(e.to_string().starts_with(&at("put", line)), "{e}");
    assert!(e.to_string().contains(" (rank 0, thread block 3): the source chunk is on rank 1"), "{e}");

    let e = build_plan::<Simple>(&spec, |p| {
        let result = p.semaphore(0, 0)?.acquire(&p.tb_group(&[0, 1])?, SyncType::None);
        line = line!() - 1;
        result
    })
    .unwrap_err();
    assert!(e.to_string().starts_with(&at("acquire", line)), "{e}");

    let e = build_plan::<Simple>(&spec, |p| {
        let result = p.barrier(1, &[]);
        line = line!() - 1;
        result
    })
    .unwrap_err();
    assert!(e.to_string().starts_with(&at("barrier", line)), "{e}");

    let e = build_plan::<Simple>(&spec, |p| {
        let result = p.memory_channel(2, 0).map(|_| ());
        line = line!() - 1;
        result
    })
    .unwrap_err();
    assert!(e.to_string().starts_with(&at("memory_channel", line)), "{e}");

    for which in 0..3 {
        let e = build_plan::<Simple>(&spec, |p| {
            line = line!() + 2 + which;
            match which {
                0 => p.input(2).map(|_| ()),
                1 => p.output(2).map(|_| ()),
                _ => p.scratch(2, 1).map(|_| ()),
            }
        })
        .unwrap_err();
        let call = ["input", "output", "scratch"][which as usize];
        assert!(e.to_string().starts_with(&at(call, line)), "{e}");
    }

    let e = build_plan::<Simple>(&spec, |p| {
        let result = p.tb_group(&[0, 0]).map(|_| ());
        line = line!() - 1;
        result
    })
    .unwrap_err();
    assert!(e.to_string().starts_with(&at("tb_group", line)), "{e}");
}

#[test]
fn unbalanced_signals_name_the_signal_lines_at_build_time() {
    let spec = ProgramSpec::new("unbalanced", Collective::Test, 2).buffer_chunks(1, 1);
    let mut line = 0;
    let e = build_plan::<Simple>(&spec, |p| {
        let ch = p.memory_channel(1, 0)?;
        for tb in 0..2 {
            ch.signal(tb, SyncType::None)?;
            line = line!() - 1;
        }
        Ok(())
    })
    .unwrap_err();
    assert!(matches!(e, ProgramError::UnpairedSignal { signals: 2, waits: 0, .. }), "{e:?}");
    let want = format!("(signals at {}:{line}:", file!());
    assert!(e.to_string().contains(&want) && e.to_string().contains(" (2 times))"), "{e}");
}

static MACRO_COPY_LINE: AtomicU32 = AtomicU32::new(0);

/// Each rank copies its input into its output, through the macro's registration.
#[collective_program(name = "source_locations_macro_copy", collective = "allgather", world_sizes = 1..=1)]
fn macro_copy(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    p.rank(0)?.copy(p.output(0)?.all()?, p.input(0)?.all()?, 0)?;
    MACRO_COPY_LINE.store(line!() - 1, Ordering::Relaxed);
    Ok(())
}

#[test]
fn a_registered_program_records_the_lines_of_its_own_body() {
    let meta = registry::find("source_locations_macro_copy").unwrap();
    let plan = meta.build_plan(&Target::new(1).source_locations(true)).unwrap();
    let line = MACRO_COPY_LINE.load(Ordering::Relaxed);
    assert!(line > 0);
    let sources: Vec<&SourceLocation> = all_ops(&plan).into_iter().flat_map(Operation::sources).collect();
    assert_eq!(sources.len(), 1, "{sources:?}");
    assert_eq!((sources[0].call.as_str(), sources[0].file.as_str(), sources[0].line), ("copy", file!(), line));
    // Without asking, the registry's plan has none.
    let plain = meta.build_plan(&Target::new(1)).unwrap();
    assert!(all_ops(&plain).iter().all(|op| op.source_locations.is_none()));
}

#[test]
fn an_unbalanced_semaphore_names_the_line_of_its_release() {
    let spec = ProgramSpec::new("unbalanced_semaphore", Collective::Test, 1).buffer_chunks(1, 1).source_locations(true);
    let mut line = 0;
    let plan = build_plan::<Simple>(&spec, |p| {
        p.semaphore(0, 0)?.release(0, SyncType::None)?;
        line = line!() - 1;
        Ok(())
    })
    .unwrap();
    let report = verify(&plan, &opts());
    let unbalanced = finding(&report, FindingKind::Unbalanced);
    assert!(unbalanced.contains("device semaphore 0 ends at"), "{unbalanced}");
    assert!(unbalanced.contains(&format!(" (releases: {}", at("release", line))), "{unbalanced}");
}

#[test]
fn a_lowered_operation_the_plan_cannot_hold_names_the_calls_fused_into_it() {
    // Nine signals over nine channels on one thread block fuse into one `signal` (made by one line, named once);
    // an operation holds at most eight channels. Plans without source locations are checked with them.
    let spec = ProgramSpec::new("too_wide", Collective::Test, 10).buffer_chunks(1, 1);
    let mut lines = Vec::new();
    let e = build_plan::<Simple>(&spec, |p| {
        for peer in 1..10 {
            p.memory_channel(peer, 0)?.signal(0, SyncType::None)?;
            lines.push(line!() - 1);
            p.memory_channel(0, peer)?.wait(0, SyncType::None)?;
        }
        Ok(())
    })
    .unwrap_err();
    assert!(matches!(e, ProgramError::Plan(_)), "{e:?}");
    let text = e.to_string();
    assert!(text.contains(&format!("invalid plan at {}", at("signal", lines[0]))), "{text}");
    assert!(text.contains(" (rank 0, thread block 0, operation 0 `signal`, field `channel_ids`)"), "{text}");
}
