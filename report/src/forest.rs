//! The answer as a picture: each arm's ratio to untuned with its interval, drawn against 1 on
//! a log axis (a forest plot), one per protocol, coloured by verdict. The report's first
//! screen shows it; [`crate::decide`] computes every figure in it.
use std::fmt::Write;

use rxsteer_records::{Proto, RunDoc};

use crate::{
    decide::{Judged, Verdict},
    svg::esc,
};

const W: f64 = 760.0;
const LEFT: f64 = 170.0;
const RIGHT: f64 = 250.0;
const ROW: f64 = 26.0;
const TOP: f64 = 44.0;

pub fn file(p: Proto) -> String {
    format!("forest-{}.svg", p.as_str())
}

fn colour(v: &Verdict) -> &'static str {
    match v {
        Verdict::Better => "#16a34a",
        Verdict::Worse => "#dc2626",
        Verdict::Equivalent => "#2563eb",
        Verdict::Undecided { .. } => "#6b7280",
    }
}

/// The plot of `judged` (arms without an interval are listed, undrawn).
pub fn svg(run: &RunDoc, proto: Proto, judged: &[Judged]) -> String {
    let drawn: Vec<(&Judged, f64, f64, f64)> = judged
        .iter()
        .filter_map(|j| {
            let e = j.estimate.as_ref()?;
            Some((j, e.ratio, e.lo, e.hi))
        })
        .collect();
    // A log axis spanning every interval and 1, padded, from at least 0.8 to 1.25.
    let lo = drawn.iter().map(|d| d.2).fold(0.8_f64, f64::min).max(0.05);
    let hi = drawn.iter().map(|d| d.3).fold(1.25_f64, f64::max).min(20.0);
    let (l0, l1) = (lo.ln() - 0.05, hi.ln() + 0.05);
    let plot_w = W - LEFT - RIGHT;
    let x = |r: f64| LEFT + (r.clamp(lo, hi).ln() - l0) / (l1 - l0) * plot_w;
    let h = TOP + ROW * judged.len().max(1) as f64 + 40.0;
    let mut o = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/><text x="{}" y="20" text-anchor="middle" font-size="14">{}</text>"#,
        W / 2.0,
        esc(&format!(
            "{}: each arm / untuned, {} interval (log axis)",
            proto.label(),
            crate::decide::confidence_said(run)
        ))
    );
    let bottom = h - 30.0;
    // Ticks at round ratios inside the axis; 1 drawn darker.
    for t in [
        0.25, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0,
    ] {
        if t < lo || t > hi {
            continue;
        }
        let tx = x(t);
        let stroke = if t == 1.0 { "#111827" } else { "#e5e7eb" };
        let _ = write!(
            o,
            r#"<line x1="{tx:.1}" x2="{tx:.1}" y1="{TOP}" y2="{bottom}" stroke="{stroke}"/><text x="{tx:.1}" y="{}" text-anchor="middle">{t}x</text>"#,
            bottom + 14.0
        );
    }
    // The band "no difference of 5 % or more".
    let (b0, b1) = (
        x(crate::decide::EQUIVALENT.0),
        x(crate::decide::EQUIVALENT.1),
    );
    let _ = write!(
        o,
        r##"<rect x="{b0:.1}" y="{TOP}" width="{:.1}" height="{:.1}" fill="#2563eb" fill-opacity="0.08"/>"##,
        b1 - b0,
        bottom - TOP
    );
    for (i, j) in judged.iter().enumerate() {
        let y = TOP + ROW * (i as f64 + 0.5);
        let _ = write!(
            o,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 8.0,
            y + 4.0,
            esc(&j.arm.label())
        );
        let c = colour(&j.verdict);
        let said = match &j.estimate {
            Some(e) if e.bounds > 0 => format!(
                "{:.2}x {} ({}/{} loader-bound)",
                e.ratio,
                short(&j.verdict),
                e.bounds,
                e.n
            ),
            Some(e) => format!("{:.2}x {}", e.ratio, short(&j.verdict)),
            None => "no interval".into(),
        };
        // An interval over loader-bound repetitions mixes bounds with figures: dashed.
        let dash = match &j.estimate {
            Some(e) if e.bounds > 0 => r#" stroke-dasharray="4 3""#,
            _ => "",
        };
        let _ = write!(
            o,
            r#"<text x="{}" y="{:.1}" fill="{c}">{}</text>"#,
            W - RIGHT + 8.0,
            y + 4.0,
            esc(&said)
        );
        if let Some((_, r, l, u)) = drawn.iter().find(|d| std::ptr::eq(d.0, j)) {
            let _ = write!(
                o,
                r#"<line x1="{:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{c}" stroke-width="2"{dash}/><rect x="{:.1}" y="{:.1}" width="8" height="8" fill="{c}"/>"#,
                x(*l),
                x(*u),
                x(*r) - 4.0,
                y - 4.0
            );
        }
    }
    o.push_str("</svg>\n");
    o
}

fn short(v: &Verdict) -> &'static str {
    match v {
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::Equivalent => "no difference",
        Verdict::Undecided { .. } => "undecided",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::Estimate;

    #[test]
    fn each_arm_is_a_row_with_its_interval_and_verdict() {
        let j = |arm: &str, r: f64, lo: f64, hi: f64, verdict| Judged {
            arm: arm.parse().unwrap(),
            reps: 7,
            estimate: Some(Estimate {
                ratio: r,
                lo,
                hi,
                n: 7,
                higher: 7,
                bounds: 0,
            }),
            verdict,
        };
        let s = svg(
            &RunDoc::default(),
            Proto::Http,
            &[
                j("rps", 1.24, 1.14, 1.35, Verdict::Better),
                j("cpumap-skb", 0.68, 0.57, 0.81, Verdict::Worse),
            ],
        );
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
        assert!(s.contains("HTTP/1.1: each arm / untuned, 95 % interval"));
        assert!(s.contains(">RPS/RFS/XPS<") && s.contains(">1.24x better<"));
        assert!(s.contains(">0.68x worse<") && s.contains(">1x<"));
        // Two interval lines, one per arm, in their verdict's colour.
        assert_eq!(s.matches("stroke-width=\"2\"").count(), 2);
        assert!(s.contains("stroke=\"#dc2626\""));
    }
}
