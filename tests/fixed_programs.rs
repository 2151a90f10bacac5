//! The embedded plan-specialised interpreter programs (`mscclpp-sys/cuda/include/mscclpp/interp_fixed.hpp`) are
//! those of the default programs: every registered LL program, and every Simple program the registry selects
//! (its default selector, or a shipped tuned table's row) for any collective at 2, 4 and 8 ranks, in place and
//! out of place, from 1 KiB to 1 GiB, at the thread-block counts it picks for those sizes (the records'
//! operation sequences); each for both block-size classes (up to 512 and up to 1024 threads), so a launch of a
//! default plan at any threads per block a tuned table picks compiles nothing. `MSCCLPP_BLESS=1` rewrites the
//! header.

use std::collections::BTreeMap;

use mscclpp::exec::executor::records;
use mscclpp::exec::sys::fixed::{self, Signature};
use mscclpp::exec::sys::interpreter::{BlockSize, ElementType, PacketType};
use mscclpp_algorithms as _;
use mscclpp_lang::plan::{Collective, Layout, Plan, Protocol};
use mscclpp_lang::registry::{self, Request, TunedTable};

mod common;

/// Element types embedded: those of torch's collectives in practice.
const DTYPES: [ElementType; 3] = [ElementType::F16, ElementType::Bf16, ElementType::F32];

fn header_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("mscclpp-sys/cuda/include/mscclpp/interp_fixed.hpp")
}

/// The tuned tables shipped with the library (`mscclpp-exec/tables/`, as the executor embeds them), each parsed.
fn shipped_tables() -> Vec<&'static TunedTable> {
    mscclpp::exec::tune::table::shipped_tables()
        .iter()
        .map(|(name, table)| table.as_ref().unwrap_or_else(|e| panic!("shipped table {name}: {e}")))
        .collect()
}

/// A signature, where it was first seen, and the packet formats its entry points are embedded for.
struct Embedded {
    sig: Signature,
    what: String,
    packets: Vec<PacketType>,
}

/// Adds the signature of every rank's records of `plan` at `size` bytes (the collective's buffers), with entry
/// points for `packet`.
fn add_plan(out: &mut BTreeMap<u64, Embedded>, plan: &Plan, n: usize, size: u64, what: &str, packet: PacketType) {
    let Some(sizes) = mscclpp_lang::data::BufferSizes::for_collective(plan.collective, n, size) else { return };
    for rank in 0..n {
        if Layout::new(plan, rank, sizes.input, sizes.output).is_err() {
            continue;
        }
        let shape = common::f16_shape(&sizes);
        let Ok(recs) = records::build(plan, rank, shape) else { continue };
        let sig = recs.signature();
        let e = out.entry(sig.hash).or_insert_with(|| Embedded { sig, what: what.to_string(), packets: Vec::new() });
        if !e.packets.contains(&packet) {
            e.packets.push(packet);
            e.packets.sort_by_key(|p| PacketType::ALL.iter().position(|q| q == p));
        }
    }
}

/// Every signature of the default programs' records, and where it came from.
fn default_signatures() -> BTreeMap<u64, Embedded> {
    let mut out: BTreeMap<u64, Embedded> = BTreeMap::new();
    // Every LL and LL128 program at the sizes it serves (LL128 plans run on LL128 entry points only).
    let sizes = [1u64 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20];
    for case in common::registered_cases(&[2, 4, 8], &sizes) {
        let common::Case { meta, world: n, inplace, size, target, .. } = case;
        let packet = match meta.protocol {
            Protocol::Ll => PacketType::Ll16,
            Protocol::Ll128 => PacketType::Ll128,
            _ => continue,
        };
        for target in [target, target.instances(1)] {
            let Ok(plan) = meta.build_plan(&target) else { continue };
            add_plan(&mut out, &plan, n, size, &format!("{} n={n} inplace={inplace}", meta.name), packet);
        }
    }
    // The Simple programs selection runs: without a table, and with each shipped table at its world size.
    let tables = shipped_tables();
    assert!(!tables.is_empty(), "no shipped tuned table in mscclpp-exec/tables");
    let sizes: Vec<u64> = (10..=30).map(|e| 1u64 << e).collect();
    for collective in Collective::ALL {
        for n in [2usize, 4, 8] {
            let with: Vec<Option<&TunedTable>> = std::iter::once(None)
                .chain(tables.iter().filter(|t| t.key.world_size == n).map(|t| Some(*t)))
                .collect();
            for table in with {
                for inplace in [true, false] {
                    for &size in &sizes {
                        let request = Request::new(collective, n, size).inplace(inplace);
                        let Ok(selected) = registry::select_with(&request, table) else { continue };
                        if selected.program.protocol != Protocol::Simple {
                            continue;
                        }
                        let Ok(plan) = selected.plan() else { continue };
                        let what = format!("{} n={n} inplace={inplace} (selected)", selected.program.name);
                        add_plan(&mut out, &plan, n, size, &what, PacketType::Ll16);
                    }
                }
            }
        }
    }
    out
}

/// The block-size classes embedded for a packet format: both for LL16 (a tuned table may run the program with any
/// threads per block, and a class without its entry would fall back to the generic interpreter); the smaller for
/// LL128, whose programs and tables run at most 512 threads per block.
fn block_sizes(packet: PacketType) -> &'static [BlockSize] {
    if packet == PacketType::Ll128 { &[BlockSize::UpTo512] } else { &BlockSize::ALL }
}

/// Every signature's entry points: each element type, for each of its packet formats at their block-size classes.
fn entry_points(e: &Embedded) -> Vec<fixed::EntryPoint> {
    e.packets
        .iter()
        .flat_map(|&p| DTYPES.iter().flat_map(move |&t| block_sizes(p).iter().map(move |&b| (t, p, b))))
        .collect()
}

fn render(sigs: &BTreeMap<u64, Embedded>) -> String {
    let entries: Vec<(&Signature, Vec<fixed::EntryPoint>)> = sigs.values().map(|e| (&e.sig, entry_points(e))).collect();
    let origins: Vec<String> = sigs.values().map(|e| format!("  {:016x}: {}", e.sig.hash, e.what)).collect();
    let banner = format!(
        "Generated by the `fixed_programs` test (tests/fixed_programs.rs; MSCCLPP_BLESS=1 cargo test --test \
         fixed_programs\nrewrites it): the default programs' interpreter programs (every LL program, the Simple programs\nselection runs), \
         specialised (mscclpp-sys/src/fixed.rs), for f16, bf16 and f32 with LL16 packets (LL128 for the LL128 programs). \
         Included by execution_kernel.cu \
         only. First seen as:\n{}",
        origins.join("\n")
    );
    fixed::header_source(&entries, &banner)
}

#[test]
fn the_embedded_programs_are_those_of_the_default_programs() {
    let sigs = default_signatures();
    assert!(sigs.len() >= 4, "only {} signatures from the default programs", sigs.len());
    assert!(
        sigs.values().any(|e| e.what.contains("(selected)")),
        "no Simple program among the embedded ones: {:?}",
        sigs.values().map(|e| &e.what).collect::<Vec<_>>()
    );
    assert!(sigs.values().any(|e| e.packets.contains(&PacketType::Ll128)), "no LL128 program among the embedded ones");
    let text = render(&sigs);
    let path = header_path();
    let bless = std::env::var("MSCCLPP_BLESS").is_ok_and(|v| v == "1");
    if bless {
        std::fs::write(&path, &text).expect("writing the header");
    }
    let on_disk = std::fs::read_to_string(&path).expect("reading the header");
    assert!(
        on_disk == text,
        "{} is out of date with the registry's default programs; run `MSCCLPP_BLESS=1 cargo test --test fixed_programs`",
        path.display()
    );
    // The executor finds every entry point by its instantiation line: in the header's text, and in the header this
    // binary embeds (the old one on the run that rewrites it, so only when not blessing).
    let expected: usize = sigs.values().map(|e| entry_points(e).len()).sum();
    let mut headers = vec![("the generated header", fixed::entries_of(&text))];
    if !bless {
        headers.push(("the embedded header", fixed::embedded_entries()));
    }
    for (which, entries) in headers {
        assert_eq!(entries.len(), expected, "{which}: {entries:?}");
        assert!(entries.iter().all(|(hash, _)| sigs.contains_key(hash)), "{which}: {entries:?}");
    }
}
