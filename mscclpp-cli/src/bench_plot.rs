//! `mscclpp bench --plot F.png` and `mscclpp plot`: latency and bus bandwidth against message size, one line per
//! implementation, side by side in one PNG. Text is drawn with a font embedded in the binary (assets/), so no system font is needed.

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

/// One line of a plot: its name and its points, (message bytes, value) by increasing size.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Line {
    /// The legend's name.
    pub name: String,
    /// (bytes, median µs per call).
    pub latency: Vec<(f64, f64)>,
    /// (bytes, bus bandwidth in GB/s).
    pub busbw: Vec<(f64, f64)>,
}

/// A figure: latency and bus bandwidth against message size, one [`Line`] per implementation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figure {
    /// Drawn above both plots.
    pub title: String,
    /// In legend order.
    pub lines: Vec<Line>,
}

/// Colours of the lines, in order (ours first).
const PALETTE: [RGBColor; 7] = [
    RGBColor(31, 90, 200),
    RGBColor(210, 40, 40),
    RGBColor(30, 150, 60),
    RGBColor(230, 130, 0),
    RGBColor(140, 60, 170),
    RGBColor(0, 150, 160),
    RGBColor(90, 90, 90),
];

/// Writes the plots of `report` to `path` (a PNG): ours and NCCL.
pub fn write_plot(report: &Report, path: &Path) -> anyhow::Result<()> {
    let title = format!(
        "{} on {} ranks ({}, {})",
        report.collective,
        report.world,
        report.mode,
        if report.in_place { "in place" } else { "out of place" }
    );
    let line = |name: &str, nccl: bool| Line {
        name: name.to_string(),
        latency: series(report, nccl, |t| t.us),
        busbw: series(report, nccl, |t| t.busbw),
    };
    write_figure(&Figure { title, lines: vec![line("mscclpp", false), line("NCCL", true)] }, path)
}

/// Writes `figure` to `path` (a PNG): latency on log-log axes on the left, bus bandwidth on the right.
pub fn write_figure(figure: &Figure, path: &Path) -> anyhow::Result<()> {
    register_font()?;
    // Both axes of the latency plot and the size axis of the bandwidth plot are logarithmic: the points are
    // drawn at log2(bytes) and log10(us) on linear axes, whose ticks then fall on whole powers of two.
    let usable = |pts: &[(f64, f64)]| -> Vec<(f64, f64)> {
        let mut v: Vec<(f64, f64)> =
            pts.iter().copied().filter(|&(x, y)| x > 0.0 && y.is_finite() && y > 0.0).collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    };
    // The same lines in the plotted coordinates.
    let lines: Vec<Line> = figure
        .lines
        .iter()
        .map(|l| Line {
            name: l.name.clone(),
            latency: usable(&l.latency).into_iter().map(|(x, y)| (x.log2(), y.log10())).collect(),
            busbw: usable(&l.busbw).into_iter().map(|(x, y)| (x.log2(), y)).collect(),
        })
        .collect();
    if lines.iter().all(|l| l.latency.is_empty()) {
        return Err(anyhow!("nothing to plot: no size ran"));
    }
    let all = || lines.iter().flat_map(|l| l.latency.iter());
    let (x_lo, x_hi) = all().fold((f64::MAX, 0f64), |(lo, hi), &(x, _)| (lo.min(x), hi.max(x)));
    let (x_lo, x_hi) = (x_lo - 0.5, x_hi + 0.5);
    let (y_lo, y_hi) = all().fold((f64::MAX, f64::MIN), |(lo, hi), &(_, y)| (lo.min(y), hi.max(y)));
    // At least a factor of two of headroom around the latencies, so a flat curve still gets several ticks.
    let (y_lo, y_hi) = (y_lo - 0.15, y_hi + 0.15);
    let x_ticks = ((x_hi - x_lo).round() as usize + 1).clamp(2, 12);
    let bw_hi = lines.iter().flat_map(|l| l.busbw.iter()).fold(0f64, |hi, &(_, y)| hi.max(y)).max(1e-3) * 1.1;

    let mut pixels = vec![0u8; 3 * FIGURE_SIZE.0 as usize * FIGURE_SIZE.1 as usize];
    let root = BitMapBackend::with_buffer(&mut pixels, FIGURE_SIZE).into_drawing_area();
    let draw = || -> Result<(), Box<dyn std::error::Error>> {
        root.fill(&WHITE)?;
        let root = root.titled(&figure.title, (FAMILY, 24))?;
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
        for (i, Line { name, latency: lat_pts, busbw: bw_pts }) in lines.iter().enumerate() {
            if lat_pts.is_empty() {
                continue;
            }
            let color = PALETTE[i % PALETTE.len()];
            lat.draw_series(LineSeries::new(lat_pts.iter().copied(), color.stroke_width(2)))?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            lat.draw_series(lat_pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            bw.draw_series(LineSeries::new(bw_pts.iter().copied(), color.stroke_width(2)))?
                .label(name.as_str())
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
    root.present().map_err(|e| anyhow!("drawing {}: {e}", path.display()))?;
    drop(root);
    let png = encode_png(&pixels, FIGURE_SIZE).with_context(|| format!("encoding the plot {}", path.display()))?;
    std::fs::write(path, png).with_context(|| format!("writing the plot {}", path.display()))
}

/// The figure's width and height in pixels.
const FIGURE_SIZE: (u32, u32) = (1400, 560);

/// `rgb` (8-bit RGB, row by row) as a compact PNG: indexed colour when the figure has at most 256 colours (a plot
/// of a few lines and anti-aliased text usually has), else RGB with per-row adaptive filters; best compression
/// either way (several times smaller than the bitmap backend's own encoder, and the same pixels).
fn encode_png(rgb: &[u8], (width, height): (u32, u32)) -> anyhow::Result<Vec<u8>> {
    let mut palette: Vec<[u8; 3]> = Vec::new();
    let mut index = std::collections::HashMap::new();
    let mut indexed = Vec::with_capacity(rgb.len() / 3);
    for px in rgb.chunks_exact(3) {
        let colour = [px[0], px[1], px[2]];
        let i = *index.entry(colour).or_insert_with(|| {
            palette.push(colour);
            palette.len() - 1
        });
        if palette.len() > 256 {
            indexed.clear();
            break;
        }
        indexed.push(i as u8);
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Best);
    let data = if indexed.is_empty() {
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
        rgb
    } else {
        encoder.set_color(png::ColorType::Indexed);
        encoder.set_palette(palette.concat());
        encoder.set_filter(png::FilterType::NoFilter);
        &indexed
    };
    let mut writer = encoder.write_header()?;
    writer.write_image_data(data)?;
    writer.finish()?;
    Ok(out)
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

    /// Decodes a PNG to 8-bit RGB (a palette expanded).
    fn decode_rgb(png_bytes: &[u8]) -> (png::ColorType, Vec<u8>) {
        let mut decoder = png::Decoder::new(png_bytes);
        decoder.set_transformations(png::Transformations::EXPAND);
        let mut reader = decoder.read_info().unwrap();
        let stored = reader.info().color_type;
        let mut buf = vec![0; reader.output_buffer_size()];
        let frame = reader.next_frame(&mut buf).unwrap();
        assert_eq!((frame.width, frame.height, frame.color_type), (64, 8, png::ColorType::Rgb));
        buf.truncate(frame.buffer_size());
        (stored, buf)
    }

    #[test]
    fn png_keeps_every_pixel_indexed_or_not() {
        // 64 x 8 pixels: few colours (indexed), then a distinct colour per pixel (512 > 256: RGB).
        let few: Vec<u8> = (0..64 * 8).flat_map(|i: u32| [(i % 5) as u8 * 50, 7, (i % 3) as u8]).collect();
        let many: Vec<u8> = (0..64 * 8).flat_map(|i: u32| [(i & 0xff) as u8, (i >> 8) as u8, 9]).collect();
        for (rgb, want) in [(few, png::ColorType::Indexed), (many, png::ColorType::Rgb)] {
            let (stored, back) = decode_rgb(&encode_png(&rgb, (64, 8)).unwrap());
            assert_eq!(stored, want);
            assert!(back == rgb, "pixels differ after a round trip ({want:?})");
        }
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
