//! The live per-core view: heatmaps of CPUs x time (NET_RX softirq time, receive-kthread time,
//! packets) beside the current per-CPU numbers. It only draws what the sampler sends.
use anyhow::Result;
use ratatui::{
    crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers},
    layout::{Constraint, Layout, Rect},
    style::{Color, Style, Stylize},
    text::{Line, Span},
    widgets::{Block, Paragraph, Row, Table},
    Frame,
};
use std::{
    collections::VecDeque,
    sync::{
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
    time::Duration,
};

use rxsteer_records::{CpuSample, Sample, XdpMode};

/// Samples kept for the heatmaps (wider terminals show more of them).
const HISTORY: usize = 240;

/// One heatmap: a title and how to read a cell's value (0.0..=1.0) from a CPU sample.
struct Heatmap {
    title: &'static str,
    value: fn(&CpuSample, &Sample, f64) -> f64,
}

const HEATMAPS: [Heatmap; 3] = [
    Heatmap {
        title: "NET_RX softirq time (% of the CPU)",
        value: |c, s, _| c.net_rx_ns as f64 / (s.interval_s * 1e9),
    },
    Heatmap {
        title: "receive kthreads: cpumap + threaded NAPI (% of the CPU)",
        value: |c, s, _| (c.cpumap_kthread_ns + c.napi_kthread_ns) as f64 / (s.interval_s * 1e9),
    },
    Heatmap {
        title: "packets/s (relative to the busiest cell shown)",
        value: |c, s, max_pps| {
            if max_pps > 0.0 {
                c.packets as f64 / s.interval_s / max_pps
            } else {
                0.0
            }
        },
    },
];

/// Restores the terminal when dropped, whatever path leaves `run`.
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

pub fn run(
    rx: &mpsc::Receiver<Sample>,
    iface: &str,
    mode: XdpMode,
    count: Option<u64>,
    stop: &AtomicBool,
) -> Result<()> {
    // try_init also installs a panic hook that restores the terminal before the message; it
    // fails (instead of panicking) where there is no terminal to put in raw mode.
    let mut terminal = ratatui::try_init()
        .map_err(|e| anyhow::anyhow!("cannot start the live screen on this terminal: {e}"))?;
    let _guard = TerminalGuard;
    let mut history: VecDeque<Sample> = VecDeque::with_capacity(HISTORY);
    let mut seen = 0u64;
    while !stop.load(Ordering::SeqCst) && count.is_none_or(|c| seen < c) {
        while let Ok(s) = rx.try_recv() {
            if history.len() == HISTORY {
                history.pop_front();
            }
            history.push_back(s);
            seen += 1;
        }
        terminal.draw(|f| draw(f, &history, iface, mode))?;
        if event::poll(Duration::from_millis(100))? && is_quit(&event::read()?) {
            break;
        }
    }
    Ok(())
}

/// q, Esc or Ctrl-C (raw mode turns Ctrl-C into a key rather than a signal).
pub fn is_quit(e: &Event) -> bool {
    let Event::Key(k) = e else { return false };
    let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
    k.kind == KeyEventKind::Press && (ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Esc))
}

fn draw(f: &mut Frame, history: &VecDeque<Sample>, iface: &str, mode: XdpMode) {
    let [title, meaning, body] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(0),
    ])
    .areas(f.area());
    let errors = history.back().map_or(String::new(), |s| {
        format!(
            "  redirect errors {}  xdp exceptions {}",
            s.redirect_err, s.xdp_exceptions
        )
    });
    f.render_widget(
        Line::from(vec![
            Span::from(format!(" rxsteer top  {iface}  XDP {}", mode.long_name())).bold(),
            Span::from(errors).red(),
            Span::from("   q: quit").dim(),
        ]),
        title,
    );
    f.render_widget(Line::from(format!(" {}", mode.meaning())).dim(), meaning);
    let [maps, table] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(body);
    draw_heatmaps(f, maps, history);
    draw_table(f, table, history.back());
}

/// The three heatmaps (NET_RX time, receive-kthread time, packets), stacked in `area`.
pub fn draw_heatmaps(f: &mut Frame, area: Rect, history: &VecDeque<Sample>) {
    let areas = Layout::vertical([Constraint::Ratio(1, 3); 3]).split(area);
    let max_pps = history
        .iter()
        .flat_map(|s| s.cpus.iter().map(move |c| c.packets as f64 / s.interval_s))
        .fold(0.0, f64::max);
    for (map, area) in HEATMAPS.iter().zip(areas.iter()) {
        draw_heatmap(f, *area, map, history, max_pps);
    }
}

fn draw_heatmap(
    f: &mut Frame,
    area: Rect,
    map: &Heatmap,
    history: &VecDeque<Sample>,
    max_pps: f64,
) {
    let block = Block::bordered().title(map.title);
    let inner = block.inner(area);
    let label = 7usize;
    let width = (inner.width as usize).saturating_sub(label);
    let shown: Vec<&Sample> = history
        .iter()
        .skip(history.len().saturating_sub(width))
        .collect();
    let cpus: Vec<u32> = history
        .back()
        .map_or(vec![], |s| s.cpus.iter().map(|c| c.cpu).collect());
    let lines: Vec<Line> = cpus
        .iter()
        .enumerate()
        .map(|(row, cpu)| {
            let mut spans = vec![Span::from(format!("cpu{cpu:<3} "))];
            spans.extend(shown.iter().map(|s| {
                let v = s.cpus.get(row).map_or(0.0, |c| (map.value)(c, s, max_pps));
                Span::styled(" ", Style::default().bg(heat(v)))
            }));
            Line::from(spans)
        })
        .collect();
    f.render_widget(Paragraph::new(lines).block(block), area);
}

/// Black through red to yellow as `v` goes from 0 to 1.
fn heat(v: f64) -> Color {
    let v = v.clamp(0.0, 1.0);
    if v == 0.0 {
        return Color::Rgb(20, 20, 20);
    }
    let r = (60.0 + 195.0 * (v * 2.0).min(1.0)) as u8;
    let g = (220.0 * ((v - 0.5) * 2.0).max(0.0)) as u8;
    Color::Rgb(r, g, 30)
}

fn draw_table(f: &mut Frame, area: Rect, last: Option<&Sample>) {
    // xdp/s: where the driver received (XDP); stack/s: where the stack ran (tc ingress);
    // tx/s: where packets left (tc egress); busy%: /proc/stat, all of the CPU's work.
    let header = Row::new([
        "cpu", "xdp/s", "stack/s", "tx/s", "NET_RX%", "kthr%", "busy%", "drop", "squeeze",
    ])
    .bold();
    let rows: Vec<Row> = last.map_or(vec![], |s| {
        let pct = |ns: u64| format!("{:.1}", ns as f64 / (s.interval_s * 1e7));
        let rate = |n: u64| format!("{:.0}", n as f64 / s.interval_s);
        s.cpus
            .iter()
            .map(|c| {
                let busy = c.time.busy() as f64 / c.time.total().max(1) as f64 * 100.0;
                Row::new([
                    c.cpu.to_string(),
                    rate(c.packets),
                    rate(c.stack_packets),
                    rate(c.tx_packets),
                    pct(c.net_rx_ns),
                    pct(c.cpumap_kthread_ns + c.napi_kthread_ns),
                    format!("{busy:.0}"),
                    c.softnet.dropped.to_string(),
                    c.softnet.time_squeeze.to_string(),
                ])
            })
            .collect()
    });
    let widths = [
        Constraint::Length(4),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(7),
        Constraint::Length(6),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(7),
    ];
    f.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(Block::bordered().title("now, per CPU")),
        area,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::{backend::TestBackend, Terminal};

    #[test]
    fn draws_every_cpu_and_the_numbers() {
        let mut s = Sample {
            interval_s: 1.0,
            ..Default::default()
        };
        for cpu in 0..2 {
            s.cpus.push(CpuSample {
                cpu,
                packets: 1000 * (cpu as u64 + 1),
                stack_packets: 7000 + cpu as u64,
                net_rx_ns: 250_000_000,
                ..Default::default()
            });
        }
        let history = VecDeque::from([s.clone(), s]);
        let mut t = Terminal::new(TestBackend::new(140, 30)).unwrap();
        t.draw(|f| draw(f, &history, "veth0", XdpMode::Skb))
            .unwrap();
        let text: String = t
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(text.contains("rxsteer top  veth0  XDP skb (generic)"));
        assert!(
            text.contains("after the RX core has built and GRO'd"),
            "the mode's meaning"
        );
        assert!(text.contains("7001"), "tc ingress packets/s of cpu1");
        assert!(text.contains("cpu0") && text.contains("cpu1"));
        assert!(text.contains("2000"), "pkt/s of cpu1");
        assert!(
            text.contains("25.0"),
            "NET_RX% of a quarter second in one second"
        );
    }

    #[test]
    fn heat_scale() {
        assert_eq!(heat(0.0), Color::Rgb(20, 20, 20));
        assert_eq!(heat(2.0), heat(1.0));
        assert_ne!(heat(0.3), heat(0.9));
    }
}
