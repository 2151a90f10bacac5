//! Where the lowering puts `nop`s around a synchronisation operation.

/// Where the lowering places `nop` (`__syncthreads()`) around a synchronisation operation, so that the data
/// operations of the same thread block before/after it are ordered with it. Default: [`SyncType::Both`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncType {
    /// No `nop`.
    None,
    /// A `nop` before the operation.
    Before,
    /// A `nop` after the operation.
    After,
    /// A `nop` before and after.
    #[default]
    Both,
}

impl SyncType {
    pub(crate) fn bits(self) -> u8 {
        match self {
            SyncType::None => 0,
            SyncType::Before => 1,
            SyncType::After => 2,
            SyncType::Both => 3,
        }
    }
    pub(crate) fn from_bits(b: u8) -> Self {
        match b & 3 {
            0 => SyncType::None,
            1 => SyncType::Before,
            2 => SyncType::After,
            _ => SyncType::Both,
        }
    }
    /// Whether a `nop` goes before.
    pub fn before(self) -> bool {
        self.bits() & 1 != 0
    }
    /// Whether a `nop` goes after.
    pub fn after(self) -> bool {
        self.bits() & 2 != 0
    }
    /// Both placements of `self` and `other`.
    pub fn union(self, other: SyncType) -> SyncType {
        SyncType::from_bits(self.bits() | other.bits())
    }
    pub(crate) fn without_before(self) -> SyncType {
        SyncType::from_bits(self.bits() & !1)
    }
    pub(crate) fn without_after(self) -> SyncType {
        SyncType::from_bits(self.bits() & !2)
    }
}
