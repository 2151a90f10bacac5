//! A user-installed selector (process-wide state, hence its own test binary with a single test).

use mscclpp_lang::plan::{Collective, Protocol};
use mscclpp_lang::registry::{self, ProgramMeta, RegistryError, Request};

// Link the default algorithms in.
use mscclpp_algorithms as _;

#[test]
fn a_user_selector_chooses_among_the_candidates() {
    let small = Request::new(Collective::AllReduce, 4, 4096);
    assert_eq!(registry::select(&small).unwrap().program.name, "allreduce_oneshot_ll");

    // Prefer Simple programs (but not the port-channel ones) whatever the size; the selector sees only programs
    // that fit the request.
    registry::set_selector(Box::new(|candidates: &[&ProgramMeta], req: &Request| {
        assert!(candidates.iter().all(|m| m.collective == req.collective));
        candidates.iter().position(|m| m.protocol == Protocol::Simple && m.tag("port").is_none())
    }));
    let chosen = registry::select(&small).unwrap();
    assert_eq!(chosen.program.name, "allreduce_twoshot");
    assert!(chosen.by_user_selector);

    // `None` falls back to the default selector.
    registry::set_selector(Box::new(|_: &[&ProgramMeta], _: &Request| None));
    let chosen = registry::select(&small).unwrap();
    assert_eq!(chosen.program.name, "allreduce_oneshot_ll");
    assert!(!chosen.by_user_selector);

    // A selector may delegate to the default one.
    registry::set_selector(Box::new(registry::default_selector));
    assert_eq!(registry::select(&small).unwrap().program.name, "allreduce_oneshot_ll");

    // An index past the candidates is an error, not a panic.
    registry::set_selector(Box::new(|c: &[&ProgramMeta], _: &Request| Some(c.len())));
    let e = registry::select(&small).unwrap_err();
    assert!(matches!(e, RegistryError::SelectorOutOfRange { .. }), "{e}");

    registry::clear_selector();
    assert_eq!(registry::select(&small).unwrap().program.name, "allreduce_oneshot_ll");
}
