//! docs/configuration.md is the rendering of the table; this test fails when it is stale and says how to
//! regenerate it (`MSCCLPP_UPDATE_DOCS=1 cargo test -p mscclpp-config --test docs`).

use std::path::PathBuf;

#[test]
fn configuration_md_is_the_rendered_table() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md");
    let rendered = mscclpp_config::render_markdown();
    if mscclpp_config::UPDATE_DOCS.get().expect("MSCCLPP_UPDATE_DOCS") {
        std::fs::write(&path, &rendered).expect("write docs/configuration.md");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "{} differs from mscclpp_config::render_markdown(); regenerate it with \
         `MSCCLPP_UPDATE_DOCS=1 cargo test -p mscclpp-config --test docs` and commit the result",
        path.display()
    );
}

#[test]
fn the_rendering_names_every_variable_once_per_row() {
    let md = mscclpp_config::render_markdown();
    assert!(!mscclpp_config::VARIABLES.is_empty());
    for v in mscclpp_config::VARIABLES {
        let row = format!("| `{}` |", v.meta().name);
        assert_eq!(md.matches(&row).count(), 1, "{row}");
    }
    for v in mscclpp_config::LAUNCHER_VARIABLES {
        assert!(md.contains(&format!("| `{}` |", v.name)), "{}", v.name);
    }
}
