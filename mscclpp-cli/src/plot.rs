//! `mscclpp plot`: the PNG of a timing table another tool wrote (e.g. `examples/torch/peers.py`), in the style of
//! `mscclpp bench --plot`.
//!
//! The table is a CSV file with a header: a `bytes` column, one `NAME_us` column per implementation (µs per
//! call; empty where it did not run), and optionally `collective` and `world` columns, which give the bus
//! bandwidth factor (nccl-tests' convention); `--collective` and `--world` stand in for them. A table of
//! `mscclpp bench --csv` plots as it is: its own `us` column is the line `mscclpp`, beside `nccl_us`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use clap::Args;
use mscclpp_lang::plan::Collective;

use crate::bench_plot::{Figure, Line, write_figure};
use crate::bench_report::bus_factor;

/// Arguments of `mscclpp plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// The CSV table: `bytes`, then `NAME_us` columns, optionally `collective` and `world`
    pub csv: PathBuf,
    /// The PNG to write
    #[arg(short, long)]
    pub out: PathBuf,
    /// Title above the plots (default: the collective, the world size and the file name)
    #[arg(long)]
    pub title: Option<String>,
    /// The collective, for the bus bandwidth, when the table has no `collective` column
    #[arg(long)]
    pub collective: Option<String>,
    /// Ranks, for the bus bandwidth, when the table has no `world` column
    #[arg(long)]
    pub world: Option<usize>,
}

/// Runs `mscclpp plot`.
pub fn run(args: PlotArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.csv).with_context(|| format!("reading {}", args.csv.display()))?;
    let table = parse(&text).with_context(|| format!("in {}", args.csv.display()))?;
    let figure = figure(&table, &args, &args.csv)?;
    write_figure(&figure, &args.out)?;
    println!("wrote {} ({} line(s))", args.out.display(), figure.lines.len());
    Ok(ExitCode::SUCCESS)
}

/// A CSV table: the header's names and the rows' cells (surrounding quotes removed).
#[derive(Debug, Clone, PartialEq)]
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// The first non-empty value of column `name`.
    fn first(&self, name: &str) -> Option<&str> {
        let c = self.column(name)?;
        self.rows.iter().filter_map(|r| r.get(c)).map(String::as_str).find(|v| !v.is_empty())
    }
}

fn cells(line: &str) -> Vec<String> {
    line.split(',').map(|c| c.trim().trim_matches('"').to_string()).collect()
}

fn parse(text: &str) -> anyhow::Result<Table> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
    let header = cells(lines.next().ok_or_else(|| anyhow!("the table is empty: no header line"))?);
    let rows: Vec<Vec<String>> = lines.map(cells).collect();
    for (i, r) in rows.iter().enumerate() {
        if r.len() != header.len() {
            bail!("row {} has {} cells, the header {}", i + 1, r.len(), header.len());
        }
    }
    Ok(Table { header, rows })
}

fn collective(name: &str) -> anyhow::Result<Collective> {
    let c = match name.replace(['_', '-'], "").to_ascii_lowercase().as_str() {
        "allreduce" => Collective::AllReduce,
        "allgather" => Collective::AllGather,
        "reducescatter" => Collective::ReduceScatter,
        "alltoall" => Collective::AllToAll,
        "broadcast" => Collective::Broadcast,
        _ => bail!("unknown collective `{name}`: allreduce, allgather, reducescatter, alltoall or broadcast"),
    };
    Ok(c)
}

/// A column's name as the legend shows it: words apart, NCCL in capitals (`nccl_symm` → `NCCL symm`).
fn display_name(column: &str) -> String {
    column.split('_').map(|w| if w.eq_ignore_ascii_case("nccl") { "NCCL" } else { w }).collect::<Vec<_>>().join(" ")
}

fn figure(table: &Table, args: &PlotArgs, file: &Path) -> anyhow::Result<Figure> {
    let bytes_col = table.column("bytes").ok_or_else(|| anyhow!("the table has no `bytes` column"))?;
    let name = args
        .collective
        .clone()
        .or_else(|| table.first("collective").map(str::to_string))
        .ok_or_else(|| anyhow!("no collective: the table has no `collective` column; pass --collective"))?;
    let coll = collective(&name)?;
    let world = match args.world {
        Some(w) => w,
        None => {
            let w = table
                .first("world")
                .ok_or_else(|| anyhow!("no world size: the table has no `world` column; pass --world"))?;
            w.parse().map_err(|_| anyhow!("`world` is `{w}`, not a rank count"))?
        }
    };
    let factor = bus_factor(coll, world);
    let mut lines = Vec::new();
    for (c, h) in table.header.iter().enumerate() {
        // `mscclpp bench --csv` names its own column `us` (and NCCL's `nccl_us`).
        let Some(label) = (if h == "us" { Some("mscclpp") } else { h.strip_suffix("_us") }) else { continue };
        let mut line = Line { name: display_name(label), ..Line::default() };
        for (i, r) in table.rows.iter().enumerate() {
            let (b, v) = (&r[bytes_col], &r[c]);
            if v.is_empty() {
                continue;
            }
            let bytes: f64 = b.parse().map_err(|_| anyhow!("row {}: `bytes` is `{b}`, not a number", i + 1))?;
            let us: f64 = v.parse().map_err(|_| anyhow!("row {}: `{h}` is `{v}`, not a number", i + 1))?;
            line.latency.push((bytes, us));
            if us > 0.0 {
                line.busbw.push((bytes, bytes / (us * 1e3) * factor));
            }
        }
        lines.push(line);
    }
    if lines.is_empty() {
        bail!("the table has no `NAME_us` column to plot");
    }
    let title = args.title.clone().unwrap_or_else(|| {
        let file = file.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        format!("{name} on {world} ranks ({file})")
    });
    Ok(Figure { title, lines })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(out: &Path) -> PlotArgs {
        PlotArgs { csv: PathBuf::from("t.csv"), out: out.to_path_buf(), title: None, collective: None, world: None }
    }

    const PEERS: &str = "bytes,collective,world,dtype,mscclpp_us,nccl_us,symm_two_shot_us\n\
                         1024,allreduce,2,float16,5.0,9.0,\n\
                         1048576,allreduce,2,float16,11.0,17.0,10.5\n";

    #[test]
    fn every_us_column_is_a_line_with_the_bus_bandwidth_of_the_collective() {
        let dir = tempfile::tempdir().unwrap();
        let t = parse(PEERS).unwrap();
        let f = figure(&t, &args(&dir.path().join("p.png")), Path::new("peers.csv")).unwrap();
        let names: Vec<&str> = f.lines.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["mscclpp", "NCCL", "symm two shot"]);
        // An empty cell is a size that did not run.
        assert_eq!(f.lines[2].latency, vec![(1048576.0, 10.5)]);
        // All-reduce on 2 ranks: bus bandwidth = algorithm bandwidth.
        let (b, bw) = f.lines[0].busbw[1];
        assert_eq!(b, 1048576.0);
        assert!((bw - 1048576.0 / 11e3).abs() < 1e-9, "{bw}");
        assert!(f.title.contains("allreduce on 2 ranks"), "{}", f.title);
        let png = dir.path().join("p.png");
        write_figure(&f, &png).unwrap();
        assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG\r\n\x1a\n"));
    }

    #[test]
    fn a_bench_table_plots_ours_and_nccl() {
        let csv = "collective,world,bytes,program,us,us_min,nccl_us,nccl_us_min\n\
                   allreduce,2,1024,\"allreduce_oneshot_ll\",2.9,2.8,6.3,6.2\n\
                   allreduce,2,2048,\"allreduce_oneshot_ll\",3.0,2.9,6.4,6.3\n";
        let dir = tempfile::tempdir().unwrap();
        let fig = figure(&parse(csv).unwrap(), &args(&dir.path().join("b.png")), Path::new("b.csv")).unwrap();
        let names: Vec<&str> = fig.lines.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["mscclpp", "NCCL"]);
        assert_eq!(fig.lines[0].latency, [(1024.0, 2.9), (2048.0, 3.0)]);
    }

    #[test]
    fn a_table_without_what_a_plot_needs_is_refused_with_the_reason() {
        let out = Path::new("unused.png");
        let err = |text: &str| figure(&parse(text).unwrap(), &args(out), Path::new("t.csv")).unwrap_err().to_string();
        assert!(err("size,mscclpp_us\n1,2\n").contains("no `bytes` column"));
        assert!(err("bytes,mscclpp_us\n1,2\n").contains("--collective"));
        assert!(err("bytes,collective,mscclpp_us\n1,allreduce,2\n").contains("--world"));
        assert!(err("bytes,collective,world,x\n1,allreduce,2,3\n").contains("no `NAME_us` column"));
        assert!(err("bytes,collective,world,a_us\n1,allreduce,2,fast\n").contains("not a number"));
        assert!(parse("bytes,a_us\n1\n").unwrap_err().to_string().contains("row 1 has 1 cells"));
        assert!(parse("").unwrap_err().to_string().contains("empty"));
    }
}
