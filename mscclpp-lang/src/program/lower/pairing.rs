//! Signal/wait pairing (lowering step 1, docs/edsl.md "Lowering"): for every signalling rank,
//! waiting rank and channel type, the signals must equal the waits.

use super::super::builder::State;
use super::super::error::ProgramError;

/// Every signal from rank `a` to rank `b` over a channel type needs one wait of `b` for `a` over that type.
pub(super) fn check(state: &State) -> Result<(), ProgramError> {
    let mut keys: Vec<_> = state.signals.iter().map(|(k, _)| *k).collect();
    keys.extend(state.waits.iter().map(|(k, _)| *k));
    keys.sort();
    keys.dedup();
    for key in keys {
        let count = |l: &[((usize, usize, crate::plan::ChannelType), usize)]| {
            l.iter().find(|(k, _)| *k == key).map(|(_, n)| *n).unwrap_or(0)
        };
        let (signals, waits) = (count(&state.signals), count(&state.waits));
        if signals != waits {
            return Err(ProgramError::UnpairedSignal {
                channel: key.2.to_string(),
                src: key.0,
                dst: key.1,
                signals,
                waits,
            });
        }
    }
    Ok(())
}
