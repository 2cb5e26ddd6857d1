//! What the comparison shows while it runs. On a terminal: one ratatui screen with the per-core
//! heatmaps of `rxsteer top` next to the current load's req/s and p99 and the results so far,
//! labelled with repetition, mode and protocol (q stops the run; the host is restored).
//! Otherwise (`--no-tui`, CI, logs): one line per live interval. It only draws.
use anyhow::Result;
use ratatui::{
    crossterm::event,
    layout::{Constraint, Layout},
    style::Stylize,
    text::{Line, Span},
    widgets::{Block, Paragraph, Row, Sparkline, Table},
    DefaultTerminal, Frame,
};
use std::{collections::VecDeque, time::Duration};

use crate::view;
use rxsteer_records::{LiveLine, Sample, XdpMode};

const HISTORY: usize = 240;

/// One finished load, as the results table shows it.
pub struct Done {
    pub label: String,
    pub req_per_s: f64,
    pub p99_us: u64,
    /// To untuned, same repetition and protocol.
    pub ratio: Option<f64>,
}

pub struct Screen {
    terminal: Option<DefaultTerminal>,
    shown: Shown,
}

/// What the screen shows, apart from the terminal it is drawn on.
#[derive(Default)]
struct Shown {
    /// "rep 1/3  cpumap  zap" and what the run is doing.
    label: String,
    history: VecDeque<Sample>,
    live: Vec<LiveLine>,
    done: Vec<Done>,
    /// Each arm's interval at the latest look (`--reps auto`), narrowing as repetitions come.
    intervals: Vec<String>,
    caveat: Option<String>,
    /// What the XDP mode that ran means for cpumap (one line), once attach has said.
    meaning: Option<&'static str>,
    kinds: view::CpuKinds,
}

impl Screen {
    /// `tui` draws the screen (and owns the terminal until dropped); otherwise lines.
    pub fn new(tui: bool, caveat: Option<String>) -> Self {
        Self {
            // No terminal after all (try_init fails rather than panics): lines instead.
            terminal: tui.then(ratatui::try_init).and_then(|t| {
                t.map_err(|e| {
                    eprintln!("rxsteer compare: no live screen ({e}): one line per interval")
                })
                .ok()
            }),
            shown: Shown {
                history: VecDeque::with_capacity(HISTORY),
                caveat,
                kinds: view::CpuKinds::of_machine(),
                ..Default::default()
            },
        }
    }

    /// A new load starts.
    pub fn begin(&mut self, label: String) {
        self.shown.label = label;
        self.shown.live.clear();
    }

    /// Something the watcher should know about the current load (a load that failed): said
    /// once as a line, or on the label line of the screen until the next load begins.
    pub fn note(&mut self, line: String) {
        if self.terminal.is_none() {
            eprintln!("rxsteer compare: {line}");
        } else {
            self.shown.label = format!("{}  ({line})", self.shown.label);
        }
    }

    pub fn on_sample(&mut self, s: &Sample) {
        if self.shown.history.len() == HISTORY {
            self.shown.history.pop_front();
        }
        self.shown.history.push_back(s.clone());
    }

    pub fn on_live(&mut self, l: &LiveLine) {
        if self.terminal.is_none() {
            // Every CPU up to 16; past that the busiest 16 by name, and a count of the rest.
            let recv: Vec<String> = self.shown.history.back().map_or(vec![], |s| {
                let ms: Vec<f64> = s
                    .cpus
                    .iter()
                    .map(|c| c.receive_ns() as f64 / 1e6 / s.interval_s)
                    .collect();
                if ms.len() <= 16 {
                    return ms.iter().map(|v| format!("{v:.0}")).collect();
                }
                let mut out: Vec<String> = view::busiest(&ms, 16)
                    .into_iter()
                    .map(|i| format!("cpu{}:{:.0}", s.cpus[i].cpu, ms[i]))
                    .collect();
                out.push(format!("+{} quieter", ms.len() - 16));
                out
            });
            let cost = self
                .shown
                .history
                .back()
                .and_then(Sample::bpf_cost)
                .map_or(String::new(), |c| format!("  {}", c.line()));
            eprintln!(
                "{:<24} {:>5.1}s {:<7} {:>9.0} req/s  p99 {:>6} us  errors {}  receive ms/s per CPU [{}]{cost}",
                self.shown.label,
                l.t_s,
                l.phase,
                l.req_per_s,
                l.p99_us,
                l.errors,
                recv.join(" ")
            );
        }
        self.shown.live.push(*l);
    }

    /// The XDP mode attach reported running (the label carries what was asked), and what it
    /// means: on the screen's second line, or said once per change without one.
    pub fn on_attached(&mut self, xdp_mode: XdpMode) {
        if self.shown.label.contains(" ran ") {
            return;
        }
        self.shown.label.push_str(&format!(" ran {xdp_mode}"));
        let meaning = xdp_mode.meaning();
        if self.terminal.is_none() && self.shown.meaning != Some(meaning) {
            eprintln!("rxsteer compare: XDP {meaning}");
        }
        self.shown.meaning = Some(meaning);
    }

    pub fn on_done(&mut self, d: Done) {
        self.shown.done.push(d);
    }

    /// Each arm's interval and verdict after a repetition: lines without a terminal, a
    /// panel on the screen.
    pub fn on_look(&mut self, lines: Vec<String>) {
        if self.terminal.is_none() {
            for l in &lines {
                eprintln!("rxsteer compare: {l}");
            }
        }
        self.shown.intervals = lines;
    }

    /// Draws (on a terminal) and reads keys; true when the user asked to stop.
    pub fn tick(&mut self) -> Result<bool> {
        let Some(t) = self.terminal.as_mut() else {
            return Ok(false);
        };
        let shown = &self.shown;
        if let Err(e) = t.draw(|f| draw(f, shown)) {
            if view::lost_terminal(&e) {
                return Ok(true);
            }
            return Err(e.into());
        }
        // Keys only when bytes wait (see view::wait_input); a terminal gone for good (window
        // closed, SSH dropped) stops the run as q does: everything is restored on the way out.
        loop {
            match view::wait_input(Duration::ZERO) {
                view::Input::Gone => {
                    view::forget_terminal();
                    return Ok(true);
                }
                view::Input::Ready if event::poll(Duration::ZERO)? => {
                    if view::is_quit(&event::read()?) {
                        return Ok(true);
                    }
                }
                _ => return Ok(false),
            }
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        if self.terminal.take().is_some() {
            ratatui::restore();
        }
    }
}

fn draw(f: &mut Frame, shown: &Shown) {
    let Shown {
        label,
        history,
        live,
        done,
        intervals,
        caveat,
        meaning,
        kinds,
    } = shown;
    let (meaning, caveat) = (*meaning, caveat.as_deref());
    let [title, mode, note, body] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(u16::from(meaning.is_some())),
        Constraint::Length(u16::from(caveat.is_some())),
        Constraint::Min(0),
    ])
    .areas(f.area());
    if let Some(m) = meaning {
        f.render_widget(Line::from(format!(" XDP {m}")).dim(), mode);
    }
    // What watching this arm costs, from the kernel's own statistics.
    let cost = history
        .back()
        .and_then(Sample::bpf_cost)
        .map_or(String::new(), |c| format!("   {}", c.line()));
    f.render_widget(
        Line::from(vec![
            Span::from(format!(" rxsteer compare  {label}")).bold(),
            Span::from(cost).dim(),
            Span::from("   q: stop and restore").dim(),
        ]),
        title,
    );
    if let Some(c) = caveat {
        f.render_widget(Line::from(format!(" note: {c}")).yellow(), note);
    }
    let [maps, right] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(body);
    view::draw_heatmaps(f, maps, history, kinds);
    let [rps, p99, looks, table] = Layout::vertical([
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(if intervals.is_empty() {
            0
        } else {
            intervals.len() as u16 + 2
        }),
        Constraint::Min(0),
    ])
    .areas(right);
    draw_live(f, live, rps, p99);
    if !intervals.is_empty() {
        f.render_widget(
            Paragraph::new(
                intervals
                    .iter()
                    .map(|l| Line::from(l.as_str()))
                    .collect::<Vec<_>>(),
            )
            .block(Block::bordered().title("each arm against untuned: its interval and verdict")),
            looks,
        );
    }
    draw_done(f, done, table);
    if live.is_empty() && done.is_empty() {
        f.render_widget(Paragraph::new(" starting...").dim(), table);
    }
}

/// This load's req/s and p99, as they come in.
fn draw_live(
    f: &mut Frame,
    live: &[LiveLine],
    rps: ratatui::layout::Rect,
    p99: ratatui::layout::Rect,
) {
    let last = live.last().copied().unwrap_or_default();
    let rps_points: Vec<u64> = live.iter().map(|l| l.req_per_s as u64).collect();
    let p99_points: Vec<u64> = live.iter().map(|l| l.p99_us).collect();
    f.render_widget(
        Sparkline::default()
            .block(Block::bordered().title(format!(
                "req/s now {:.0} ({}, errors {})",
                last.req_per_s,
                if live.is_empty() {
                    "-"
                } else {
                    last.phase.as_str()
                },
                last.errors
            )))
            .data(&rps_points),
        rps,
    );
    f.render_widget(
        Sparkline::default()
            .block(Block::bordered().title(format!("p99 now {} us", last.p99_us)))
            .data(&p99_points),
        p99,
    );
}

/// Every load done so far, the newest first.
fn draw_done(f: &mut Frame, done: &[Done], table: ratatui::layout::Rect) {
    let rows = done.iter().rev().map(|d| {
        Row::new([
            d.label.clone(),
            format!("{:.0}", d.req_per_s),
            d.p99_us.to_string(),
            d.ratio.map_or("-".into(), |r| format!("{r:.2}x")),
        ])
    });
    f.render_widget(
        Table::new(
            rows,
            [
                Constraint::Min(20),
                Constraint::Length(9),
                Constraint::Length(8),
                Constraint::Length(11),
            ],
        )
        .header(Row::new(["load", "req/s", "p99 us", "vs untuned"]).bold())
        .block(Block::bordered().title("results so far")),
        table,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::{backend::TestBackend, Terminal};
    use rxsteer_dataplane::sampler::CpuSample;

    #[test]
    fn heatmap_sits_beside_throughput_p99_and_results() {
        let mut s = Sample {
            interval_s: 1.0,
            ..Default::default()
        };
        for cpu in 0..2 {
            s.cpus.push(CpuSample {
                cpu,
                net_rx_ns: 100_000_000,
                ..Default::default()
            });
        }
        // An arm at the default level: NET_RX's runs were timed, its waits not.
        s.cpus[1].net_rx_run_log2 =
            rxsteer_records::log2::Log2Ns([vec![0; 11], vec![100]].concat());
        let history = VecDeque::from([s]);
        let live = [LiveLine {
            phase: rxsteer_records::Phase::Measure,
            req_per_s: 43210.0,
            p99_us: 777,
            ..Default::default()
        }];
        let done = [Done {
            label: "rep 0 untuned http".into(),
            req_per_s: 50000.0,
            p99_us: 650,
            ratio: Some(1.0),
        }];
        let mut t = Terminal::new(TestBackend::new(160, 40)).unwrap();
        let shown = Shown {
            label: "rep 1/3  cpumap  zap".into(),
            meaning: Some(XdpMode::Skb.meaning()),
            history,
            live: live.to_vec(),
            done: done.into(),
            intervals: vec![
                "after 5: HTTP/1.1 RPS/RFS/XPS 1.04x (0.91-1.19, 3 of 5 higher): undecided".into(),
            ],
            caveat: Some("2 CPUs".into()),
            kinds: view::CpuKinds::default(),
        };
        t.draw(|f| draw(f, &shown)).unwrap();
        let text: String = t
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        for want in [
            "rep 1/3  cpumap  zap",
            "NET_RX softirq, % of the CPU",
            "cpu1",
            "req/s now 43210 (measure",
            "p99 now 777 us",
            "rep 0 untuned http",
            "1.00x",
            "after 5: HTTP/1.1 RPS/RFS/XPS 1.04x (0.91-1.19",
            "note: 2 CPUs",
            "p99 on cpu1: run < 5 us, wait not timed",
            "XDP skb mode: XDP runs after the RX core has built each packet's skb",
        ] {
            assert!(text.contains(want), "{want:?} missing");
        }
    }

    #[test]
    fn at_192_cpus_the_busiest_rows_show_and_the_rest_are_counted() {
        let mut s = Sample {
            interval_s: 1.0,
            ..Default::default()
        };
        for cpu in 0..192 {
            s.cpus.push(CpuSample {
                cpu,
                net_rx_ns: if cpu == 150 { 900_000_000 } else { 0 },
                ..Default::default()
            });
        }
        let history = VecDeque::from([s]);
        let mut t = Terminal::new(TestBackend::new(120, 40)).unwrap();
        let shown = Shown {
            label: "rep 1/1".into(),
            history,
            ..Default::default()
        };
        t.draw(|f| draw(f, &shown)).unwrap();
        let text: String = t
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(text.contains("cpu150    90%"), "the busiest CPU is shown");
        assert!(text.contains("quieter CPUs hidden"));
        assert!(text.contains("receive kthreads (cpumap, NAPI), %"));
    }
}
