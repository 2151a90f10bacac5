//! Explains wrong results: which ranks' contributions are missing or counted twice, stale data, data from the
//! wrong rank or position.

use super::machine::Setup;
use crate::plan::{Collective, ReduceOp};

/// Lines explaining how `got` differs from `want` (rank `rank`'s output after launch `launch`).
pub(crate) fn explain(s: &Setup<'_>, rank: usize, launch: u32, want: &[u8], got: &[u8]) -> Vec<String> {
    let dt = s.dtype;
    let es = dt.size();
    let n = s.sizes.world;
    let elems = want.len().min(got.len()) / es;
    let value = |buf: &[u8], i: usize| dt.decode(&buf[i * es..]);
    let bad: Vec<usize> = (0..elems).filter(|&i| want[i * es..(i + 1) * es] != got[i * es..(i + 1) * es]).collect();
    let mut lines = Vec::new();
    if bad.is_empty() {
        return lines;
    }
    // Where the wrong elements lie, in chunks of the output.
    let chunk = s.layouts[rank].chunk_size().max(1);
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for &i in &bad {
        match ranges.last_mut() {
            Some(last) if last.1 == i => last.1 = i + 1,
            _ => ranges.push((i, i + 1)),
        }
    }
    let shown: Vec<String> = ranges
        .iter()
        .take(6)
        .map(|&(a, b)| {
            let (ca, cb) = ((a * es) as u64 / chunk, ((b * es) as u64).div_ceil(chunk));
            format!("elements [{a}, {b}) (chunks {ca}..{cb})")
        })
        .collect();
    lines.push(format!(
        "wrong elements: {}{}",
        shown.join(", "),
        if ranges.len() > 6 { format!(" and {} more ranges", ranges.len() - 6) } else { String::new() }
    ));
    let sample: Vec<usize> = bad.iter().copied().take(32).collect();
    let pat = &s.pattern;
    // Other launches whose data may show up: the previous one (stale), the next one (overwritten too early by a
    // rank that ran ahead) and 0 (the initial contents).
    let mut prev_launches: Vec<u32> = Vec::new();
    if launch > 1 {
        prev_launches.push(launch - 1);
    }
    if launch < s.launches {
        prev_launches.push(launch + 1);
    }
    prev_launches.push(0);
    let out_elems = (s.sizes.output as usize) / es;
    // Untouched: the value the buffer held before this launch.
    match s.plan.collective {
        Collective::AllReduce | Collective::ReduceScatter => {
            let base = if s.plan.collective == Collective::ReduceScatter { rank * out_elems } else { 0 };
            let c = move |src: usize, l: u32, j: usize| pat.value(src, l, (base + j) as u64);
            if s.reduce == ReduceOp::Sum {
                type Cand<'c> = (String, Box<dyn Fn(usize) -> f64 + 'c>);
                let mut cands: Vec<Cand> = Vec::new();
                for src in 0..n {
                    cands
                        .push((format!("rank {src}'s contribution is missing"), Box::new(move |j| -c(src, launch, j))));
                    cands.push((
                        format!("rank {src}'s contribution is counted twice"),
                        Box::new(move |j| c(src, launch, j)),
                    ));
                    for &l in &prev_launches {
                        let what =
                            if l == 0 { "the initial buffer contents".to_string() } else { format!("launch {l}") };
                        cands.push((
                            format!("rank {src}'s contribution is stale (taken from {what})"),
                            Box::new(move |j| c(src, l, j) - c(src, launch, j)),
                        ));
                    }
                    for other in src + 1..n {
                        cands.push((
                            format!("the contributions of ranks {src} and {other} are missing"),
                            Box::new(move |j| -c(src, launch, j) - c(other, launch, j)),
                        ));
                        cands.push((
                            format!("the contributions of ranks {src} and {other} are counted twice"),
                            Box::new(move |j| c(src, launch, j) + c(other, launch, j)),
                        ));
                    }
                }
                let fits: Vec<&String> = cands
                    .iter()
                    .filter(|(_, delta)| sample.iter().all(|&j| value(got, j) - value(want, j) == delta(j)))
                    .map(|(m, _)| m)
                    .collect();
                if let Some(m) = fits.first() {
                    lines.push(format!("{m} (consistent over the {} first wrong elements)", sample.len()));
                } else {
                    let j = sample[0];
                    let contributions: Vec<String> = (0..n).map(|r| format!("{}", c(r, launch, j))).collect();
                    lines.push(format!(
                        "element {j}: the ranks' contributions are [{}], their sum {} but the buffer holds {}; no \
                         single missing, doubled or stale contribution explains it",
                        contributions.join(", "),
                        value(want, j),
                        value(got, j)
                    ));
                }
            } else {
                let j = sample[0];
                let holders: Vec<String> =
                    (0..n).filter(|&r| c(r, launch, j) == value(got, j)).map(|r| r.to_string()).collect();
                let owners: Vec<String> =
                    (0..n).filter(|&r| c(r, launch, j) == value(want, j)).map(|r| r.to_string()).collect();
                lines.push(format!(
                    "element {j}: the {} is rank(s) {}'s value, but the buffer holds {}{}",
                    s.reduce,
                    owners.join(","),
                    value(got, j),
                    if holders.is_empty() {
                        " (no rank's value of this launch)".to_string()
                    } else {
                        format!(" (rank(s) {}'s value): a contribution is missing", holders.join(","))
                    }
                ));
            }
        }
        Collective::AllGather | Collective::AllToAll | Collective::SendRecv | Collective::Broadcast => {
            let in_elems = (s.sizes.input as usize / es).max(1);
            let source = |j: usize| -> (usize, usize) {
                match s.plan.collective {
                    Collective::AllGather => (j / in_elems, j % in_elems),
                    Collective::AllToAll => {
                        let per = (out_elems / n).max(1);
                        (j / per, rank * per + j % per)
                    }
                    Collective::SendRecv => ((rank + n - 1) % n, j),
                    _ => (s.plan.root_rank() % n, j),
                }
            };
            let j = sample[0];
            let (want_src, want_idx) = source(j);
            let g = value(got, j);
            let mut found = Vec::new();
            for l in std::iter::once(launch).chain(prev_launches.iter().copied()) {
                for src in 0..n {
                    for idx in [want_idx, j] {
                        if pat.value(src, l, idx as u64) == g
                            && !(l == launch && src == want_src && idx == want_idx)
                            && !found.contains(&(src, l, idx))
                        {
                            found.push((src, l, idx));
                        }
                    }
                }
            }
            let what = |(src, l, idx): (usize, u32, usize)| {
                if l == 0 {
                    format!("the initial contents of the buffer (never written in launch {launch}?)")
                } else if l == launch {
                    format!("rank {src}'s input element {idx} of this launch")
                } else if l > launch {
                    format!("rank {src}'s input element {idx} of launch {l} (overwritten too early)")
                } else {
                    format!("rank {src}'s input element {idx} of launch {l} (stale)")
                }
            };
            lines.push(format!(
                "element {j} should be rank {want_src}'s input element {want_idx}, but holds {}",
                match found.first() {
                    Some(&f) => what(f),
                    None => format!("{g}, which is no rank's input at that position"),
                }
            ));
            if want_src == rank && s.plan.collective == Collective::AllGather {
                lines.push("this is the rank's own slice: an in-place allgather must not overwrite it".to_string());
            }
        }
        Collective::Test | Collective::Custom => {}
    }
    lines
}
