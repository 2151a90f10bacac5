//! `select` builds each candidate's plan once per call: for the candidates, for the reasons when nothing fits,
//! and for tuning the chosen program. A binary of its own, so that no other test builds the counting program.

use std::sync::atomic::{AtomicUsize, Ordering};

use mscclpp_lang::prelude::*;
use mscclpp_lang::registry::{self, RegistryError, Request};
use mscclpp_macros::collective_program;

static BUILDS: AtomicUsize = AtomicUsize::new(0);

/// Every rank copies its input into its output; counts how often it is built.
#[collective_program(
    name = "counting_local_copy",
    collective = "custom",
    world_sizes = 1..=4,
    buffer_mode = "out_of_place",
    tags(counting = 1),
    check = false
)]
fn counting_local_copy(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    BUILDS.fetch_add(1, Ordering::SeqCst);
    for r in 0..p.world_size() {
        p.rank(r)?.copy(p.output(r)?.all()?, p.input(r)?.all()?, 0)?;
    }
    Ok(())
}

#[test]
fn select_builds_each_candidate_once() {
    let request = Request::new(Collective::Custom, 2, 1 << 20).tag("counting", 1);
    let before = BUILDS.load(Ordering::SeqCst);
    let selected = registry::select(&request).unwrap();
    assert_eq!(selected.program.name, "counting_local_copy");
    assert_eq!(selected.target.instances, 1);
    assert_eq!(BUILDS.load(Ordering::SeqCst) - before, 1, "one build to check the candidate and tune it");

    // Nothing fits (the message does not split into whole chunks): one build, and the reason says why.
    let request = Request::new(Collective::Custom, 2, 3).tag("counting", 1);
    let before = BUILDS.load(Ordering::SeqCst);
    let e = registry::select(&request).unwrap_err();
    assert_eq!(BUILDS.load(Ordering::SeqCst) - before, 1, "one build to explain the rejection");
    let RegistryError::NoProgram { reasons, .. } = e else { panic!("{e}") };
    assert!(
        reasons.iter().any(|r| r.starts_with("counting_local_copy: ") && r.contains("cannot split")),
        "{reasons:?}"
    );
}
