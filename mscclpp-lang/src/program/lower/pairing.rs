//! Signal/wait pairing (lowering step 1, docs/edsl.md "Lowering"): for every signalling rank, waiting rank and
//! channel type, the signals must equal the waits; and channel by channel, the signals on the k-th channel of a
//! type from rank `a` to rank `b` must equal the waits on the k-th channel of that type from `b` to `a`.

use super::super::error::ProgramError;
use super::super::state::{ChannelInfo, ChannelUse, Line, State, SyncLines};
use crate::plan::ChannelType;

/// Every signal from rank `a` to rank `b` over a channel type needs one wait of `b` for `a` over that type, on the
/// channel paired with the one that signalled.
pub(super) fn check(state: &State) -> Result<(), ProgramError> {
    check_totals(state)?;
    if state.options.check_channel_pairs { check_channels(state) } else { Ok(()) }
}

fn check_totals(state: &State) -> Result<(), ProgramError> {
    let mut keys: Vec<_> = state.signals.iter().map(|(k, _)| *k).collect();
    keys.extend(state.waits.iter().map(|(k, _)| *k));
    keys.sort();
    keys.dedup();
    for key in keys {
        let lines = |l: &[SyncLines]| -> Vec<Line> {
            l.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone()).unwrap_or_default()
        };
        let (signals, waits) = (lines(&state.signals), lines(&state.waits));
        if signals.len() != waits.len() {
            let mut calls = Vec::new();
            if !signals.is_empty() {
                calls.push(format!("signals at {}", list_lines(&signals)));
            }
            if !waits.is_empty() {
                calls.push(format!("waits at {}", list_lines(&waits)));
            }
            return Err(ProgramError::UnpairedSignal {
                channel: key.2.to_string(),
                src: key.0,
                dst: key.1,
                signals: signals.len(),
                waits: waits.len(),
                calls: if calls.is_empty() { String::new() } else { format!(" ({})", calls.join("; ")) },
            });
        }
    }
    Ok(())
}

/// One memory or port channel with its position among its rank's channels of that type to that peer.
struct Peer {
    kind: ChannelType,
    src: usize,
    dst: usize,
    k: usize,
    uses: ChannelUse,
}

/// The memory and port channels in creation order, each with its position `k` among the channels of its type
/// from its rank to its peer.
fn peer_channels(state: &State) -> Vec<Peer> {
    let mut out: Vec<Peer> = Vec::new();
    for (info, uses) in state.channels.iter().zip(&state.channel_uses) {
        if let ChannelInfo::Peer { kind, src, dst, .. } = *info {
            let k = out.iter().filter(|p| p.kind == kind && p.src == src && p.dst == dst).count();
            out.push(Peer { kind, src, dst, k, uses: uses.clone() });
        }
    }
    out
}

/// Source lines in program order, each once, with how often it occurs when more than once: "src/lib.rs:12:9 (2
/// times), src/lib.rs:20:9".
pub(super) fn list_lines(lines: &[Line]) -> String {
    let mut seen: Vec<(Line, usize)> = Vec::new();
    for &l in lines {
        match seen.iter_mut().find(|(x, _)| *x == l) {
            Some((_, n)) => *n += 1,
            None => seen.push((l, 1)),
        }
    }
    let parts: Vec<String> =
        seen.iter().map(|(l, n)| if *n > 1 { format!("{l} ({n} times)") } else { l.to_string() }).collect();
    parts.join(", ")
}

/// "rank 0's memory channel 0 to rank 1 (created at src/lib.rs:9:5, signalled at src/lib.rs:12:9)": the channel,
/// where it was created, where it is signalled (`signals`) or waited on, and `more` (a note that starts with its
/// separator).
fn describe(c: &Peer, signals: bool, more: &str) -> String {
    let (verb, uses) = if signals { ("signalled", &c.uses.signals) } else { ("waited on", &c.uses.waits) };
    let used = if uses.is_empty() { String::new() } else { format!(", {verb} at {}", list_lines(uses)) };
    format!("rank {}'s {} channel {} to rank {} (created at {}{used}{more})", c.src, c.kind, c.k, c.dst, c.uses.created)
}

fn check_channels(state: &State) -> Result<(), ProgramError> {
    let channels = peer_channels(state);
    let paired =
        |c: &Peer| channels.iter().find(|p| p.kind == c.kind && p.src == c.dst && p.dst == c.src && p.k == c.k);
    let count_back =
        |c: &Peer| channels.iter().filter(|p| p.kind == c.kind && p.src == c.dst && p.dst == c.src).count();
    for c in &channels {
        let pair = paired(c);
        let waits = pair.map_or(0, |p| p.uses.waits.len());
        if c.uses.signals.len() == waits {
            continue;
        }
        // Where the waiting rank waits for the signalling one instead, if anywhere.
        let other: Vec<String> = channels
            .iter()
            .filter(|p| p.kind == c.kind && p.src == c.dst && p.dst == c.src && p.k != c.k && !p.uses.waits.is_empty())
            .map(|p| describe(p, false, ""))
            .collect();
        let elsewhere = if other.is_empty() {
            String::new()
        } else {
            format!("; rank {} waits for rank {} instead on {}", c.dst, c.src, other.join(" and "))
        };
        let pair = match pair {
            Some(p) => describe(p, false, &elsewhere),
            None => {
                format!("no channel: rank {} has only {} {} channel(s) to rank {}", c.dst, count_back(c), c.kind, c.src)
            }
        };
        return Err(ProgramError::MispairedChannel {
            channel: c.kind.to_string(),
            src: c.src,
            dst: c.dst,
            k: c.k,
            signaller: describe(c, true, ""),
            pair,
            signals: c.uses.signals.len(),
            waits,
        });
    }
    // With the totals per rank pair balanced, a wait on a channel without a pair leaves a signal on some other
    // channel unmatched, which the loop above reports.
    Ok(())
}
