//! Compile-fail and compile-pass cases of the eDSL's type rules and of `#[collective_program]`.
//! Regenerate the pinned messages with `TRYBUILD=overwrite cargo test --test ui`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
