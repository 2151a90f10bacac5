//! The program defined through the facade is registered and builds.

use mscclpp::lang::registry::{self, Target};
use mscclpp_facade_user as _;

#[test]
fn a_program_written_against_the_facade_registers() {
    let meta = registry::find("facade_user_copy").unwrap();
    let plan = meta.build_plan(&Target::new(2).inplace(false)).unwrap();
    assert_eq!(plan.world_size(), 2);
}
