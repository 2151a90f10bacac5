//! `docs/configuration.md`, rendered from the table.

use std::fmt::Write as _;

use crate::kinds::Scope;
use crate::table::{LAUNCHER_VARIABLES, VARIABLES};

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The markdown of `docs/configuration.md`: one table per scope, the multicast rule, and the launchers' variables.
pub fn render_markdown() -> String {
    let mut out = String::new();
    out.push_str(
        "# Configuration\n\n\
         <!-- Generated from mscclpp-config/src/table.rs by mscclpp_config::render_markdown; do not edit.\n     \
         Regenerate: MSCCLPP_UPDATE_DOCS=1 cargo test -p mscclpp-config --test docs -->\n\n\
         Every environment variable the project reads is declared once, in the `mscclpp-config` crate, with a typed \
         accessor (e.g. `mscclpp_config::WAIT_TIMEOUT_MS.get()`). An empty value counts as unset; numbers and \
         words are trimmed and words match in any case. A malformed value is an error that names the variable, the \
         value and what is accepted; readers that always ignored malformed values (the timeouts, the flags) take \
         the default instead. `mscclpp info` prints every value as resolved now (add `--json` for machines).\n",
    );
    let sections = [
        (Scope::Library, "Library", "Read by the library at run time."),
        (Scope::Examples, "Examples", "Read by the example programs in `examples/`."),
        (Scope::Test, "Tests", "Read by tests only."),
        (Scope::Scripts, "GPU suite", "Read by the GPU-suite scripts only."),
        (Scope::Build, "Build", "Read by `mscclpp-sys/build.rs` when the crates are compiled (not at run time)."),
    ];
    for (scope, title, what) in sections {
        let _ = write!(
            out,
            "\n## {title}\n\n{what}\n\n| Variable | Type | Default | Meaning | Read by |\n|---|---|---|---|---|\n"
        );
        for v in VARIABLES.iter().filter(|v| v.meta().scope == scope) {
            let m = v.meta();
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} |",
                m.name,
                v.kind(),
                cell(&v.default_text()),
                cell(m.doc),
                cell(m.reader)
            );
        }
    }
    out.push_str(
        "\n## NVLink multicast (NVLS)\n\n\
         Multicast is allowed unless `NCCL_NVLS_ENABLE` is off (`0`, false, off, no) or `MSCCLPP_DISABLE_NVLS` or \
         `MSCCLPP_FORCE_DISABLE_NVLS` is on (`1`, true, on, yes), checked in that order \
         (`mscclpp_config::multicast_allowed`). A malformed value forbids nothing. When multicast is forbidden no \
         multicast object is created; switch-channel plans run through an emulation over peer pointers \
         (docs/plan-format.md).\n",
    );
    out.push_str(
        "\n## Read from the launcher\n\n\
         Set by mpirun, torchrun or Slurm; read (after the `MSCCLPP_*` variable of the same meaning) in this \
         order. They have no accessor of their own.\n\n| Variable | Launcher | Gives |\n|---|---|---|\n",
    );
    for v in LAUNCHER_VARIABLES {
        let _ = writeln!(out, "| `{}` | {} | {} |", v.name, cell(v.launcher), cell(v.meaning));
    }
    out
}
