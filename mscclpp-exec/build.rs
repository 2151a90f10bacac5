//! Embeds the tuned tables shipped with the library (`tables/*.json`, written by `mscclpp tune` on the machines
//! they name): generates `$OUT_DIR/shipped_tables.rs`, a list of `(file name, contents)`.

use std::path::Path;

fn main() {
    // The manifest folder of this build (read at run time: a build script compiled once may serve another checkout
    // sharing the target folder).
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest).join("tables");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut out = String::from(
        "/// The shipped tuned tables: (file name, JSON text).\npub const SHIPPED: &[(&str, &str)] = &[\n",
    );
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        out.push_str(&format!("    ({name:?}, include_str!({:?})),\n", f.display().to_string()));
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("shipped_tables.rs");
    std::fs::write(&dest, out).expect("writing shipped_tables.rs into OUT_DIR");
}
