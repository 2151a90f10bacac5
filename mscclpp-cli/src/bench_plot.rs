//! `mscclpp bench --plot F.png`: latency and bus bandwidth against message size, ours and NCCL's, side by side
//! in one PNG. Text is drawn with a font embedded in the binary (assets/), so no system font is needed.

use std::path::Path;

use anyhow::{Context, anyhow};
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::bench_report::Report;

/// The font the labels are drawn with (DejaVu Sans, printable ASCII; license beside it).
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans-ascii.ttf");

/// The font family name the plots ask for.
const FAMILY: &str = "mscclpp-sans";

fn register_font() -> anyhow::Result<()> {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok { Ok(()) } else { Err(anyhow!("the embedded plot font could not be read")) }
}

/// A series: (message bytes, value) for each row that has the figure, by increasing size.
fn series(report: &Report, nccl: bool, value: impl Fn(&crate::bench_report::Timing) -> f64) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = report
        .rows
        .iter()
        .filter_map(|r| {
            let t = if nccl { r.nccl.as_ref() } else { r.ours.as_ref() }?;
            let v = value(t);
            (v.is_finite() && v > 0.0 && r.bytes > 0).then_some((r.bytes as f64, v))
        })
        .collect();
    // Sizes may be given in any order; lines run from small to large.
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// `1K`, `64M`, `1G`: sizes for the axis.
fn size_label(v: f64) -> String {
    let units = [(1u64 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    for (u, name) in units {
        if v >= u as f64 {
            return format!("{}{name}", (v / u as f64 * 10.0).round() / 10.0);
        }
    }
    format!("{v}")
}

/// Label of a tick at `log2(bytes) = v`: the size at whole powers of two, nothing between them.
fn log2_size_label(v: f64) -> String {
    if (v - v.round()).abs() < 1e-6 { size_label(v.round().exp2()) } else { String::new() }
}

/// Label of a tick at `log10(us) = v`: the microseconds, to three significant figures.
fn log10_us_label(v: f64) -> String {
    let us = 10f64.powf(v);
    let decimals = if us >= 100.0 {
        0
    } else if us >= 10.0 {
        1
    } else {
        2
    };
    format!("{us:.decimals$}")
}

/// Writes the plots of `report` to `path` (a PNG).
pub fn write_plot(report: &Report, path: &Path) -> anyhow::Result<()> {
    register_font()?;
    // Both axes of the latency plot and the size axis of the bandwidth plot are logarithmic: the points are
    // drawn at log2(bytes) and log10(us) on linear axes, whose ticks then fall on whole powers of two.
    let log_x = |pts: Vec<(f64, f64)>| pts.into_iter().map(|(x, y)| (x.log2(), y)).collect::<Vec<_>>();
    let log_xy = |pts: Vec<(f64, f64)>| pts.into_iter().map(|(x, y)| (x.log2(), y.log10())).collect::<Vec<_>>();
    let ours_lat = log_xy(series(report, false, |t| t.us));
    let nccl_lat = log_xy(series(report, true, |t| t.us));
    let ours_bw = log_x(series(report, false, |t| t.busbw));
    let nccl_bw = log_x(series(report, true, |t| t.busbw));
    if ours_lat.is_empty() && nccl_lat.is_empty() {
        return Err(anyhow!("nothing to plot: no size ran"));
    }
    let all = || ours_lat.iter().chain(&nccl_lat);
    let (x_lo, x_hi) = all().fold((f64::MAX, 0f64), |(lo, hi), &(x, _)| (lo.min(x), hi.max(x)));
    let (x_lo, x_hi) = (x_lo - 0.5, x_hi + 0.5);
    let (y_lo, y_hi) = all().fold((f64::MAX, f64::MIN), |(lo, hi), &(_, y)| (lo.min(y), hi.max(y)));
    // At least a factor of two of headroom around the latencies, so a flat curve still gets several ticks.
    let (y_lo, y_hi) = (y_lo - 0.15, y_hi + 0.15);
    let x_ticks = ((x_hi - x_lo).round() as usize + 1).clamp(2, 12);
    let bw_hi = ours_bw.iter().chain(&nccl_bw).fold(0f64, |hi, &(_, y)| hi.max(y)).max(1e-3) * 1.1;

    let root = BitMapBackend::new(path, (1400, 560)).into_drawing_area();
    let draw = || -> Result<(), Box<dyn std::error::Error>> {
        root.fill(&WHITE)?;
        let title = format!(
            "{} on {} ranks ({}, {})",
            report.collective,
            report.world,
            report.mode,
            if report.in_place { "in place" } else { "out of place" }
        );
        let root = root.titled(&title, (FAMILY, 24))?;
        let (left, right) = root.split_horizontally(700);

        let mut lat = ChartBuilder::on(&left)
            .caption("latency (median, us)", (FAMILY, 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)?;
        lat.configure_mesh()
            .x_desc("message size (bytes)")
            .y_desc("us (log scale)")
            .x_labels(x_ticks)
            .y_labels(8)
            .x_label_formatter(&|v| log2_size_label(*v))
            .y_label_formatter(&|v| log10_us_label(*v))
            .label_style((FAMILY, 13))
            .axis_desc_style((FAMILY, 14))
            .draw()?;
        let mut bw = ChartBuilder::on(&right)
            .caption("bus bandwidth (GB/s)", (FAMILY, 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x_lo..x_hi, 0f64..bw_hi)?;
        bw.configure_mesh()
            .x_desc("message size (bytes)")
            .y_desc("GB/s")
            .x_labels(x_ticks)
            .x_label_formatter(&|v| log2_size_label(*v))
            .label_style((FAMILY, 13))
            .axis_desc_style((FAMILY, 14))
            .draw()?;
        for (name, color, lat_pts, bw_pts) in
            [("mscclpp", BLUE, &ours_lat, &ours_bw), ("NCCL", RED, &nccl_lat, &nccl_bw)]
        {
            if lat_pts.is_empty() {
                continue;
            }
            lat.draw_series(LineSeries::new(lat_pts.iter().copied(), color.stroke_width(2)))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            lat.draw_series(lat_pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            bw.draw_series(LineSeries::new(bw_pts.iter().copied(), color.stroke_width(2)))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            bw.draw_series(bw_pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        }
        lat.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FAMILY, 14))
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        bw.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FAMILY, 14))
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        Ok(())
    };
    draw().map_err(|e| anyhow!("drawing {}: {e}", path.display()))?;
    root.present().with_context(|| format!("writing the plot {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_file_is_a_png() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.png");
        let report = crate::bench_report::tests::synthetic();
        write_plot(&report, &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        assert!(bytes.len() > 1000, "an empty image: {} bytes", bytes.len());
        // Nothing that ran: a clear error, no file.
        let mut empty = report;
        empty.rows.clear();
        let other = dir.path().join("none.png");
        assert!(write_plot(&empty, &other).unwrap_err().to_string().contains("nothing to plot"));
        assert!(!other.exists());
    }

    #[test]
    fn axis_labels() {
        assert_eq!(size_label(1024.0), "1K");
        assert_eq!(size_label(1536.0), "1.5K");
        assert_eq!(size_label((256u64 << 20) as f64), "256M");
        assert_eq!(size_label(100.0), "100");
        assert_eq!(log2_size_label(10.0), "1K");
        assert_eq!(log2_size_label(28.0), "256M");
        assert_eq!(log2_size_label(10.5), "", "no label between powers of two");
        assert_eq!(log10_us_label(0.0), "1.00");
        assert_eq!(log10_us_label(2.0), "100");
        assert_eq!(log10_us_label(1.0f64 + 0.5f64.log10()), "5.00");
    }
}
