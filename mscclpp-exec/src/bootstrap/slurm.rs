//! Slurm host lists (`SLURM_STEP_NODELIST`, `SLURM_JOB_NODELIST`, `SLURM_NODELIST`): `gpu[01-04,07]`,
//! `a1,b[2-3]`, `rack[1-2]-gpu[01-02]`. Under Slurm without `MSCCLPP_MASTER_ADDR`, the rendezvous is on the
//! first host of the step, where Slurm places rank 0.

use crate::error::{Error, Result};

/// The most host names one list may expand to (a bound on what an environment variable can make us allocate).
pub const MAX_HOSTS: usize = 1 << 16;

/// The variables holding the host list, most specific first.
pub const NODELIST_VARS: [&str; 3] = ["SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"];

fn bad(list: &str, what: &str) -> Error {
    Error::Config(format!(
        "Slurm host list {list:?}: {what}; expected names like `gpu01,gpu[02-04,07]`, or set MSCCLPP_MASTER_ADDR"
    ))
}

/// Split at the commas outside brackets.
fn top_level(list: &str) -> Result<Vec<&str>> {
    let (mut depth, mut start, mut out) = (0i32, 0usize, Vec::new());
    for (i, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(bad(list, "unbalanced or nested brackets"));
        }
    }
    if depth != 0 {
        return Err(bad(list, "a `[` is not closed"));
    }
    out.push(&list[start..]);
    Ok(out)
}

/// The values of one bracket body (`01-04,07`), zero padding kept as written.
fn range_values(list: &str, body: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for item in body.split(',') {
        let (lo, hi) = item.split_once('-').unwrap_or((item, item));
        let digits = |s: &str| !s.is_empty() && s.len() <= 18 && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(lo) || !digits(hi) {
            return Err(bad(list, &format!("`{item}` is not a number or a range of numbers")));
        }
        let (a, b): (u64, u64) = (lo.parse().unwrap_or(0), hi.parse().unwrap_or(0));
        if a > b {
            return Err(bad(list, &format!("range `{item}` runs backwards")));
        }
        if b - a >= MAX_HOSTS as u64 || out.len() + (b - a) as usize >= MAX_HOSTS {
            return Err(bad(list, &format!("more than {MAX_HOSTS} hosts")));
        }
        out.extend((a..=b).map(|v| format!("{v:0width$}", width = lo.len())));
    }
    Ok(out)
}

/// Every host of a Slurm host list, in order.
pub fn expand_nodelist(list: &str) -> Result<Vec<String>> {
    let list = list.trim();
    if list.is_empty() {
        return Err(bad(list, "it is empty"));
    }
    let mut hosts = Vec::new();
    for item in top_level(list)? {
        if item.is_empty() {
            return Err(bad(list, "an empty name"));
        }
        // Expand bracket groups left to right: every prefix so far times every value of the group.
        let mut names = vec![String::new()];
        let mut rest = item;
        while let Some(open) = rest.find('[') {
            let close = rest[open..].find(']').map(|c| open + c).ok_or_else(|| bad(list, "a `[` is not closed"))?;
            let values = range_values(list, &rest[open + 1..close])?;
            if names.len().saturating_mul(values.len()) + hosts.len() > MAX_HOSTS {
                return Err(bad(list, &format!("more than {MAX_HOSTS} hosts")));
            }
            let prefix = &rest[..open];
            names = names.iter().flat_map(|n| values.iter().map(move |v| format!("{n}{prefix}{v}"))).collect();
            rest = &rest[close + 1..];
        }
        if rest.contains(']') {
            return Err(bad(list, "a `]` without its `[`"));
        }
        hosts.extend(names.into_iter().map(|n| n + rest));
    }
    Ok(hosts)
}

/// The first host of the Slurm step (the first of [`NODELIST_VARS`] that is set), or `None` outside Slurm.
pub fn first_host(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<String>> {
    for name in NODELIST_VARS {
        if let Some(list) = lookup(name) {
            let hosts = expand_nodelist(&list).map_err(|e| Error::Config(format!("{name}: {e}")))?;
            return Ok(hosts.into_iter().next());
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_lists_expand_as_slurm_writes_them() {
        let cases: &[(&str, &[&str])] = &[
            ("gpu[01-04,07]", &["gpu01", "gpu02", "gpu03", "gpu04", "gpu07"]),
            ("node1", &["node1"]),
            ("a1,b[2-3],c", &["a1", "b2", "b3", "c"]),
            ("rack[1-2]-gpu[01-02]", &["rack1-gpu01", "rack1-gpu02", "rack2-gpu01", "rack2-gpu02"]),
            ("gpu[8-10]-ib", &["gpu8-ib", "gpu9-ib", "gpu10-ib"]),
            ("n[007-009]", &["n007", "n008", "n009"]),
        ];
        assert!(!cases.is_empty());
        for (list, want) in cases {
            assert_eq!(expand_nodelist(list).expect(list), *want, "{list}");
        }
    }

    #[test]
    fn malformed_host_lists_are_errors_that_name_the_list() {
        for list in ["", "gpu[01-04", "gpu01]", "gpu[4-1]", "gpu[a-b]", "gpu[[1]]", "a,,b", "gpu[0-99999999]"] {
            let e = expand_nodelist(list).expect_err(list).to_string();
            assert!(e.contains("MSCCLPP_MASTER_ADDR"), "{list}: {e}");
        }
    }

    #[test]
    fn the_step_list_wins_and_gives_the_first_host() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        let both = env(&[("SLURM_JOB_NODELIST", "big[01-08]"), ("SLURM_STEP_NODELIST", "big[03-04]")]);
        assert_eq!(first_host(both).expect("parse"), Some("big03".to_string()));
        assert_eq!(first_host(env(&[("SLURM_NODELIST", "gpu[01-04,07]")])).expect("parse"), Some("gpu01".into()));
        assert_eq!(first_host(env(&[])).expect("no Slurm"), None);
        let e = first_host(env(&[("SLURM_JOB_NODELIST", "gpu[01")])).expect_err("malformed");
        assert!(e.to_string().contains("SLURM_JOB_NODELIST"), "{e}");
    }
}
