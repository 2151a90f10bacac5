//! `mscclpp list`: the registered collective programs with their metadata.

use std::process::ExitCode;

use mscclpp_lang::plan::Collective;
use mscclpp_lang::registry::{self, ProgramMeta};

/// Arguments of `mscclpp list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print the metadata as a JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Only programs of this collective (allgather, allreduce, reducescatter, alltoall, broadcast, ...).
    #[arg(long, value_parser = parse_collective)]
    pub collective: Option<Collective>,
}

fn parse_collective(s: &str) -> Result<Collective, mscclpp_lang::ParseError> {
    s.parse()
}

/// Runs `mscclpp list`.
pub fn run(args: ListArgs) -> anyhow::Result<ExitCode> {
    let programs: Vec<&ProgramMeta> =
        registry::programs().into_iter().filter(|m| args.collective.is_none_or(|c| m.collective == c)).collect();
    if args.json {
        let infos: Vec<_> = programs.iter().map(|m| m.info()).collect();
        println!("{}", serde_json::to_string_pretty(&infos)?);
        return Ok(ExitCode::SUCCESS);
    }
    if programs.is_empty() {
        println!("no registered programs{}", args.collective.map(|c| format!(" for {c}")).unwrap_or_default());
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", table(&programs));
    println!();
    println!("{} program(s). Write one as an MSCCL++ plan: mscclpp plan NAME --world-size N [-o FILE]", programs.len());
    print!("{}", tuned_tables(args.collective));
    Ok(ExitCode::SUCCESS)
}

/// The tuned tables shipped with the library (one line each: file, machine, rows), then those in the cache
/// directory (`mscclpp tune` writes them): each one's path, key and rows (of `collective` only, when given); one
/// that does not parse says why.
fn tuned_tables(collective: Option<Collective>) -> String {
    let mut out = String::new();
    let shipped = mscclpp_exec::tune::shipped_tables();
    if !shipped.is_empty() {
        out.push_str("\nshipped tuned tables (used on the machine they name; `mscclpp tune` on it refines them):\n");
    }
    for (name, table) in shipped {
        match table {
            Ok(t) => {
                let rows = t.rows.iter().filter(|r| collective.is_none_or(|c| r.collective == c)).count();
                out.push_str(&format!(
                    "  {name}: {}, {} ranks ({} per node), {rows} row(s)\n",
                    t.key.gpu, t.key.world_size, t.key.ranks_per_node
                ));
            }
            Err(e) => out.push_str(&format!("  {name} is ignored: {e}\n")),
        }
    }
    for (path, table) in crate::tune::tables_in_cache() {
        out.push('\n');
        match table {
            Ok(t) => {
                let rows: Vec<_> =
                    t.rows.into_iter().filter(|r| collective.is_none_or(|c| r.collective == c)).collect();
                out.push_str(&format!("tuned table {} ({} row(s)): {}\n", path.display(), rows.len(), t.key));
                out.push_str(&crate::tune::rows_table(&rows));
            }
            Err(e) => out.push_str(&format!("tuned table {} is ignored: {e}\n", path.display())),
        }
    }
    out
}

/// The table `mscclpp list` prints: one row per program, then each description.
fn table(programs: &[&ProgramMeta]) -> String {
    let header = ["NAME", "COLLECTIVE", "PROTOCOL", "WORLD", "RANKS/NODE", "MESSAGES", "BUFFERS", "TAGS"];
    let rows: Vec<[String; 8]> = programs
        .iter()
        .map(|m| {
            let tags: Vec<String> = m.tags.iter().map(|t| format!("{}={}", t.key, t.value)).collect();
            [
                m.name.to_string(),
                m.collective.to_string(),
                m.protocol.to_string(),
                m.world_sizes.to_string(),
                m.ranks_per_node.to_string(),
                m.message_sizes.display_bytes(),
                m.buffer_mode.to_string(),
                if tags.is_empty() { "-".to_string() } else { tags.join(",") },
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}  "));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(&header.map(String::from));
    for row in &rows {
        out.push_str(&line(row));
    }
    out.push('\n');
    let name_w = programs.iter().map(|m| m.name.len()).max().unwrap_or(0);
    for m in programs {
        let d = if m.description.is_empty() { "(no description)" } else { m.description };
        out.push_str(&format!("{:<name_w$}  {d}\n", m.name));
    }
    out
}
