//! `registry::check_program`: every declared world size is built, in and out of place as the program allows, and
//! the smallest and largest are verified; a declared size the program cannot build is reported by name.

use mscclpp::lang::registry;
use mscclpp::prelude::*;

/// Declares 2..=8 ranks but refuses more than 6 (like a program that runs out of operations per thread block).
/// `check = false`: this file asserts on the report itself instead of the generated test.
#[collective_program(collective = "custom", world_sizes = 2..=8, buffer_mode = "out_of_place", check = false)]
fn copy_up_to_six(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    if p.world_size() > 6 {
        return Err(ProgramError::custom("too many operations in one thread block"));
    }
    for r in 0..p.world_size() {
        p.rank(r)?.copy(p.output(r)?.all()?, p.input(r)?.all()?, 0)?;
    }
    Ok(())
}

/// A program that builds at every declared size; the macro's generated test checks it too.
#[collective_program(collective = "custom", world_sizes = 1..=3, buffer_mode = "out_of_place")]
fn copy_anywhere(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
    for r in 0..p.world_size() {
        p.rank(r)?.copy(p.output(r)?.all()?, p.input(r)?.all()?, 0)?;
    }
    Ok(())
}

#[test]
fn a_declared_world_size_that_does_not_build_is_reported() {
    let report = registry::check_program("copy_up_to_six").unwrap();
    assert!(!report.ok());
    // 7 world sizes, out of place only.
    assert_eq!(report.cases.len(), 7);
    let failed: Vec<(usize, bool)> = report.failures().map(|c| (c.world_size, c.inplace)).collect();
    assert_eq!(failed, [(7, false), (8, false)]);
    let text = report.to_string();
    assert!(text.contains("program `copy_up_to_six`: 7 case(s) checked, 2 failed"), "{text}");
    assert!(text.contains("7 ranks (7 per node), out of place:"), "{text}");
    assert!(text.contains("8 ranks (8 per node), out of place:"), "{text}");
    assert!(text.contains("too many operations in one thread block"), "{text}");
    // The smallest and largest sizes are verified, the others only built.
    let verified: Vec<usize> = report.cases.iter().filter(|c| c.verified).map(|c| c.world_size).collect();
    assert_eq!(verified, [2, 8]);
}

#[test]
fn a_program_that_builds_everywhere_passes() {
    let report = registry::check_program("copy_anywhere").unwrap();
    assert!(report.ok(), "{report}");
    let cases: Vec<(usize, bool)> = report.cases.iter().map(|c| (c.world_size, c.inplace)).collect();
    assert_eq!(cases, [(1, false), (2, false), (3, false)]);
    assert!(registry::check_program("no_such_program").is_err());
}

/// The generated test exists beside each program with `check` left on.
#[test]
fn the_macro_generates_the_check_test() {
    __collective_program_check_copy_anywhere();
}
