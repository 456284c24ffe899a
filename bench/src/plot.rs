//! `--plot FILE.svg`: throughput against payload size (log scale), one
//! panel per kind of operation (record seal, record open, HMAC, AES-CBC),
//! a line per algorithm and direction: solid for cbc-hmac, dashed for
//! OpenSSL when comparing. Drawn with `plotters`' SVG backend only.

use std::path::Path;

use plotters::element::DashedPathElement;
use plotters::prelude::*;

use crate::output::{Row, Section};

/// Distinct colours (Tableau 10), one per line of a panel.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// One line (or pair of lines, with OpenSSL) of a panel.
struct Series {
    label: String,
    ours: Vec<(f64, f64)>,
    theirs: Vec<(f64, f64)>,
}

struct Panel {
    title: &'static str,
    series: Vec<Series>,
}

/// Whether a row belongs to a panel.
type Belongs = fn(&Row) -> bool;

/// Groups `rows` into panels, keeping the report's order of lines.
fn panels(rows: &[Row]) -> Vec<Panel> {
    let kinds: [(&str, Belongs); 4] = [
        ("Record seal (TLS 1.2, MAC-then-encrypt)", |r| {
            r.section == Section::Combinations && r.direction == "seal"
        }),
        ("Record open (TLS 1.2, MAC-then-encrypt)", |r| {
            r.section == Section::Combinations && r.direction == "open"
        }),
        ("HMAC", |r| r.section == Section::Macs),
        ("AES-CBC", |r| r.section == Section::Ciphers),
    ];
    kinds
        .into_iter()
        .filter_map(|(title, belongs)| {
            let mut series: Vec<Series> = Vec::new();
            for row in rows.iter().filter(|r| belongs(r)) {
                let label = match row.section {
                    Section::Ciphers => format!("{} {}", row.name, row.direction),
                    _ => row.name.clone(),
                };
                let i = match series.iter().position(|s| s.label == label) {
                    Some(i) => i,
                    None => {
                        series.push(Series {
                            label,
                            ours: Vec::new(),
                            theirs: Vec::new(),
                        });
                        series.len() - 1
                    }
                };
                let p = row.payload;
                let x = p as f64;
                let o = &row.outcome;
                series[i].ours.push((x, o.ours.total().gb_per_s(p)));
                if let Some(theirs) = &o.theirs {
                    series[i].theirs.push((x, theirs.total().gb_per_s(p)));
                }
            }
            for s in &mut series {
                s.ours.sort_by(|a, b| a.0.total_cmp(&b.0));
                s.theirs.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            (!series.is_empty()).then_some(Panel { title, series })
        })
        .collect()
}

/// `16 B`, `1 KiB`, `16 KiB`, `1000 B`.
pub fn size_label(bytes: f64) -> String {
    let b = bytes.round() as u64;
    if b >= 1024 && b.is_multiple_of(1024) {
        format!("{} KiB", b / 1024)
    } else {
        format!("{b} B")
    }
}

/// Draws `rows` to the SVG file `path` under `title`.
pub fn draw(path: &Path, rows: &[Row], title: &str) -> Result<(), String> {
    let panels = panels(rows);
    if panels.is_empty() {
        return Err("nothing to plot".into());
    }
    let mut payloads: Vec<f64> = rows.iter().map(|r| r.payload as f64).collect();
    payloads.sort_by(f64::total_cmp);
    payloads.dedup();
    let (lo, hi) = (payloads[0], payloads[payloads.len() - 1]);
    // A single payload still gets a readable axis.
    let (lo, hi) = if lo < hi {
        (lo, hi)
    } else {
        (lo / 2.0, hi * 2.0)
    };

    let cols = panels.len().min(2);
    let grid_rows = panels.len().div_ceil(cols);
    let size = (720 * cols as u32, 40 + 560 * grid_rows as u32);
    let err = |e: DrawingAreaErrorKind<_>| format!("{}: {e}", path.display());

    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(err)?;
    let areas = root.split_evenly((grid_rows, cols));
    for (area, panel) in areas.iter().zip(&panels) {
        let top = panel
            .series
            .iter()
            .flat_map(|s| s.ours.iter().chain(&s.theirs))
            .map(|&(_, y)| y)
            .fold(0.0f64, f64::max);
        let y_max = if top > 0.0 { top * 1.15 } else { 1.0 };
        let mut chart = ChartBuilder::on(area)
            .caption(panel.title, ("sans-serif", 17))
            .margin(12)
            .margin_right(36)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(
                (lo..hi).log_scale().with_key_points(payloads.clone()),
                0f64..y_max,
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("payload (bytes, log scale)")
            .y_desc("throughput (GB/s)")
            .x_label_formatter(&|x| size_label(*x))
            .y_label_formatter(&|y| format!("{y:.1}"))
            .bold_line_style(BLACK.mix(0.15))
            .light_line_style(BLACK.mix(0.04))
            .y_max_light_lines(2)
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .draw()
            .map_err(err)?;

        let comparing = panel.series.iter().any(|s| !s.theirs.is_empty());
        for (i, s) in panel.series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let solid = color.stroke_width(2);
            let ours_label = if comparing {
                format!("{} cbc-hmac", s.label)
            } else {
                s.label.clone()
            };
            chart
                .draw_series(LineSeries::new(s.ours.iter().copied(), solid))
                .map_err(err)?
                .label(ours_label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], solid));
            chart
                .draw_series(s.ours.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(err)?;
            if !s.theirs.is_empty() {
                chart
                    .draw_series(DashedLineSeries::new(s.theirs.iter().copied(), 6, 4, solid))
                    .map_err(err)?
                    .label(format!("{} OpenSSL", s.label))
                    .legend(move |(x, y)| {
                        DashedPathElement::new(vec![(x, y), (x + 24, y)], 6, 4, solid)
                    });
                chart
                    .draw_series(
                        s.theirs
                            .iter()
                            .map(|&p| TriangleMarker::new(p, 4, color.stroke_width(1))),
                    )
                    .map_err(err)?;
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font(("sans-serif", 12))
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{Figures, Outcome};
    use crate::measure::Measurement;

    fn row(section: Section, name: &str, direction: &'static str, payload: usize) -> Row {
        let f = |ops| Figures {
            one: Measurement::wall(ops, 1.0),
            many: None,
        };
        Row {
            section,
            name: name.into(),
            direction,
            payload,
            outcome: Outcome {
                ours: f(1000 + payload as u64),
                theirs: Some(f(900)),
            },
            openssl_impl: None,
        }
    }

    #[test]
    fn labels() {
        assert_eq!(size_label(16.0), "16 B");
        assert_eq!(size_label(1000.0), "1000 B");
        assert_eq!(size_label(16384.0), "16 KiB");
    }

    #[test]
    fn groups_and_draws() {
        let mut rows = Vec::new();
        for p in [16384, 16, 1024] {
            rows.push(row(Section::Combinations, "AES-128-CBC-SHA1", "seal", p));
            rows.push(row(Section::Combinations, "AES-128-CBC-SHA1", "open", p));
            rows.push(row(Section::Ciphers, "AES-128-CBC", "decrypt", p));
        }
        let panels = panels(&rows);
        assert_eq!(panels.len(), 3);
        assert_eq!(panels[2].series[0].label, "AES-128-CBC decrypt");
        let xs: Vec<f64> = panels[0].series[0].ours.iter().map(|p| p.0).collect();
        assert_eq!(xs, [16.0, 1024.0, 16384.0]);

        let path = std::env::temp_dir().join(format!("cbc-hmac-bench-{}.svg", std::process::id()));
        draw(&path, &rows, "test plot").unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        for text in [
            "<svg",
            "test plot",
            "throughput (GB/s)",
            "payload (bytes, log scale)",
            "AES-128-CBC-SHA1 OpenSSL",
            "16 KiB",
        ] {
            assert!(svg.contains(text), "{text:?} missing");
        }
    }
}
