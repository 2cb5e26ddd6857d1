//! The report's charts as standalone SVG: bars of req/s or p99 per protocol and mode (median
//! over repetitions, each repetition a dot), and a heatmap of receive work per CPU over time.
use std::fmt::Write;

const W: f64 = 640.0;
const H: f64 = 300.0;
const COLORS: [&str; 6] = [
    "#6b7280", "#2563eb", "#dc2626", "#9ca3af", "#60a5fa", "#f87171",
];

/// Text made safe inside SVG markup.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

use rxsteer_records::breakdown::{TimeSplit, PARTS};
use rxsteer_records::run::median;
use rxsteer_records::run::CoreKind;
use std::collections::BTreeMap;

/// The axis top and tick step for data up to `top`: the smallest step of 1, 2 or 5 x 10^k
/// that needs at most 8 ticks.
fn axis(top: f64) -> (f64, f64) {
    let top = top.max(1.0);
    let mag = 10f64.powf((top / 8.0).log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| (top / s).ceil() <= 8.0)
        .unwrap_or(10.0 * mag);
    ((top / step).ceil() * step, step)
}

/// One group of bars per protocol, one bar per mode: `values[g][m]` holds every repetition.
pub fn bars(
    title: &str,
    unit: &str,
    groups: &[&str],
    modes: &[&str],
    values: &[Vec<Vec<f64>>],
) -> String {
    let (max, step) = axis(
        values
            .iter()
            .flatten()
            .flatten()
            .copied()
            .fold(0.0, f64::max),
    );
    let plot = BarPlot {
        max,
        left: 70.0,
        bottom: H - 40.0,
        top: 40.0,
        group_w: (W - 70.0 - 20.0) / groups.len().max(1) as f64,
        bar_w: (W - 70.0 - 20.0) / groups.len().max(1) as f64 * 0.8 / modes.len().max(1) as f64,
    };
    // The legend: three entries a row, a row of 16 px below the plot for each.
    let per_row = modes.len().clamp(1, 3);
    let rows = modes.len().div_ceil(per_row).max(1);
    let mut o = open_svg(H + 16.0 * (rows - 1) as f64, title);
    plot.y_axis(&mut o, step, unit);
    for (g, name) in groups.iter().enumerate() {
        plot.group(
            &mut o,
            g,
            name,
            modes,
            values.get(g).map_or(&[][..], |v| &v[..]),
            unit,
        );
    }
    let legend_w = (W - plot.left - 20.0) / per_row as f64;
    for (m, mode) in modes.iter().enumerate() {
        let x = plot.left + 10.0 + legend_w * (m % per_row) as f64;
        let y = H - 14.0 + 16.0 * (m / per_row) as f64;
        let _ = write!(
            o,
            r#"<rect x="{x:.1}" y="{y}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{}">{}</text>"#,
            COLORS[m % COLORS.len()],
            x + 14.0,
            y + 9.0,
            esc(mode)
        );
    }
    o.push_str("</svg>\n");
    o
}

/// An SVG of width W and `height`, white, with `title` on top; the caller closes it.
fn open_svg(height: f64, title: &str) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/><text x="{}" y="20" text-anchor="middle" font-size="14">{}</text>"#,
        W / 2.0,
        esc(title)
    )
}

/// Where a bar chart's plot sits and how wide its groups and bars are.
struct BarPlot {
    max: f64,
    left: f64,
    bottom: f64,
    top: f64,
    group_w: f64,
    bar_w: f64,
}

impl BarPlot {
    fn plot_h(&self) -> f64 {
        self.bottom - self.top
    }

    /// The grid lines with their values, and the unit along the axis.
    fn y_axis(&self, o: &mut String, step: f64, unit: &str) {
        let (left, bottom, plot_h, max) = (self.left, self.bottom, self.plot_h(), self.max);
        let ticks = (max / step).round() as usize;
        for k in 0..=ticks {
            let v = step * k as f64;
            let y = bottom - plot_h * v / max;
            let _ = write!(
                o,
                r##"<line x1="{left}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#e5e7eb"/><text x="{}" y="{:.1}" text-anchor="end">{v:.0}</text>"##,
                W - 20.0,
                left - 6.0,
                y + 4.0
            );
        }
        let _ = write!(
            o,
            r#"<text x="14" y="{}" transform="rotate(-90 14 {})" text-anchor="middle">{}</text>"#,
            self.top + plot_h / 2.0,
            self.top + plot_h / 2.0,
            esc(unit)
        );
    }

    /// Group `g`: a bar per mode at its median, a dot per repetition, the group's name.
    fn group(
        &self,
        o: &mut String,
        g: usize,
        name: &str,
        modes: &[&str],
        per_mode: &[Vec<f64>],
        unit: &str,
    ) {
        let (bottom, plot_h, max, bar_w) = (self.bottom, self.plot_h(), self.max, self.bar_w);
        let gx = self.left + self.group_w * g as f64 + self.group_w * 0.1;
        for (m, mode) in modes.iter().enumerate() {
            let reps = per_mode.get(m).map_or(&[][..], |v| &v[..]);
            if reps.is_empty() {
                continue;
            }
            let x = gx + bar_w * m as f64;
            let med = median(reps);
            let h = plot_h * med / max;
            let _ = write!(
                o,
                r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="{}"><title>{} {}: median {med:.0} {}</title></rect>"#,
                bottom - h,
                bar_w * 0.9,
                COLORS[m % COLORS.len()],
                esc(name),
                esc(mode),
                esc(unit)
            );
            for r in reps {
                let _ = write!(
                    o,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="black"/>"#,
                    x + bar_w * 0.45,
                    bottom - plot_h * r / max
                );
            }
        }
        let _ = write!(
            o,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            gx + self.group_w * 0.4,
            bottom + 16.0,
            esc(name)
        );
    }
}

/// Rows are CPUs, columns are samples over time; a cell's shade is its receive work as a
/// share of the CPU (`cells[t][cpu]` in ms per second, 1000 = the whole CPU).
/// A row's label carries the CPU's kind (P or E) where `kinds` has it.
pub fn heatmap(title: &str, cells: &[Vec<f64>], kinds: &BTreeMap<u32, CoreKind>) -> String {
    let cpus = cells.iter().map(Vec::len).max().unwrap_or(0);
    let left = 60.0;
    // Sizes in half pixels, so the coordinates written (one decimal) add up exactly and
    // neighbouring cells neither overlap nor leave gaps.
    let half = |v: f64| (v * 2.0).floor() / 2.0;
    let cell_w = half(((W - left - 20.0) / cells.len().max(1) as f64).min(40.0)).max(0.5);
    // Rows shrink to 4 px (192 CPUs: 768 px) and the chart grows past that; a CPU label goes
    // on every `step`-th row, so labels stay 14 px apart and never overlap.
    let cell_h = half(440.0 / cpus.max(1) as f64).clamp(4.0, 20.0);
    let step = label_step(cell_h);
    let height = 60.0 + cell_h * cpus as f64 + 70.0;
    let mut o = open_svg(height, title);
    for cpu in 0..cpus {
        let y = 40.0 + cell_h * cpu as f64;
        if cpu % step == 0 {
            let _ = write!(
                o,
                r#"<text x="{}" y="{:.1}" text-anchor="end">CPU {cpu}{}</text>"#,
                left - 6.0,
                y + (cell_h * 0.7).max(4.0),
                kinds
                    .get(&(cpu as u32))
                    .map_or(String::new(), |k| format!(" {}", k.letter()))
            );
        }
        for (t, col) in cells.iter().enumerate() {
            let v = col.get(cpu).copied().unwrap_or(0.0);
            let share = (v / 1000.0).clamp(0.0, 1.0);
            let _ = write!(
                o,
                r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>CPU {cpu}, sample {t}: {v:.0} ms/s</title></rect>"#,
                left + cell_w * t as f64,
                cell_w,
                cell_h,
                shade(share)
            );
        }
    }
    let y = 40.0 + cell_h * cpus as f64 + 22.0;
    let _ = write!(
        o,
        r#"<text x="{left}" y="{y:.1}">time: one column per sample, the protocols one after the other</text><text x="{left}" y="{:.1}">shade: receive work (NET_RX softirq + receive kthreads) as a share of the CPU</text>"#,
        y + 16.0
    );
    // The scale: 0 % to 100 % in ten steps.
    for k in 0..=10 {
        let _ = write!(
            o,
            r#"<rect x="{:.1}" y="{:.1}" width="16" height="10" fill="{}"/>"#,
            left + 16.0 * k as f64,
            y + 26.0,
            shade(k as f64 / 10.0)
        );
    }
    let _ = write!(
        o,
        r#"<text x="{:.1}" y="{:.1}">0 %</text><text x="{:.1}" y="{:.1}">100 %</text></svg>"#,
        left - 30.0,
        y + 35.0,
        left + 16.0 * 11.0 + 6.0,
        y + 35.0
    );
    o.push('\n');
    o
}

/// One line of a line chart: its name, its (x, y) points, and one measured point.
pub struct Series {
    pub name: String,
    pub line: Vec<(f64, f64)>,
    pub measured: (f64, f64),
}

/// One line per series over x (CPUs), y (req/s) from 0, and each series' measured point as a
/// dot.
pub fn lines(title: &str, x_unit: &str, y_unit: &str, series: &[Series]) -> String {
    let all = series
        .iter()
        .flat_map(|s| s.line.iter().chain(std::iter::once(&s.measured)));
    let (x_max, y_max) = all.fold((1.0f64, 1.0f64), |(x, y), &(a, b)| (x.max(a), y.max(b)));
    let (y_top, y_step) = axis(y_max);
    let (x_top, x_step) = axis(x_max);
    let (left, top, bottom, right) = (80.0, 40.0, H - 50.0, W - 20.0);
    let per_row = 2;
    let rows = series.len().div_ceil(per_row).max(1);
    let height = H + 16.0 * rows as f64;
    let x = |v: f64| left + (right - left) * v / x_top;
    let y = |v: f64| bottom - (bottom - top) * v / y_top;
    let mut o = open_svg(height, title);
    line_axes(
        &mut o,
        &x,
        &y,
        (x_top, x_step, x_unit),
        (y_top, y_step, y_unit),
        (left, top, bottom, right),
    );
    for (
        i,
        Series {
            name,
            line,
            measured: point,
        },
    ) in series.iter().enumerate()
    {
        let color = COLORS[i % COLORS.len()];
        let pts: Vec<String> = line
            .iter()
            .map(|&(a, b)| format!("{:.1},{:.1}", x(a), y(b)))
            .collect();
        let _ = write!(
            o,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"><title>{}: predicted</title></polyline><circle cx="{:.1}" cy="{:.1}" r="4" fill="{color}"><title>{}: measured {:.0} {} on {:.0} {}</title></circle>"#,
            pts.join(" "),
            esc(name),
            x(point.0),
            y(point.1),
            esc(name),
            point.1,
            esc(y_unit),
            point.0,
            esc(x_unit)
        );
        let (lx, ly) = (
            left + (i % per_row) as f64 * 280.0,
            H - 4.0 + 16.0 * (i / per_row) as f64,
        );
        let _ = write!(
            o,
            r#"<rect x="{lx:.1}" y="{:.1}" width="10" height="10" fill="{color}"/><text x="{:.1}" y="{ly:.1}">{}</text>"#,
            ly - 9.0,
            lx + 14.0,
            esc(name)
        );
    }
    o.push_str("</svg>\n");
    o
}

/// A line chart's grid, tick values and axis names; `x` and `y` map values to pixels.
fn line_axes(
    o: &mut String,
    x: &dyn Fn(f64) -> f64,
    y: &dyn Fn(f64) -> f64,
    (x_top, x_step, x_unit): (f64, f64, &str),
    (y_top, y_step, y_unit): (f64, f64, &str),
    (left, top, bottom, right): (f64, f64, f64, f64),
) {
    for k in 0..=((y_top / y_step).round() as usize) {
        let v = y_step * k as f64;
        let _ = write!(
            o,
            r##"<line x1="{left}" x2="{right}" y1="{0:.1}" y2="{0:.1}" stroke="#e5e7eb"/><text x="{1}" y="{2:.1}" text-anchor="end">{3}</text>"##,
            y(v),
            left - 6.0,
            y(v) + 4.0,
            if v >= 1000.0 {
                format!("{:.0}k", v / 1000.0)
            } else {
                format!("{v:.0}")
            }
        );
    }
    for k in 0..=((x_top / x_step).round() as usize) {
        let v = x_step * k as f64;
        let _ = write!(
            o,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{v:.0}</text>"#,
            x(v),
            bottom + 16.0
        );
    }
    let _ = write!(
        o,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text x="14" y="{:.1}" transform="rotate(-90 14 {:.1})" text-anchor="middle">{}</text>"#,
        (left + right) / 2.0,
        bottom + 32.0,
        esc(x_unit),
        (top + bottom) / 2.0,
        (top + bottom) / 2.0,
        esc(y_unit)
    );
}

/// Every how many rows of `cell_h` px a 12 px label fits with room to spare (14 px apart).
fn label_step(cell_h: f64) -> usize {
    (14.0 / cell_h).ceil().max(1.0) as usize
}

/// The colours of a CPU's time parts, in `breakdown::PARTS` order.
const PART_COLORS: [&str; 8] = [
    "#2563eb", "#9ca3af", "#dc2626", "#f97316", "#facc15", "#a855f7", "#4b5563", "#f3f4f6",
];

/// One horizontal bar per row (a CPU under one protocol), split into where its time went
/// (ms per second, the bar's full width = 1000).
pub fn stacked(title: &str, rows: &[(String, TimeSplit)]) -> String {
    // Room for the longest row label at about 7 px a character.
    let longest = rows
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0);
    let (left, top, bar_h) = ((7.0 * longest as f64 + 12.0).max(120.0), 40.0, 18.0);
    let plot_w = W - left - 20.0;
    let height = top + (bar_h + 6.0) * rows.len() as f64 + 60.0;
    let mut o = open_svg(height, title);
    for (i, (name, t)) in rows.iter().enumerate() {
        let y = top + (bar_h + 6.0) * i as f64;
        let _ = write!(
            o,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            left - 6.0,
            y + bar_h * 0.75,
            esc(name)
        );
        let total = t.total().max(1e-9);
        let mut x = left;
        for ((part, color), v) in PARTS.iter().zip(PART_COLORS).zip(t.parts()) {
            let w = plot_w * v / total;
            if w <= 0.0 {
                continue;
            }
            let _ = write!(
                o,
                r##"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{bar_h}" fill="{color}" stroke="#ffffff" stroke-width="0.5"><title>{}: {part} {v:.0} ms/s</title></rect>"##,
                esc(name)
            );
            x += w;
        }
    }
    let y = top + (bar_h + 6.0) * rows.len() as f64 + 16.0;
    for (k, (part, color)) in PARTS.iter().zip(PART_COLORS).enumerate() {
        let x = left + (k % 4) as f64 * 125.0;
        let yy = y + (k / 4) as f64 * 16.0;
        let _ = write!(
            o,
            r##"<rect x="{x}" y="{yy:.1}" width="10" height="10" fill="{color}" stroke="#9ca3af"/><text x="{}" y="{:.1}">{part}</text>"##,
            x + 14.0,
            yy + 9.0
        );
    }
    o.push_str("</svg>\n");
    o
}

/// White through yellow and red to dark red.
fn shade(share: f64) -> String {
    let r = 255.0 - 115.0 * (share - 0.5).max(0.0) * 2.0;
    let g = 255.0 * (1.0 - share).powf(0.8);
    let b = 255.0 * (1.0 - share * 2.0).max(0.0);
    format!("rgb({:.0},{:.0},{:.0})", r, g, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_show_medians_and_every_repetition() {
        let v = vec![
            vec![vec![100.0, 300.0, 200.0], vec![50.0]],
            vec![vec![400.0], vec![]],
        ];
        let s = bars(
            "req/s",
            "req/s",
            &["HTTP", "ZAP"],
            &["untuned", "cpumap"],
            &v,
        );
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
        assert!(s.contains("HTTP untuned: median 200 req/s"), "{s}");
        assert!(s.contains("ZAP untuned: median 400 req/s"));
        assert_eq!(s.matches("<circle").count(), 5, "one dot per repetition");
        assert!(!s.contains("ZAP cpumap"), "no bar without figures");
    }

    #[test]
    fn heatmap_has_a_cell_per_cpu_and_sample() {
        let s = heatmap(
            "cpumap <receive>",
            &[vec![0.0, 1000.0], vec![500.0, 250.0]],
            &BTreeMap::new(),
        );
        assert_eq!(
            s.matches("<title>CPU").count(),
            4,
            "a cell per CPU and sample"
        );
        assert!(s.contains("CPU 1, sample 0: 1000 ms/s"));
        assert!(s.contains("cpumap &lt;receive&gt;"), "escaped");
        assert_eq!(shade(0.0), "rgb(255,255,255)");
        assert_ne!(shade(1.0), shade(0.5));
    }

    /// The numbers of attribute `name` on the elements that start with `tag`.
    fn attr(svg: &str, tag: &str, name: &str) -> Vec<f64> {
        svg.split(tag)
            .skip(1)
            .filter_map(|e| {
                let e = &e[..e.find('>')?];
                let v = e.split(&format!(" {name}=\"")).nth(1)?;
                v[..v.find('"')?].parse().ok()
            })
            .collect()
    }

    #[test]
    fn heatmaps_at_20_64_and_192_cpus_keep_every_cpu_and_labels_apart() {
        for cpus in [20usize, 64, 192] {
            let cells: Vec<Vec<f64>> = (0..30)
                .map(|t| (0..cpus).map(|c| ((c * 7 + t) % 1000) as f64).collect())
                .collect();
            let kinds: BTreeMap<u32, CoreKind> = (0..cpus as u32)
                .map(|c| {
                    (
                        c,
                        if c % 2 == 0 {
                            CoreKind::Performance
                        } else {
                            CoreKind::Efficiency
                        },
                    )
                })
                .collect();
            let svg = heatmap("many", &cells, &kinds);
            // Every CPU has a cell per sample.
            for c in 0..cpus {
                assert!(
                    svg.contains(&format!("<title>CPU {c}, sample 29:")),
                    "CPU {c} of {cpus}"
                );
            }
            assert_eq!(svg.matches("<title>CPU").count(), cpus * 30);
            // Labels: CPU 0 labelled, each 14 px or more below the one before, all inside.
            let height = attr(&svg, "<svg", "height")[0];
            let labels: Vec<f64> = svg
                .split("<text")
                .skip(1)
                .filter(|t| t.contains(">CPU "))
                .filter_map(|t| {
                    let v = t.split(" y=\"").nth(1)?;
                    v[..v.find('"')?].parse().ok()
                })
                .collect();
            assert!(svg.contains(">CPU 0 P</text>"), "labelled with the kind");
            assert!(labels.len() >= 10, "{cpus} CPUs: {} labels", labels.len());
            for w in labels.windows(2) {
                assert!(w[1] - w[0] >= 14.0, "{cpus} CPUs: labels at {w:?} overlap");
            }
            // Rows neither overlap nor leave the picture.
            // The first column's cells (sample 0), one per CPU.
            let first: String = svg
                .split("<rect")
                .filter(|r| r.contains(", sample 0:"))
                .map(|r| format!("<rect{r}"))
                .collect();
            let ys = attr(&first, "<rect", "y");
            let hs = attr(&first, "<rect", "height");
            assert_eq!(ys.len(), cpus);
            for (i, w) in ys.windows(2).enumerate() {
                assert!(
                    w[1] >= w[0] + hs[i] - 0.05,
                    "{cpus} CPUs: rows {i} and {} overlap",
                    i + 1
                );
            }
            assert!(
                ys[cpus - 1] + hs[cpus - 1] < height - 60.0,
                "{cpus} CPUs: cut at the bottom"
            );
        }
    }

    #[test]
    fn lines_draw_each_series_and_its_measured_point() {
        let series: Vec<Series> = (0..3)
            .map(|i| Series {
                name: format!("arm {i}"),
                line: (1..=20)
                    .map(|n| (n as f64, 1000.0 * n as f64 * (i + 1) as f64))
                    .collect(),
                measured: (2.0, 2100.0),
            })
            .collect();
        let svg = lines("PREDICTION", "CPUs", "req/s", &series);
        assert_eq!(svg.matches("<polyline").count(), 3);
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains("arm 2: measured 2100 req/s on 2 CPUs"));
        // Every point inside the picture.
        for pts in svg.split("points=\"").skip(1) {
            for p in pts[..pts.find('"').unwrap()].split(' ') {
                let (x, y) = p.split_once(',').unwrap();
                let (x, y): (f64, f64) = (x.parse().unwrap(), y.parse().unwrap());
                assert!((0.0..=W).contains(&x) && (0.0..=H).contains(&y), "{p}");
            }
        }
    }

    #[test]
    fn stacked_bars_split_each_cpu() {
        let t = TimeSplit {
            server: 500.0,
            net_rx: 250.0,
            idle: 250.0,
            ..Default::default()
        };
        let s = stacked(
            "time",
            &[("CPU 0 http".into(), t), ("CPU 1 http".into(), t)],
        );
        assert_eq!(s.matches("CPU 0 http: ").count(), 3, "three non-zero parts");
        assert!(s.contains("CPU 1 http: NET_RX softirq 250 ms/s"), "{s}");
        assert!(s.ends_with("</svg>\n"));
    }

    #[test]
    fn axis_steps_are_round() {
        assert_eq!(axis(110_179.0), (120_000.0, 20_000.0));
        assert_eq!(axis(950.0), (1000.0, 200.0));
        assert_eq!(axis(0.0), (1.0, 0.2));
    }

    #[test]
    fn median_of_odd_even_and_none() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0]), 1.5);
        assert_eq!(median(&[]), 0.0);
    }
}
