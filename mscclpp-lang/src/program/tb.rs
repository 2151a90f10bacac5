//! Thread blocks, thread-block groups and the `data_sync` placement of synchronisation operations.

use super::error::ProgramError;
use super::ir::Site;

/// Where an operation runs: one thread block, or a [`ThreadBlockGroup`] that splits the operation's data among its
/// members.
///
/// Integers convert into a single thread block, so operations read `ch.put(dst, src, 0)?`; a group converts from
/// `&ThreadBlockGroup`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tb(pub(crate) TbRepr);

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TbRepr {
    /// One thread block (kept signed so that a negative literal is reported, not wrapped).
    Single(i64),
    /// A group.
    Group(ThreadBlockGroup),
}

impl Tb {
    /// One thread block.
    pub fn single(id: usize) -> Self {
        Tb(TbRepr::Single(id as i64))
    }
    /// The thread block ids this names, in group order.
    pub(crate) fn ids(&self, op: &'static str) -> Result<Vec<usize>, ProgramError> {
        match &self.0 {
            TbRepr::Single(i) if *i < 0 => {
                Err(ProgramError::invalid(None, None, op, format!("thread block {i} is negative")))
            }
            TbRepr::Single(i) => Ok(vec![*i as usize]),
            TbRepr::Group(g) => Ok(g.tbs.clone()),
        }
    }
    /// The first thread block named (for error sites).
    pub(crate) fn first(&self) -> Option<usize> {
        match &self.0 {
            TbRepr::Single(i) => usize::try_from(*i).ok(),
            TbRepr::Group(g) => g.tbs.first().copied(),
        }
    }
    /// Runs `f` (the checks and recording of one operation on these thread blocks), naming the first thread
    /// block and the call's source line `site` in its error where the error names none yet.
    pub(crate) fn locate<T>(&self, site: Site, f: impl FnOnce() -> Result<T, ProgramError>) -> Result<T, ProgramError> {
        let first = self.first();
        f().map_err(|e| e.located(None, first).at_call(site.0, site.1))
    }
    /// The group, if this is one.
    pub(crate) fn group(&self) -> Option<&ThreadBlockGroup> {
        match &self.0 {
            TbRepr::Group(g) => Some(g),
            TbRepr::Single(_) => None,
        }
    }
}

impl From<usize> for Tb {
    fn from(id: usize) -> Self {
        Tb(TbRepr::Single(id as i64))
    }
}
impl From<u32> for Tb {
    fn from(id: u32) -> Self {
        Tb(TbRepr::Single(id as i64))
    }
}
impl From<i32> for Tb {
    fn from(id: i32) -> Self {
        Tb(TbRepr::Single(id as i64))
    }
}
impl From<&ThreadBlockGroup> for Tb {
    fn from(g: &ThreadBlockGroup) -> Self {
        Tb(TbRepr::Group(g.clone()))
    }
}
impl From<ThreadBlockGroup> for Tb {
    fn from(g: ThreadBlockGroup) -> Self {
        Tb(TbRepr::Group(g))
    }
}

/// A set of thread blocks of one rank that share the work of an operation: each member processes an equal, aligned
/// slice of the operation's data (the plan's `tbg_info`).
///
/// ```
/// use mscclpp_lang::prelude::*;
/// let g = ThreadBlockGroup::new(&[0, 1, 2, 3]).unwrap();
/// assert_eq!(g.len(), 4);
/// assert_eq!(g.position(2), Some(2));
/// assert!(ThreadBlockGroup::new(&[0, 0]).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ThreadBlockGroup {
    pub(crate) tbs: Vec<usize>,
}

impl ThreadBlockGroup {
    /// A group of the given thread blocks, in this order; duplicates and empty groups are refused.
    #[track_caller]
    pub fn new(tbs: &[usize]) -> Result<Self, ProgramError> {
        let at = super::line::here();
        Self::checked(tbs).map_err(|e| e.at_call("tb_group", at))
    }
    fn checked(tbs: &[usize]) -> Result<Self, ProgramError> {
        if tbs.is_empty() {
            return Err(ProgramError::invalid(
                None,
                None,
                "tb_group",
                "a thread-block group needs at least one member",
            ));
        }
        for (i, t) in tbs.iter().enumerate() {
            if tbs[..i].contains(t) {
                return Err(ProgramError::invalid(
                    None,
                    Some(*t),
                    "tb_group",
                    format!("thread block {t} appears twice in the group {tbs:?}"),
                ));
            }
        }
        Ok(ThreadBlockGroup { tbs: tbs.to_vec() })
    }
    /// Number of members.
    pub fn len(&self) -> usize {
        self.tbs.len()
    }
    /// Never true: groups are not empty.
    pub fn is_empty(&self) -> bool {
        self.tbs.is_empty()
    }
    /// The members.
    pub fn tbs(&self) -> &[usize] {
        &self.tbs
    }
    /// Position of thread block `tb` in the group (its `tbg_info.tb_id`).
    pub fn position(&self, tb: usize) -> Option<usize> {
        self.tbs.iter().position(|&t| t == tb)
    }
}
