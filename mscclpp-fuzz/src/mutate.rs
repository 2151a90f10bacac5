//! Input mutation: byte-level edits plus edits that know JSON (numbers swapped for boundary values, values
//! spliced in from another input), so mutated plans keep reaching the validator and the verifier instead of
//! stopping at the JSON parser.

use crate::rng::Rng;

/// Boundary values and tokens that break assumptions about sizes, counts and indices.
const TOKENS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "7",
    "8",
    "16",
    "63",
    "64",
    "65",
    "255",
    "256",
    "4096",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "1e308",
    "-0",
    "0.5",
    "null",
    "true",
    "false",
    "[]",
    "{}",
    "\"\"",
    "\"input\"",
    "\"output\"",
    "\"scratch\"",
    "\"memory\"",
    "\"port\"",
    "\"switch\"",
    "\"LL\"",
    "\"Simple\"",
    "\"allreduce\"",
    "\"allgather\"",
    "\"nop\"",
    "\"barrier\"",
    "\"signal\"",
    "\"wait\"",
    "\"put\"",
    "\"get\"",
    "\"rre\"",
    "\"glre\"",
];

/// Mutates `data` in place with 1 to 4 edits; `other` is another input to splice from.
pub fn mutate(rng: &mut Rng, data: &mut Vec<u8>, other: &[u8], max_len: usize) {
    let edits = 1 + rng.below(4);
    for _ in 0..edits {
        match rng.below(10) {
            0 => flip_bit(rng, data),
            1 => set_byte(rng, data),
            2 => delete_range(rng, data),
            3 => duplicate_range(rng, data),
            4 | 5 => replace_number(rng, data),
            6 => insert_token(rng, data),
            7 => splice_value(rng, data, other),
            8 => swap_values(rng, data),
            _ => truncate(rng, data),
        }
    }
    data.truncate(max_len);
}

fn flip_bit(rng: &mut Rng, data: &mut [u8]) {
    if !data.is_empty() {
        let i = rng.below(data.len());
        data[i] ^= 1 << rng.below(8);
    }
}

fn set_byte(rng: &mut Rng, data: &mut [u8]) {
    if !data.is_empty() {
        let i = rng.below(data.len());
        data[i] = match rng.below(4) {
            0 => 0,
            1 => 0xff,
            2 => b"{}[],:\"0123456789-"[rng.below(18)],
            _ => rng.next_u64() as u8,
        };
    }
}

fn range(rng: &mut Rng, len: usize) -> (usize, usize) {
    let start = rng.below(len + 1);
    let width = if rng.one_in(4) { rng.below(len - start + 1) } else { rng.below((len - start).min(16) + 1) };
    (start, start + width)
}

fn delete_range(rng: &mut Rng, data: &mut Vec<u8>) {
    let (a, b) = range(rng, data.len());
    data.drain(a..b);
}

fn duplicate_range(rng: &mut Rng, data: &mut Vec<u8>) {
    let (a, b) = range(rng, data.len());
    let piece = data[a..b].to_vec();
    let at = rng.below(data.len() + 1);
    data.splice(at..at, piece);
}

fn truncate(rng: &mut Rng, data: &mut Vec<u8>) {
    if rng.one_in(4) {
        let n = rng.below(data.len() + 1);
        data.truncate(n);
    }
}

/// The byte ranges of the JSON numbers in `data` (runs of digits, with a leading minus).
fn numbers(data: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < data.len() {
        if data[i].is_ascii_digit() {
            let start = if i > 0 && data[i - 1] == b'-' { i - 1 } else { i };
            while i < data.len() && data[i].is_ascii_digit() {
                i += 1;
            }
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out
}

fn replace_number(rng: &mut Rng, data: &mut Vec<u8>) {
    let nums = numbers(data);
    if nums.is_empty() {
        return insert_token(rng, data);
    }
    let (a, b) = nums[rng.below(nums.len())];
    let old: u64 = std::str::from_utf8(&data[a..b]).ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let new = match rng.below(4) {
        0 => old.wrapping_add(1).to_string(),
        1 => old.wrapping_sub(1).to_string(),
        2 => old.wrapping_mul(2).wrapping_add(rng.below(3) as u64).to_string(),
        _ => TOKENS[rng.below(24)].to_string(),
    };
    data.splice(a..b, new.into_bytes());
}

fn insert_token(rng: &mut Rng, data: &mut Vec<u8>) {
    let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
    let at = rng.below(data.len() + 1);
    if rng.one_in(2) && at < data.len() {
        // Overwrite a value-sized piece instead of inserting.
        let end = (at + t.len()).min(data.len());
        data.splice(at..end, t.iter().copied());
    } else {
        data.splice(at..at, t.iter().copied());
    }
}

/// The range of the JSON value that starts at or after `from` (a balanced `{...}`/`[...]`, a string or a
/// scalar), if any.
fn value_at(data: &[u8], from: usize) -> Option<(usize, usize)> {
    let start = (from..data.len())
        .find(|&i| matches!(data[i], b'{' | b'[' | b'"' | b'0'..=b'9' | b'-' | b't' | b'f' | b'n'))?;
    match data[start] {
        b'{' | b'[' => {
            let mut depth = 0i64;
            let mut in_str = false;
            let mut i = start;
            while i < data.len() {
                let c = data[i];
                if in_str {
                    if c == b'\\' {
                        i += 1;
                    } else if c == b'"' {
                        in_str = false;
                    }
                } else if c == b'"' {
                    in_str = true;
                } else if c == b'{' || c == b'[' {
                    depth += 1;
                } else if c == b'}' || c == b']' {
                    depth -= 1;
                    if depth == 0 {
                        return Some((start, i + 1));
                    }
                }
                i += 1;
            }
            None
        }
        b'"' => data[start + 1..].iter().position(|&c| c == b'"').map(|p| (start, start + p + 2)),
        _ => {
            let end = (start..data.len())
                .find(|&i| matches!(data[i], b',' | b'}' | b']' | b' ' | b'\n'))
                .unwrap_or(data.len());
            Some((start, end))
        }
    }
}

fn splice_value(rng: &mut Rng, data: &mut Vec<u8>, other: &[u8]) {
    if other.is_empty() || data.is_empty() {
        return;
    }
    let (Some(dst), Some(src)) = (value_at(data, rng.below(data.len())), value_at(other, rng.below(other.len())))
    else {
        return;
    };
    if src.1 - src.0 > 1 << 16 {
        return;
    }
    let piece = other[src.0..src.1].to_vec();
    data.splice(dst.0..dst.1, piece);
}

fn swap_values(rng: &mut Rng, data: &mut Vec<u8>) {
    if data.is_empty() {
        return;
    }
    let Some(a) = value_at(data, rng.below(data.len())) else { return };
    let Some(b) = value_at(data, rng.below(data.len())) else { return };
    if a.1 <= b.0 {
        let (x, y) = (data[a.0..a.1].to_vec(), data[b.0..b.1].to_vec());
        data.splice(b.0..b.1, x);
        data.splice(a.0..a.1, y);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_numbers_are_found() {
        let j = br#"{"a": [1, {"b": "x]"}], "c": -12}"#;
        assert_eq!(value_at(j, 0), Some((0, j.len())));
        assert_eq!(&j[value_at(j, 6).expect("array").0..value_at(j, 6).expect("array").1], br#"[1, {"b": "x]"}]"#);
        assert_eq!(numbers(j).iter().map(|&(a, b)| &j[a..b]).collect::<Vec<_>>(), vec![&b"1"[..], b"-12"]);
    }

    #[test]
    fn mutation_changes_inputs_and_respects_the_length_bound() {
        let mut rng = Rng::new(1);
        let seed = br#"{"name": "x", "gpus": [{"id": 0, "input_chunks": 2}]}"#.to_vec();
        let mut changed = 0;
        for _ in 0..1000 {
            let mut d = seed.clone();
            mutate(&mut rng, &mut d, &seed, 64);
            assert!(d.len() <= 64);
            changed += usize::from(d != seed);
        }
        assert!(changed > 900, "only {changed} of 1000 mutations changed the input");
    }
}
