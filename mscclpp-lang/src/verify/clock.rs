//! Vector clocks over logical threads, two per thread: `vis` (happens-before through release/acquire edges: the
//! other side's writes are visible) and `exe` (execution order through any synchronisation, relaxed ones and
//! packet flags included).

/// A snapshot of both clocks.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snap {
    pub vis: Vec<u32>,
    pub exe: Vec<u32>,
}

impl Snap {
    pub fn new(n: usize) -> Self {
        Snap { vis: vec![0; n], exe: vec![0; n] }
    }
    /// Joins `other` into `self`; `release` false joins only the execution order.
    pub fn join(&mut self, other: &Snap, release: bool) {
        if release {
            max_into(&mut self.vis, &other.vis);
        }
        max_into(&mut self.exe, &other.exe);
    }
}

pub(crate) fn max_into(dst: &mut [u32], src: &[u32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        if *s > *d {
            *d = *s;
        }
    }
}

/// The clocks of every logical thread, stored flat.
#[derive(Debug, Clone)]
pub(crate) struct Clocks {
    pub n: usize,
    vis: Vec<u32>,
    exe: Vec<u32>,
}

impl Clocks {
    pub fn new(n: usize) -> Self {
        Clocks { n, vis: vec![0; n * n], exe: vec![0; n * n] }
    }

    /// Advances thread `t` to a new epoch and returns it.
    #[inline]
    pub fn tick(&mut self, t: usize) -> u32 {
        let i = t * self.n + t;
        self.vis[i] += 1;
        self.exe[i] = self.vis[i];
        self.vis[i]
    }

    pub fn vis(&self, t: usize) -> &[u32] {
        &self.vis[t * self.n..(t + 1) * self.n]
    }
    pub fn exe(&self, t: usize) -> &[u32] {
        &self.exe[t * self.n..(t + 1) * self.n]
    }

    /// Whether thread `t` has seen epoch `epoch` of thread `of` (in `vis` or in `exe`).
    #[inline]
    pub fn knows(&self, t: usize, of: usize, epoch: u32, exe: bool) -> bool {
        let i = t * self.n + of;
        if exe { self.exe[i] >= epoch } else { self.vis[i] >= epoch }
    }

    pub fn snap(&self, t: usize) -> Snap {
        Snap { vis: self.vis(t).to_vec(), exe: self.exe(t).to_vec() }
    }

    /// The join of several threads' clocks.
    pub fn snap_join(&self, ts: impl IntoIterator<Item = usize>) -> Snap {
        let mut s = Snap::new(self.n);
        for t in ts {
            max_into(&mut s.vis, self.vis(t));
            max_into(&mut s.exe, self.exe(t));
        }
        s
    }

    /// Joins `s` into thread `t`; `release` false joins only the execution order.
    pub fn acquire(&mut self, t: usize, s: &Snap, release: bool) {
        let n = self.n;
        if release {
            max_into(&mut self.vis[t * n..(t + 1) * n], &s.vis);
        }
        max_into(&mut self.exe[t * n..(t + 1) * n], &s.exe);
    }

    /// Joins a visibility clock into thread `t` (and into its execution order, which includes it).
    pub fn acquire_vis(&mut self, t: usize, vis: &[u32]) {
        let n = self.n;
        max_into(&mut self.vis[t * n..(t + 1) * n], vis);
        max_into(&mut self.exe[t * n..(t + 1) * n], vis);
    }

    /// Joins an exe-only clock into thread `t`.
    pub fn acquire_exe(&mut self, t: usize, exe: &[u32]) {
        let n = self.n;
        max_into(&mut self.exe[t * n..(t + 1) * n], exe);
    }

    /// Makes every thread of `ts` hold the join of all of them (a `__syncthreads()`).
    pub fn join_all(&mut self, ts: std::ops::Range<usize>) {
        if ts.len() <= 1 {
            return;
        }
        let n = self.n;
        for arr in [&mut self.vis, &mut self.exe] {
            let rows = &mut arr[ts.start * n..ts.end * n];
            let (first, rest) = rows.split_at_mut(n);
            for row in rest.chunks_exact(n) {
                max_into(first, row);
            }
            for row in rest.chunks_exact_mut(n) {
                row.copy_from_slice(first);
            }
        }
    }

    /// Sets thread `t` to `s` joined with its own clock.
    pub fn set(&mut self, t: usize, s: &Snap) {
        self.acquire(t, s, true);
    }
}
