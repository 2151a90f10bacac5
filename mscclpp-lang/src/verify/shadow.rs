//! Interval-based shadow memory for race detection: per allocation, disjoint byte segments remember the last
//! write and the reads since, each as an index into the access log.

use std::collections::BTreeMap;

/// One recorded access.
#[derive(Debug, Clone)]
pub(crate) struct Acc {
    /// The operation instance (see `Inst`).
    pub inst: u32,
    pub write: bool,
    /// A packet access (LL format, ordered by its flag).
    pub packet: bool,
    /// Packet flag written (packet writes only).
    pub flag: u32,
    pub start: u64,
    pub end: u64,
    /// Rank owning the bytes.
    pub owner: usize,
    /// Allocation of that rank (0 input, 1 output, 2 scratch).
    pub alloc: usize,
    /// A packet write that left the bytes unchanged (the same packets with the same flag): harmless to readers.
    pub same: bool,
}

#[derive(Debug, Clone, Default)]
struct Seg {
    end: u64,
    write: Option<u32>,
    reads: Vec<u32>,
    /// A packet write of the same flag that `write` replaced in the same launch.
    shadowed: Option<u32>,
}

/// A conflict between a recorded access and the current one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Conflict {
    pub prev: u32,
    pub start: u64,
    pub end: u64,
    pub kind: ConflictKind,
}

/// What kind of conflict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConflictKind {
    /// Plain data race.
    Race,
    /// Two packet writes with the same flag to one slot, or a reader that may take the older one.
    StalePacket,
}

/// Shadow state of one allocation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shadow {
    segs: BTreeMap<u64, Seg>,
}

impl Shadow {
    /// Splits segments so that `at` is a boundary.
    fn split(&mut self, at: u64) {
        let hit = self.segs.range(..at).next_back().map(|(&s, g)| (s, g.end));
        if let Some((s, end)) = hit
            && s < at
            && at < end
        {
            let mut tail = self.segs.get(&s).cloned().unwrap_or_default();
            if let Some(g) = self.segs.get_mut(&s) {
                g.end = at;
            }
            tail.end = end;
            self.segs.insert(at, tail);
        }
    }

    /// Records access `id` over `[start, end)`. `ordered(prev, exe)` says whether access `prev` happens before
    /// the current one (in the execution order when `exe`, with visibility otherwise); `same_launch_flag(prev)`
    /// whether a packet write `prev` carries the current access's flag. Conflicts are pushed to `out`.
    pub fn access(
        &mut self,
        id: u32,
        acc: &Acc,
        log: &[Acc],
        ordered: &mut dyn FnMut(u32, bool) -> bool,
        out: &mut Vec<Conflict>,
    ) {
        let (start, end) = (acc.start, acc.end);
        if start >= end {
            return;
        }
        self.split(start);
        self.split(end);
        // Fill gaps with empty segments.
        let mut cursor = start;
        let keys: Vec<(u64, u64)> = self.segs.range(start..end).map(|(&s, g)| (s, g.end)).collect();
        let mut gaps = Vec::new();
        for &(s, e) in &keys {
            if s > cursor {
                gaps.push((cursor, s));
            }
            cursor = cursor.max(e);
        }
        if cursor < end {
            gaps.push((cursor, end));
        }
        for (s, e) in gaps {
            self.segs.insert(s, Seg { end: e, ..Default::default() });
        }
        for (&s, seg) in self.segs.range_mut(start..end) {
            let e = seg.end;
            let same = |p: u32| log.get(p as usize).is_some_and(|a| a.inst == acc.inst);
            if acc.write {
                if let Some(w) = seg.write {
                    let wa = &log[w as usize];
                    if !same(w) {
                        if acc.packet && wa.packet && wa.flag == acc.flag {
                            if !acc.same && !ordered(w, true) {
                                out.push(Conflict { prev: w, start: s, end: e, kind: ConflictKind::StalePacket });
                            }
                        } else if !ordered(w, wa.packet && acc.packet) {
                            out.push(Conflict { prev: w, start: s, end: e, kind: ConflictKind::Race });
                        }
                    }
                }
                for &r in &seg.reads {
                    if !same(r) && !ordered(r, true) {
                        let ra = &log[r as usize];
                        let kind = match seg.write.map(|w| &log[w as usize]) {
                            Some(_) if acc.same => continue,
                            Some(wa) if acc.packet && ra.packet && wa.packet && wa.flag == acc.flag => {
                                ConflictKind::StalePacket
                            }
                            _ => ConflictKind::Race,
                        };
                        out.push(Conflict { prev: r, start: s, end: e, kind });
                    }
                }
                seg.shadowed = match seg.write {
                    _ if acc.same => seg.shadowed,
                    Some(w) if acc.packet && log[w as usize].packet && log[w as usize].flag == acc.flag && !same(w) => {
                        Some(w)
                    }
                    _ => None,
                };
                if acc.same && seg.write.is_some_and(|w| log[w as usize].packet) {
                    // Identical packets: the slot keeps its writer for flag synchronisation and race checks.
                    continue;
                }
                seg.write = Some(id);
                seg.reads.clear();
            } else {
                if let Some(w) = seg.write {
                    let wa = &log[w as usize];
                    if !same(w) {
                        if acc.packet && wa.packet {
                            // The flag orders the read after the write it accepts; but if that write replaced an
                            // older one with the same flag, the reader may have taken the older one.
                            if let Some(old) = seg.shadowed
                                && !ordered(w, true)
                                && !same(old)
                            {
                                out.push(Conflict { prev: w, start: s, end: e, kind: ConflictKind::StalePacket });
                            }
                        } else if !ordered(w, false) {
                            out.push(Conflict { prev: w, start: s, end: e, kind: ConflictKind::Race });
                        }
                    }
                }
                seg.reads.retain(|&r| same(r) || !ordered(r, true));
                seg.reads.push(id);
            }
        }
    }

    /// The packet writes currently recorded over `[start, end)` (for flag synchronisation).
    pub fn writers(&self, start: u64, end: u64, out: &mut Vec<u32>) {
        let first = self.segs.range(..=start).next_back().map(|(&s, _)| s).unwrap_or(start);
        for (_, seg) in self.segs.range(first..end) {
            if seg.end > start
                && let Some(w) = seg.write
                && out.last() != Some(&w)
            {
                out.push(w);
            }
        }
    }
}
