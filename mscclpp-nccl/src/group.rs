//! The calling thread's `ncclGroupStart` depth (NCCL's own is thread-local too): calls inside a group go to NCCL.

use std::cell::Cell;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// The current depth.
pub fn depth() -> u32 {
    DEPTH.with(Cell::get)
}

/// One level deeper.
pub fn enter() {
    DEPTH.with(|d| d.set(d.get().saturating_add(1)));
}

/// One level out (never below zero).
pub fn leave() {
    DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_is_per_thread_and_never_negative() {
        leave();
        assert_eq!(depth(), 0);
        enter();
        enter();
        assert_eq!(depth(), 2);
        std::thread::spawn(|| assert_eq!(depth(), 0)).join().unwrap();
        leave();
        leave();
        leave();
        assert_eq!(depth(), 0);
    }
}
