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
                let (chunk_lines, decoded) = partial_sums(n, chunk as usize / es, &bad, |j| value(got, j), &c, launch);
                if let Some(m) = fits.first() {
                    lines.push(format!("{m} (consistent over the {} first wrong elements)", sample.len()));
                } else if !decoded {
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
                lines.extend(chunk_lines);
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
                lines.push(if s.plan.inplace {
                    "this is the rank's own slice, which an in-place allgather finds in place: it must not be \
                     overwritten"
                        .to_string()
                } else {
                    "this is the rank's own slice: an out-of-place allgather copies it from the rank's input into \
                     its output"
                        .to_string()
                });
            }
        }
        Collective::Test | Collective::Custom => {}
    }
    lines
}

/// Highest number of times one rank's contribution is looked for in a wrong sum.
const MAX_MULTIPLICITY: u32 = 2;
/// Chunks decoded per wrong result.
const MAX_CHUNKS: usize = 8;
/// Wrong elements of a chunk checked against a decoding.
const ELEMENTS_PER_CHUNK: usize = 16;
/// Largest number of candidate decodings searched per chunk and search.
const MAX_CANDIDATES: u64 = 1 << 16;

/// One term of a decoded sum: a rank's contribution at the element's position shifted by `shift` chunks
/// (-1: the previous chunk, as an off-by-one chunk index takes it), counted `times` times.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Term {
    rank: usize,
    shift: i64,
    times: u32,
}

/// For each of the first wrong chunks (`chunk_elems` elements each), which ranks' contributions of launch `launch`
/// (and how many times each) its wrong elements hold, e.g. `chunk 3 holds ranks {0, 1, 1} (rank 1 twice, rank 2
/// missing)`: the one multiset of ranks, each 0 to [`MAX_MULTIPLICITY`] times, whose sum is every sampled wrong
/// element (`c(rank, launch, element)` is a rank's contribution). When none fits, contributions from the previous
/// or the next chunk are tried too (each rank's at most once per position), as a chunk index that is off by one
/// sums them. Equal findings of consecutive chunks are merged into one line. Returns the lines and whether every
/// chunk was decoded.
pub(crate) fn partial_sums(
    n: usize,
    chunk_elems: usize,
    bad: &[usize],
    got: impl Fn(usize) -> f64,
    c: &impl Fn(usize, u32, usize) -> f64,
    launch: u32,
) -> (Vec<String>, bool) {
    let chunk_elems = chunk_elems.max(1);
    let mut chunks: Vec<(usize, Vec<usize>)> = Vec::new();
    for &j in bad {
        let k = j / chunk_elems;
        let full = chunks.len() == MAX_CHUNKS;
        match chunks.last_mut() {
            Some((last, elems)) if *last == k => {
                if elems.len() < ELEMENTS_PER_CHUNK {
                    elems.push(j);
                }
            }
            _ if full => break,
            _ => chunks.push((k, vec![j])),
        }
    }
    let mut all_decoded = !chunks.is_empty();
    let described: Vec<(usize, String)> = chunks
        .iter()
        .map(|(k, elems)| {
            let at = |r: usize, shift: i64, j: usize| -> Option<f64> {
                let pos = j as i64 + shift * chunk_elems as i64;
                usize::try_from(pos).ok().map(|p| c(r, launch, p))
            };
            let same: Vec<(usize, i64, u32)> = (0..n).map(|r| (r, 0, MAX_MULTIPLICITY)).collect();
            let mut decoded = decode_sum(&same, elems, &got, &at);
            if decoded == Decoded::None {
                let shifted: Vec<(usize, i64, u32)> = (0..n).flat_map(|r| [(r, 0, 1), (r, -1, 1), (r, 1, 1)]).collect();
                let more = decode_sum(&shifted, elems, &got, &at);
                if more != Decoded::TooMany {
                    decoded = more;
                }
            }
            all_decoded &= matches!(decoded, Decoded::One(_));
            let text = match decoded {
                Decoded::One(terms) => describe_terms(n, &terms),
                Decoded::Ambiguous => "a sum of this launch's contributions that its values do not pin down".into(),
                Decoded::None => format!(
                    "no sum of this launch's contributions (each rank at most {MAX_MULTIPLICITY} times): stale \
                     or foreign data"
                ),
                Decoded::TooMany => "a sum over too many ranks to decode".into(),
            };
            (*k, text)
        })
        .collect();
    let mut lines: Vec<String> = Vec::new();
    let mut i = 0;
    while i < described.len() {
        let (first, text) = &described[i];
        let mut last = *first;
        while i + 1 < described.len() && described[i + 1].1 == *text && described[i + 1].0 == last + 1 {
            i += 1;
            last = described[i].0;
        }
        let which =
            if last == *first { format!("chunk {first} holds") } else { format!("chunks {first}..={last} hold") };
        lines.push(format!("{which} {text}"));
        i += 1;
    }
    (lines, all_decoded)
}

/// The outcome of decoding a wrong sum.
#[derive(Debug, PartialEq)]
enum Decoded {
    /// Exactly one combination explains the values: its terms with a non-zero count.
    One(Vec<Term>),
    /// Several combinations explain them.
    Ambiguous,
    /// None does.
    None,
    /// Too many combinations to search.
    TooMany,
}

/// Searches counts for `candidates` (rank, shift in chunks, highest count) so that the counted contributions sum
/// to every sampled element; `at(rank, shift, element)` is a contribution (`None`: outside the buffer).
fn decode_sum(
    candidates: &[(usize, i64, u32)],
    elems: &[usize],
    got: &impl Fn(usize) -> f64,
    at: &impl Fn(usize, i64, usize) -> Option<f64>,
) -> Decoded {
    // Terms that lie outside the buffer for a sampled element cannot be part of its sum.
    let usable: Vec<(usize, i64, u32)> =
        candidates.iter().copied().filter(|&(r, shift, _)| elems.iter().all(|&j| at(r, shift, j).is_some())).collect();
    let mut total: u64 = 1;
    for &(_, _, max) in &usable {
        total = total.saturating_mul(u64::from(max) + 1);
    }
    if total > MAX_CANDIDATES {
        return Decoded::TooMany;
    }
    // Contributions (one per usable term) and observed value of each sampled element.
    let rows: Vec<(Vec<f64>, f64)> = elems
        .iter()
        .map(|&j| (usable.iter().map(|&(r, shift, _)| at(r, shift, j).unwrap_or(f64::NAN)).collect(), got(j)))
        .collect();
    let mut found: Option<Vec<u32>> = None;
    let mut counts = vec![0u32; usable.len()];
    for code in 0..total {
        let mut x = code;
        for (m, &(_, _, max)) in counts.iter_mut().zip(&usable) {
            let radix = u64::from(max) + 1;
            *m = (x % radix) as u32;
            x /= radix;
        }
        let fits = rows
            .iter()
            .all(|(contrib, value)| contrib.iter().zip(&counts).map(|(v, &m)| v * f64::from(m)).sum::<f64>() == *value);
        if fits {
            if found.is_some() {
                return Decoded::Ambiguous;
            }
            found = Some(counts.clone());
        }
    }
    match found {
        Some(counts) => Decoded::One(
            usable
                .iter()
                .zip(counts)
                .filter(|(_, times)| *times > 0)
                .map(|(&(rank, shift, _), times)| Term { rank, shift, times })
                .collect(),
        ),
        None => Decoded::None,
    }
}

/// `ranks {0, 1, 1} (rank 1 twice, rank 2 missing)`; contributions from a neighbouring chunk are marked so.
fn describe_terms(n: usize, terms: &[Term]) -> String {
    let mut members: Vec<String> = Vec::new();
    for t in terms {
        let from = match t.shift {
            0 => String::new(),
            -1 => " (previous chunk)".to_string(),
            1 => " (next chunk)".to_string(),
            s => format!(" ({s} chunks away)"),
        };
        for _ in 0..t.times {
            members.push(format!("{}{from}", t.rank));
        }
    }
    let mut notes: Vec<String> = Vec::new();
    for r in 0..n {
        let own: u32 = terms.iter().filter(|t| t.rank == r && t.shift == 0).map(|t| t.times).sum();
        match own {
            0 => notes.push(format!("rank {r} missing")),
            1 => {}
            2 => notes.push(format!("rank {r} twice")),
            m => notes.push(format!("rank {r} {m} times")),
        }
    }
    let set = if members.is_empty() {
        "no rank's contribution".to_string()
    } else {
        format!("ranks {{{}}}", members.join(", "))
    };
    if notes.is_empty() { set } else { format!("{set} ({})", notes.join(", ")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contribution(r: usize, _l: u32, j: usize) -> f64 {
        // Distinct enough that every decoding is unique: 10^r * (j + 1) with a position-dependent twist.
        10f64.powi(r as i32) * (j as f64 + 1.0) + (j * j) as f64 * 1000.0
    }

    #[test]
    fn a_doubled_contribution_is_decoded_into_its_ranks() {
        // Three ranks: chunks 1 and 2 (elements 2..6) hold rank 0 and rank 1 twice, rank 2 missing: one line.
        let c = contribution;
        let got = |j: usize| c(0, 1, j) + 2.0 * c(1, 1, j);
        let (lines, decoded) = partial_sums(3, 2, &[2, 3, 4, 5], got, &c, 1);
        assert!(decoded);
        assert_eq!(lines, vec!["chunks 1..=2 hold ranks {0, 1, 1} (rank 1 twice, rank 2 missing)"]);
    }

    #[test]
    fn a_contribution_from_the_previous_chunk_is_named() {
        // Two ranks, chunks of 4 elements: chunk 3 holds rank 1's own value plus rank 0's value of chunk 2.
        let c = contribution;
        let got = |j: usize| c(1, 1, j) + c(0, 1, j - 4);
        let (lines, decoded) = partial_sums(2, 4, &[12, 13, 14, 15], got, &c, 1);
        assert!(decoded);
        assert_eq!(lines, vec!["chunk 3 holds ranks {0 (previous chunk), 1} (rank 0 missing)"]);
    }

    #[test]
    fn values_no_sum_explains_are_called_foreign() {
        let c = contribution;
        let (lines, decoded) = partial_sums(2, 4, &[0, 1], |_| 0.5, &c, 1);
        assert!(!decoded);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("chunk 0 holds no sum"), "{lines:?}");
        assert_eq!(describe_terms(2, &[]), "no rank's contribution (rank 0 missing, rank 1 missing)");
    }
}
