//! `mscclpp bench`'s inputs and outputs without a GPU: the sizes grammar, the collectives it times, the rows it
//! measures and their renderings (the nccl-tests-style table, CSV and JSON).

use std::fmt::Write as _;

use mscclpp_lang::ParseError;
use mscclpp_lang::plan::Collective;
use mscclpp_lang::registry::parse_size;
use serde::Serialize;

/// Most sizes one `--sizes` may name (a range with a tiny factor would otherwise run for ever).
pub const MAX_SIZES: usize = 4096;

/// The collectives `mscclpp bench` times.
pub const BENCH_COLLECTIVES: [Collective; 5] = [
    Collective::AllReduce,
    Collective::AllGather,
    Collective::ReduceScatter,
    Collective::AllToAll,
    Collective::Broadcast,
];

/// Parses a collective `mscclpp bench` times: `allreduce`, `all-reduce`, `all_reduce`, `allgather`,
/// `reducescatter`, `alltoall`, `broadcast` (any case).
pub fn parse_collective(s: &str) -> Result<Collective, ParseError> {
    let names = || BENCH_COLLECTIVES.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ");
    match s.parse::<Collective>() {
        Ok(c) if BENCH_COLLECTIVES.contains(&c) => Ok(c),
        Ok(c) => Err(ParseError::invalid(s, format!("`mscclpp bench` does not time `{c}`; use one of {}", names()))),
        Err(_) => Err(ParseError::Unknown {
            what: "collective",
            input: s.to_string(),
            expected: format!("one of {}", names()),
        }),
    }
}

/// Sizes from `--sizes` of `bench` and `tune` (see [`parse_sizes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes(pub Vec<u64>);

/// Parses `--sizes`: a comma-separated list of sizes (`1K,4K+16,1M`) and ranges, `A:B` doubling from `A` up to
/// `B` (inclusive when reached) and `A:B:xF` multiplying by the integer `F` (at least 2). Sizes use the grammar of
/// `mscclpp test --size` (`1048576`, `4K`, `64MiB`, `1G`). The result is in the order given.
pub fn parse_sizes(s: &str) -> Result<Vec<u64>, ParseError> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(ParseError::invalid(
                s,
                format!("empty size in `{s}`; write sizes like 1K:1G, 1K:1G:x4 or 1K,64K,1M"),
            ));
        }
        let parts: Vec<&str> = item.split(':').collect();
        match parts.as_slice() {
            [one] => out.push(parse_size(one)?),
            [a, b] | [a, b, _] => {
                let (lo, hi) = (parse_size(a)?, parse_size(b)?);
                let factor = match parts.get(2) {
                    None => 2,
                    Some(f) => {
                        let digits = f.strip_prefix('x').or_else(|| f.strip_prefix('X')).ok_or_else(|| {
                            ParseError::invalid(
                                s,
                                format!("`{f}` in `{item}` is not a factor; write it as x2, x4, ... (e.g. 1K:1G:x4)"),
                            )
                        })?;
                        match digits.parse::<u64>() {
                            Ok(v) if v >= 2 => v,
                            _ => {
                                return Err(ParseError::invalid(
                                    s,
                                    format!("factor `{f}` in `{item}` must be an integer of at least 2"),
                                ));
                            }
                        }
                    }
                };
                if lo == 0 {
                    return Err(ParseError::invalid(
                        s,
                        format!("range `{item}` starts at 0 bytes; start it at 1 or more"),
                    ));
                }
                if lo > hi {
                    return Err(ParseError::invalid(
                        s,
                        format!("range `{item}` runs backwards; write the smaller size first"),
                    ));
                }
                let mut v = lo;
                while v <= hi {
                    out.push(v);
                    if out.len() > MAX_SIZES {
                        break;
                    }
                    match v.checked_mul(factor) {
                        Some(next) => v = next,
                        None => break,
                    }
                }
            }
            _ => return Err(ParseError::invalid(s, format!("`{item}` has too many `:`; write A:B or A:B:xF"))),
        }
        if out.len() > MAX_SIZES {
            return Err(ParseError::invalid(
                s,
                format!("`{s}` names more than {MAX_SIZES} sizes; use a larger factor or a shorter range"),
            ));
        }
    }
    Ok(out)
}

/// The factor nccl-tests multiplies the algorithm bandwidth by to get the bus bandwidth of `collective` on
/// `world` ranks: all-reduce 2(n-1)/n, all-gather, reduce-scatter and all-to-all (n-1)/n, broadcast 1.
pub fn bus_factor(collective: Collective, world: usize) -> f64 {
    let n = world.max(1) as f64;
    match collective {
        Collective::AllReduce => 2.0 * (n - 1.0) / n,
        Collective::AllGather | Collective::ReduceScatter | Collective::AllToAll => (n - 1.0) / n,
        _ => 1.0,
    }
}

/// One implementation's figures at one size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Timing {
    /// Median µs per call over the timed runs.
    pub us: f64,
    /// The fastest run's µs per call.
    pub us_min: f64,
    /// Algorithm bandwidth, GB/s: bytes over the median time.
    pub algbw: f64,
    /// Bus bandwidth, GB/s: `algbw` times [`bus_factor`].
    pub busbw: f64,
    /// Elements out of tolerance against the reference result in the checked launch (`None`: not checked).
    pub wrong: Option<u64>,
}

impl Timing {
    /// Figures of a message of `bytes` bytes that took `us` µs per call (median) and `us_min` at best.
    pub fn new(collective: Collective, world: usize, bytes: u64, us: f64, us_min: f64, wrong: Option<u64>) -> Timing {
        let algbw = if us > 0.0 { bytes as f64 / (us * 1e3) } else { 0.0 };
        Timing { us, us_min, algbw, busbw: algbw * bus_factor(collective, world), wrong }
    }
}

/// One size of a benchmark.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Message size in bytes (the output of an all-gather, the input of every other collective).
    pub bytes: u64,
    /// Elements of that message.
    pub count: u64,
    /// Element type.
    pub dtype: String,
    /// The program that ran, or why none did (`None` with `skipped` set).
    pub program: Option<String>,
    /// Thread blocks per rank × threads per block of the program.
    pub thread_blocks: usize,
    /// Threads per block.
    pub threads: u32,
    /// Ours (`None` when no program admits the size).
    pub ours: Option<Timing>,
    /// NCCL's, with `--nccl`.
    pub nccl: Option<Timing>,
    /// Why this size was not run by us, when it was not.
    pub skipped: Option<String>,
}

impl Row {
    /// NCCL's median time over ours (above 1: we are faster); `None` unless both ran.
    pub fn speedup(&self) -> Option<f64> {
        match (&self.ours, &self.nccl) {
            (Some(o), Some(n)) if o.us > 0.0 => Some(n.us / o.us),
            _ => None,
        }
    }
}

/// A whole benchmark: what ran, and one row per size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The collective.
    pub collective: String,
    /// Ranks.
    pub world: usize,
    /// `graph` or `eager`.
    pub mode: String,
    /// In place.
    pub in_place: bool,
    /// The build that ran (`mscclpp 0.1.0 (commit ...)`).
    pub build: String,
    /// The rows, one per size.
    pub rows: Vec<Row>,
}

fn num(v: f64, decimals: usize) -> String {
    if v.is_finite() { format!("{v:.decimals$}") } else { "-".to_string() }
}

/// The five timing columns of one side (ours or NCCL's): dashes when that side did not run.
fn timing_columns(s: &mut String, t: Option<&Timing>) {
    let _ = match t {
        Some(t) => write!(
            s,
            " {:>10} {:>10} {:>8} {:>8} {:>7}",
            num(t.us, 2),
            num(t.us_min, 2),
            num(t.algbw, 2),
            num(t.busbw, 2),
            wrong(t)
        ),
        None => write!(s, " {:>10} {:>10} {:>8} {:>8} {:>7}", "-", "-", "-", "-", "-"),
    };
}

fn wrong(t: &Timing) -> String {
    t.wrong.map_or_else(|| "-".to_string(), |w| w.to_string())
}

impl Report {
    /// Whether any row has NCCL figures.
    fn has_nccl(&self) -> bool {
        self.rows.iter().any(|r| r.nccl.is_some())
    }

    /// The nccl-tests-style table: one line per size.
    pub fn table(&self) -> String {
        let nccl = self.has_nccl();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# {} on {} ranks, {}, {}",
            self.collective,
            self.world,
            self.mode,
            if self.in_place { "in place" } else { "out of place" }
        );
        let _ = write!(
            s,
            "#{:>12} {:>12} {:>5} {:>10} {:>10} {:>8} {:>8} {:>7}",
            "bytes", "count", "type", "time(us)", "min(us)", "algbw", "busbw", "#wrong"
        );
        if nccl {
            let _ = write!(
                s,
                " {:>10} {:>10} {:>8} {:>8} {:>7} {:>8}",
                "nccl(us)", "nccl_min", "n_algbw", "n_busbw", "#wrong", "speedup"
            );
        }
        let _ = writeln!(s, "  {:>9}  program", "blocks");
        for r in &self.rows {
            let _ = write!(s, " {:>12} {:>12} {:>5}", r.bytes, r.count, r.dtype);
            timing_columns(&mut s, r.ours.as_ref());
            if nccl {
                timing_columns(&mut s, r.nccl.as_ref());
                let _ = write!(s, " {:>8}", r.speedup().map_or_else(|| "-".to_string(), |v| format!("{v:.2}x")));
            }
            let blocks = if r.ours.is_some() { format!("{}x{}", r.thread_blocks, r.threads) } else { "-".into() };
            let program = match (&r.program, &r.skipped) {
                (Some(p), None) => p.clone(),
                (Some(p), Some(why)) => format!("{p}: not run: {why}"),
                (None, Some(why)) => format!("not run: {why}"),
                (None, None) => "-".to_string(),
            };
            let _ = writeln!(s, "  {blocks:>9}  {program}");
        }
        s
    }

    /// CSV with a header line; empty fields where a figure is missing.
    pub fn csv(&self) -> String {
        let mut s = String::from(
            "collective,world,mode,in_place,bytes,count,dtype,program,thread_blocks,threads,us,us_min,algbw_GBps,\
             busbw_GBps,wrong,nccl_us,nccl_us_min,nccl_algbw_GBps,nccl_busbw_GBps,nccl_wrong,speedup,skipped\n",
        );
        let f = |v: Option<f64>| v.filter(|x| x.is_finite()).map_or_else(String::new, |x| format!("{x:.4}"));
        let w = |t: &Option<Timing>| t.and_then(|t| t.wrong).map_or_else(String::new, |v| v.to_string());
        for r in &self.rows {
            let quoted = |v: &str| format!("\"{}\"", v.replace('"', "\"\""));
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                self.collective,
                self.world,
                self.mode,
                self.in_place,
                r.bytes,
                r.count,
                r.dtype,
                r.program.as_deref().map(quoted).unwrap_or_default(),
                r.thread_blocks,
                r.threads,
                f(r.ours.map(|t| t.us)),
                f(r.ours.map(|t| t.us_min)),
                f(r.ours.map(|t| t.algbw)),
                f(r.ours.map(|t| t.busbw)),
                w(&r.ours),
                f(r.nccl.map(|t| t.us)),
                f(r.nccl.map(|t| t.us_min)),
                f(r.nccl.map(|t| t.algbw)),
                f(r.nccl.map(|t| t.busbw)),
                w(&r.nccl),
                f(r.speedup()),
                r.skipped.as_deref().map(quoted).unwrap_or_default(),
            );
        }
        s
    }

    /// The report as pretty JSON (non-finite figures as `null`).
    pub fn json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(self)?)
    }

    /// Whether every row that ran (ours and NCCL's) had no wrong element.
    pub fn all_correct(&self) -> bool {
        self.rows.iter().flat_map(|r| [r.ours, r.nccl]).flatten().all(|t| t.wrong.is_none_or(|w| w == 0))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn sizes_grammar() {
        assert_eq!(parse_sizes("1K:8K").unwrap(), vec![1024, 2048, 4096, 8192]);
        assert_eq!(parse_sizes("1K:1M:x4").unwrap(), vec![1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20]);
        assert_eq!(parse_sizes("1K:5K").unwrap(), vec![1024, 2048, 4096]);
        assert_eq!(parse_sizes("1K, 4K+16,1M").unwrap(), vec![1024, 4112, 1 << 20]);
        assert_eq!(parse_sizes("1K:1K").unwrap(), vec![1024]);
        assert_eq!(parse_sizes("1K:4K,64").unwrap(), vec![1024, 2048, 4096, 64]);
        let bad = [
            ("8K:1K", "backwards"),
            ("0:1K", "starts at 0"),
            ("1K:1M:4", "factor"),
            ("1K:1M:x1", "at least 2"),
            ("1K:1M:xq", "at least 2"),
            ("1K:2K:x2:3", "too many"),
            ("1K,,2K", "empty size"),
            ("lots", "not a size"),
        ];
        for (s, want) in bad {
            let e = parse_sizes(s).err();
            assert!(e.as_ref().is_some_and(|e| e.to_string().contains(want)), "{s}: {e:?}");
        }
        // More than MAX_SIZES sizes in all.
        let many = vec!["1:1G"; 200].join(",");
        assert!(parse_sizes(&many).unwrap_err().to_string().contains("more than"));
    }

    #[test]
    fn collectives() {
        for (s, c) in [
            ("allreduce", Collective::AllReduce),
            ("all-reduce", Collective::AllReduce),
            ("All_Gather", Collective::AllGather),
            ("reducescatter", Collective::ReduceScatter),
            ("alltoall", Collective::AllToAll),
            ("broadcast", Collective::Broadcast),
        ] {
            assert_eq!(parse_collective(s), Ok(c), "{s}");
        }
        assert!(parse_collective("sendrecv").unwrap_err().to_string().contains("does not time"));
        assert!(matches!(parse_collective("allsum"), Err(ParseError::Unknown { what: "collective", .. })));
    }

    #[test]
    fn bus_bandwidth_factors_are_nccl_tests_ones() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        for n in [2usize, 4, 8] {
            let nf = n as f64;
            assert!(close(bus_factor(Collective::AllReduce, n), 2.0 * (nf - 1.0) / nf));
            for c in [Collective::AllGather, Collective::ReduceScatter, Collective::AllToAll] {
                assert!(close(bus_factor(c, n), (nf - 1.0) / nf), "{c} {n}");
            }
            assert!(close(bus_factor(Collective::Broadcast, n), 1.0));
        }
        // 1 MB in 10 µs: 100 GB/s algorithm bandwidth, 150 GB/s bus bandwidth on 4 ranks.
        let t = Timing::new(Collective::AllReduce, 4, 1_000_000, 10.0, 9.0, Some(0));
        assert!(close(t.algbw, 100.0) && close(t.busbw, 150.0), "{t:?}");
    }

    /// Two sizes run, one no program admits; NCCL beside ours.
    pub(crate) fn synthetic() -> Report {
        let world = 2;
        let ours = |bytes, us| Some(Timing::new(Collective::AllReduce, world, bytes, us, us * 0.9, Some(0)));
        let nccl = |bytes, us| Some(Timing::new(Collective::AllReduce, world, bytes, us, us * 0.95, Some(0)));
        Report {
            collective: "allreduce".into(),
            world,
            mode: "graph".into(),
            in_place: false,
            build: "mscclpp test".into(),
            rows: vec![
                Row {
                    bytes: 1024,
                    count: 512,
                    dtype: "f16".into(),
                    program: Some("allreduce_ll".into()),
                    thread_blocks: 4,
                    threads: 512,
                    ours: ours(1024, 4.0),
                    nccl: nccl(1024, 6.0),
                    skipped: None,
                },
                Row {
                    bytes: 1 << 20,
                    count: 1 << 19,
                    dtype: "f16".into(),
                    program: Some("allreduce_big".into()),
                    thread_blocks: 64,
                    threads: 1024,
                    ours: ours(1 << 20, 20.0),
                    nccl: nccl(1 << 20, 15.0),
                    skipped: None,
                },
                Row {
                    bytes: 3,
                    count: 1,
                    dtype: "f16".into(),
                    program: None,
                    thread_blocks: 0,
                    threads: 0,
                    ours: None,
                    nccl: nccl(3, 5.0),
                    skipped: Some("no program admits 3 bytes".into()),
                },
            ],
        }
    }

    #[test]
    fn table_csv_and_json_from_synthetic_rows() {
        let r = synthetic();
        let table = r.table();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 2 + r.rows.len(), "{table}");
        assert!(lines[1].contains("busbw") && lines[1].contains("speedup"), "{table}");
        // 1024 bytes in 4 µs: 0.256 GB/s, bus 0.256 on 2 ranks; NCCL 6 µs: 1.50x.
        assert!(lines[2].contains("4.00") && lines[2].contains("0.26") && lines[2].contains("1.50x"), "{table}");
        assert!(lines[2].contains("4x512") && lines[2].contains("allreduce_ll"), "{table}");
        assert!(lines[3].contains("0.75x"), "{table}");
        assert!(lines[4].contains("not run: no program admits 3 bytes"), "{table}");

        let csv = r.csv();
        let rows: Vec<&str> = csv.lines().collect();
        assert_eq!(rows.len(), 1 + r.rows.len());
        let header: Vec<&str> = rows[0].split(',').collect();
        for (line, row) in rows[1..].iter().zip(&r.rows) {
            let fields: Vec<&str> = line.split(',').collect();
            assert_eq!(fields.len(), header.len(), "{line}");
            assert_eq!(fields[header.iter().position(|h| *h == "bytes").unwrap()], row.bytes.to_string());
        }
        let us = header.iter().position(|h| *h == "us").unwrap();
        let speedup = header.iter().position(|h| *h == "speedup").unwrap();
        let second: Vec<&str> = rows[2].split(',').collect();
        assert_eq!((second[us], second[speedup]), ("20.0000", "0.7500"));
        let third: Vec<&str> = rows[3].split(',').collect();
        assert_eq!((third[us], third[speedup]), ("", ""));

        let json: serde_json::Value = serde_json::from_str(&r.json().unwrap()).unwrap();
        assert_eq!(json["rows"].as_array().map(Vec::len), Some(3));
        assert_eq!(json["rows"][0]["ours"]["us"], 4.0);
        assert_eq!(json["rows"][2]["ours"], serde_json::Value::Null);
        assert!(r.all_correct());
        let mut bad = r.clone();
        bad.rows[1].nccl.as_mut().unwrap().wrong = Some(3);
        assert!(!bad.all_correct());
    }
}
