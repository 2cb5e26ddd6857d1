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

use rxsteer_records::{
    run::{core_kinds, CoreKind},
    CpuSample, Observed, Observer, Sample, SampleLine,
};
use std::collections::BTreeMap;

/// Each CPU's kind (P or E) where the machine has two, for the row labels.
#[derive(Clone, Debug, Default)]
pub struct CpuKinds(pub BTreeMap<u32, CoreKind>);

impl CpuKinds {
    /// This machine's, from sysfs (empty on a machine of one kind).
    pub fn of_machine() -> Self {
        let online = rxsteer_tune::cpus::online_cpus().unwrap_or_default();
        Self(core_kinds(&rxsteer_tune::topology::of_this_machine(
            &online,
        )))
    }

    /// " P", " E", or nothing.
    fn suffix(&self, cpu: u32) -> String {
        self.0
            .get(&cpu)
            .map_or(String::new(), |k| format!(" {}", k.letter()))
    }
}

/// Samples kept for the heatmaps (wider terminals show more of them).
const HISTORY: usize = 240;

/// One heatmap: a title, how to read a cell's value (0.0..=1.0) from a CPU sample, and how to
/// show a CPU's current figure beside its row.
struct Heatmap {
    title: &'static str,
    value: fn(&CpuSample, &Sample, f64) -> f64,
    now: fn(&CpuSample, &Sample) -> String,
}

fn percent_of(ns: u64, s: &Sample) -> String {
    format!("{:>3.0}%", ns as f64 / (s.interval_s * 1e7))
}

/// 1234567 -> "1.2M", 12345 -> "12k", 999 -> "999": four columns at most.
fn compact(v: f64) -> String {
    match v {
        v if v >= 9.95e5 => format!("{:.1}M", v / 1e6),
        v if v >= 9.95e3 => format!("{:.0}k", v / 1e3),
        v if v >= 999.5 => format!("{:.1}k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

const HEATMAPS: [Heatmap; 3] = [
    Heatmap {
        title: "NET_RX softirq, % of the CPU",
        value: |c, s, _| c.net_rx_ns as f64 / (s.interval_s * 1e9),
        now: |c, s| percent_of(c.net_rx_ns, s),
    },
    Heatmap {
        title: "receive kthreads (cpumap, NAPI), %",
        value: |c, s, _| c.kthread_ns() as f64 / (s.interval_s * 1e9),
        now: |c, s| percent_of(c.kthread_ns(), s),
    },
    Heatmap {
        title: "packets/s, shade vs the busiest",
        value: |c, s, max_pps| {
            if max_pps > 0.0 {
                c.packets as f64 / s.interval_s / max_pps
            } else {
                0.0
            }
        },
        now: |c, s| format!("{:>4}", compact(c.packets as f64 / s.interval_s)),
    },
];

/// Which of `values` (one per CPU, in CPU order) get one of `room` rows: all when they fit;
/// otherwise the busiest `room - 1`, still in CPU order, and one row saying how many of the
/// quietest are hidden. Returns the shown indices and the hidden count.
pub fn rows_shown(values: &[f64], room: usize) -> (Vec<usize>, usize) {
    if values.len() <= room {
        return ((0..values.len()).collect(), 0);
    }
    let keep = room.saturating_sub(1);
    (busiest(values, keep), values.len() - keep)
}

/// The `keep` busiest of `values`, in CPU order; among equals the lower CPU, so the choice is
/// stable from frame to frame.
pub fn busiest(values: &[f64], keep: usize) -> Vec<usize> {
    let mut by_value: Vec<usize> = (0..values.len()).collect();
    by_value.sort_by(|&a, &b| values[b].total_cmp(&values[a]).then(a.cmp(&b)));
    let mut shown: Vec<usize> = by_value[..keep.min(values.len())].to_vec();
    shown.sort_unstable();
    shown
}

/// The line that stands for the rows left out.
pub fn hidden_line(hidden: usize) -> String {
    format!("+{hidden} quieter CPUs hidden (a taller terminal shows them)")
}

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
    how: &Observed,
    count: Option<u64>,
    stop: &AtomicBool,
) -> Result<()> {
    // try_init also installs a panic hook that restores the terminal before the message; it
    // fails (instead of panicking) where there is no terminal to put in raw mode.
    let mut terminal = ratatui::try_init()
        .map_err(|e| anyhow::anyhow!("cannot start the live screen on this terminal: {e}"))?;
    let _guard = TerminalGuard;
    let mut history: VecDeque<Sample> = VecDeque::with_capacity(HISTORY);
    let kinds = CpuKinds::of_machine();
    let mut seen = 0u64;
    while !stop.load(Ordering::SeqCst) && count.is_none_or(|c| seen < c) {
        while let Ok(s) = rx.try_recv() {
            if history.len() == HISTORY {
                history.pop_front();
            }
            history.push_back(s);
            seen += 1;
        }
        if let Err(e) = terminal.draw(|f| draw(f, &history, &kinds, iface, how)) {
            if lost_terminal(&e) {
                break;
            }
            return Err(e.into());
        }
        // Keys are read only when bytes wait: at end-of-file crossterm's poll spins on
        // read(2) returning 0 and never returns (seen with strace), so a terminal that went
        // away (its window closed, the SSH session dropped) is found here, and ends the run
        // as SIGHUP does.
        match wait_input(Duration::from_millis(100)) {
            Input::Gone => {
                forget_terminal();
                break;
            }
            Input::Ready => {
                if event::poll(Duration::ZERO)? && is_quit(&event::read()?) {
                    break;
                }
            }
            Input::Quiet => {}
        }
    }
    Ok(())
}

/// What the terminal on stdin has for the view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// It hung up or closed (POLLHUP, POLLERR, POLLNVAL, or readable with nothing to read).
    Gone,
    /// Bytes wait: a key for crossterm to read.
    Ready,
    /// Nothing within the wait (or a signal cut it short).
    Quiet,
}

/// The terminal is gone: stdin, stdout and stderr become /dev/null, so the way out (the
/// restore, the lines it prints, the terminal guard's reset) cannot fail on it. A write to a
/// hung-up terminal fails with EIO, and Rust's `eprintln!` panics on that.
pub fn forget_terminal() {
    let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    else {
        return;
    };
    for fd in 0..3 {
        // SAFETY: dup2 onto the standard descriptors, from one this function owns.
        unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), fd) };
    }
}

/// Whether a failed draw means the terminal went away (writes to a hung-up terminal fail
/// with EIO, which can come before poll(2) reports the hang-up); if so, it is forgotten, and
/// the run ends as on a hang-up.
pub fn lost_terminal(e: &std::io::Error) -> bool {
    let gone = e.raw_os_error() == Some(libc::EIO) || wait_input(Duration::ZERO) == Input::Gone;
    if gone {
        forget_terminal();
    }
    gone
}

/// Waits up to `timeout` for input on stdin with poll(2), without reading it.
pub fn wait_input(timeout: Duration) -> Input {
    let mut p = libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd on the stack.
    if unsafe { libc::poll(&mut p, 1, timeout.as_millis() as libc::c_int) } <= 0 {
        return Input::Quiet;
    }
    if p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        return Input::Gone;
    }
    let mut waiting: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int.
    if unsafe { libc::ioctl(0, libc::FIONREAD, &mut waiting) } != 0 || waiting == 0 {
        return Input::Gone;
    }
    Input::Ready
}

/// q, Esc or Ctrl-C (raw mode turns Ctrl-C into a key rather than a signal).
pub fn is_quit(e: &Event) -> bool {
    let Event::Key(k) = e else { return false };
    let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
    k.kind == KeyEventKind::Press && (ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Esc))
}

/// The title's observer and the line under it: what counts where the driver received, and
/// what that (or the XDP mode steering runs in) means.
fn observer_lines(how: &Observed) -> (String, &'static str) {
    match how.xdp_mode {
        Some(m) if how.observer == Observer::Xdp => {
            (format!("observer xdp, XDP {}", m.long_name()), m.meaning())
        }
        _ => (format!("observer {}", how.observer), how.observer.meaning()),
    }
}

/// The live view as `top` draws it over these stored sample lines (the last ones, as many as
/// the view keeps), on a `width` x `height` terminal, as an SVG picture.
pub fn picture(lines: &[SampleLine], width: u16, height: u16) -> Result<String> {
    let last = lines
        .last()
        .ok_or_else(|| anyhow::anyhow!("no sample lines to draw"))?;
    let how = Observed {
        observer: last.observer.unwrap_or(Observer::Xdp),
        xdp_mode: last.xdp_mode,
        xdp_frags: last.xdp_frags.unwrap_or(false),
        tc: last
            .tc
            .clone()
            .unwrap_or(rxsteer_records::TcAttached::Unavailable(
                "not recorded".into(),
            )),
        level: last.observe.unwrap_or(rxsteer_records::ObserveLevel::Full),
    };
    let history: VecDeque<Sample> = lines
        .iter()
        .skip(lines.len().saturating_sub(HISTORY))
        .map(|l| l.sample.clone())
        .collect();
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, height))?;
    terminal.draw(|f| draw(f, &history, &CpuKinds::default(), &last.iface, &how))?;
    Ok(crate::screenshot::svg(terminal.backend().buffer()))
}

fn draw(f: &mut Frame, history: &VecDeque<Sample>, kinds: &CpuKinds, iface: &str, how: &Observed) {
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
            Span::from(format!(" rxsteer top  {iface}  {}", observer_lines(how).0)).bold(),
            Span::from(errors).red(),
            Span::from("   q: quit").dim(),
        ]),
        title,
    );
    // What watching costs, from the kernel's own statistics, beside what it means.
    let cost = history
        .back()
        .and_then(Sample::bpf_cost)
        .map_or(String::new(), |c| format!("{}  ·  ", c.line()));
    f.render_widget(
        Line::from(format!(" {cost}{}", observer_lines(how).1)).dim(),
        meaning,
    );
    match table_width(body.width) {
        Some(w) => {
            let [maps, table] =
                Layout::horizontal([Constraint::Min(0), Constraint::Length(w)]).areas(body);
            draw_heatmaps(f, maps, history, kinds);
            draw_table(f, table, history.back(), how);
        }
        None => draw_heatmaps(f, body, history, kinds),
    }
}

/// Columns the per-CPU table needs whole (its nine columns, their gaps and the border).
const TABLE_WIDTH: u16 = 70;
/// The heatmaps' least useful width: a label and some history.
const MIN_MAPS_WIDTH: u16 = 40;

/// The table's width on a screen `width` wide, or None when it would squeeze the heatmaps (they
/// show each CPU's current figure too, so nothing is lost but the extra columns).
pub fn table_width(width: u16) -> Option<u16> {
    (width >= TABLE_WIDTH + MIN_MAPS_WIDTH).then_some(TABLE_WIDTH)
}

/// The three heatmaps (NET_RX time, receive-kthread time, packets), stacked in `area`;
/// NET_RX's bottom border gives its p99 run and wait ([`net_rx_tail`]).
pub fn draw_heatmaps(f: &mut Frame, area: Rect, history: &VecDeque<Sample>, kinds: &CpuKinds) {
    let areas = Layout::vertical([Constraint::Ratio(1, 3); 3]).split(area);
    let max_pps = history
        .iter()
        .flat_map(|s| s.cpus.iter().map(move |c| c.packets as f64 / s.interval_s))
        .fold(0.0, f64::max);
    let tail = net_rx_tail(history.back());
    for (i, (map, area)) in HEATMAPS.iter().zip(areas.iter()).enumerate() {
        let footer = tail.as_deref().filter(|_| i == 0);
        draw_heatmap(f, *area, map, history, kinds, max_pps, footer);
    }
}

fn draw_heatmap(
    f: &mut Frame,
    area: Rect,
    map: &Heatmap,
    history: &VecDeque<Sample>,
    kinds: &CpuKinds,
    max_pps: f64,
    footer: Option<&str>,
) {
    let mut block = Block::bordered().title(map.title);
    if let Some(footer) = footer {
        block = block.title_bottom(Line::from(format!(" {footer} ")));
    }
    let inner = block.inner(area);
    let Some(last) = history.back() else {
        f.render_widget(block, area);
        return;
    };
    // "cpu191 P 100% ": the CPU, its kind where there are two, its current figure; then one
    // column per sample.
    let label = 14usize;
    let width = (inner.width as usize).saturating_sub(label);
    let samples: Vec<&Sample> = history
        .iter()
        .skip(history.len().saturating_sub(width))
        .collect();
    let now: Vec<f64> = last
        .cpus
        .iter()
        .map(|c| (map.value)(c, last, max_pps))
        .collect();
    let (rows, hidden) = rows_shown(&now, inner.height as usize);
    let mut lines: Vec<Line> = rows
        .iter()
        .map(|&row| {
            let c = &last.cpus[row];
            let mut spans = vec![Span::from(format!(
                "{:<9}{:>4} ",
                format!("cpu{}{}", c.cpu, kinds.suffix(c.cpu)),
                (map.now)(c, last)
            ))];
            spans.extend(samples.iter().map(|s| {
                let v = s.cpus.get(row).map_or(0.0, |c| (map.value)(c, s, max_pps));
                Span::styled(" ", Style::default().bg(heat(v)))
            }));
            Line::from(spans)
        })
        .collect();
    if hidden > 0 {
        lines.push(Line::from(hidden_line(hidden)).dim());
    }
    f.render_widget(Paragraph::new(lines).block(block), area);
}

/// What the NIC itself lost in the last interval, for the table's title: loss no CPU row
/// shows. "not read" where the interface's counters were not (never a silent zero).
fn nic_lost(last: Option<&Sample>) -> String {
    match last.and_then(|s| Some((s, s.nic_drops.as_ref()?))) {
        None => "NIC drops: not read".into(),
        Some((s, d)) => {
            let lost = d.lost();
            let which: Vec<&str> = d.nonzero().map(|(k, _)| k).collect();
            match lost {
                0 => "NIC drops/s: 0".into(),
                _ => format!(
                    "NIC drops/s: {} ({})",
                    compact(lost as f64 / s.interval_s.max(1e-9)),
                    which.join(", ")
                ),
            }
        }
    }
}

/// NET_RX's p99 run length and wait on the CPU whose NET_RX ran most in the last interval,
/// for the table's bottom border: why the tail is long, in one line. The wait says "not
/// timed" below `--observe full`; nothing at all before any NET_RX ran. The sample itself
/// says whether waits were timed: NET_RX is raised before every run, so a sample that ran
/// NET_RX with no wait recorded was not timing them. That holds for the compare screen too,
/// whose arms each observe at their own level.
fn net_rx_tail(last: Option<&Sample>) -> Option<String> {
    let last = last?;
    let c = last
        .cpus
        .iter()
        .filter(|c| c.net_rx_run_log2.count() > 0)
        .max_by_key(|c| c.net_rx_run_log2.count())?;
    let p99 = |h: &rxsteer_records::log2::Log2Ns| {
        h.quantile_ns(0.99).map_or("-".into(), |ns| {
            format!("< {}", rxsteer_records::search::ms(ns.div_ceil(1000)))
        })
    };
    let wait = if last.cpus.iter().any(|c| c.net_rx_wait_log2.count() > 0) {
        p99(&c.net_rx_wait_log2)
    } else {
        "not timed".into()
    };
    Some(format!(
        "p99 on cpu{}: run {}, wait {wait}",
        c.cpu,
        p99(&c.net_rx_run_log2)
    ))
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

fn draw_table(f: &mut Frame, area: Rect, last: Option<&Sample>, how: &Observed) {
    // xdp/s: where the driver received (XDP); stack/s: where the stack ran (tc ingress);
    // tx/s: where packets left (tc egress); busy%: /proc/stat, all of the CPU's work. A
    // witness not attached (or not at this --observe level) shows "-", never 0.
    let tc = matches!(
        how.tc,
        rxsteer_records::TcAttached::Tcx | rxsteer_records::TcAttached::Clsact
    );
    let (stack_counted, tx_counted) = (tc, tc && how.level.counts_tx());
    let header = Row::new([
        "cpu", "xdp/s", "stack/s", "tx/s", "NET_RX%", "kthr%", "busy%", "drop", "squeeze",
    ])
    .bold();
    // Borders and the header take three lines; the busiest CPUs (by busy%) get the rest, and
    // the bottom border says how many are left out.
    let room = (area.height as usize).saturating_sub(3);
    let mut hidden = 0;
    let rows: Vec<Row> = last.map_or(vec![], |s| {
        let pct = |ns: u64| format!("{:.1}", ns as f64 / (s.interval_s * 1e7));
        let rate = |n: u64| compact(n as f64 / s.interval_s);
        let counted = |yes: bool, n: u64| if yes { rate(n) } else { "-".into() };
        let busy: Vec<f64> = s
            .cpus
            .iter()
            .map(|c| c.time.busy() as f64 / c.time.total().max(1) as f64)
            .collect();
        let shown = if busy.len() <= room {
            (0..busy.len()).collect()
        } else {
            hidden = busy.len() - room;
            busiest(&busy, room)
        };
        shown
            .iter()
            .map(|&i| &s.cpus[i])
            .map(|c| {
                let busy = c.time.busy() as f64 / c.time.total().max(1) as f64 * 100.0;
                Row::new([
                    c.cpu.to_string(),
                    rate(c.packets),
                    counted(stack_counted, c.stack_packets),
                    counted(tx_counted, c.tx_packets),
                    pct(c.net_rx_ns),
                    pct(c.kthread_ns()),
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
    // The NIC's own loss is in no CPU's row: the bottom border says it.
    let mut block = Block::bordered()
        .title("now, per CPU (busiest first when not all fit)")
        .title_bottom(Line::from(format!(" {} ", nic_lost(last))));
    if hidden > 0 {
        block = block.title_bottom(Line::from(format!(" +{hidden} quieter CPUs hidden ")).dim());
    }
    f.render_widget(Table::new(rows, widths).header(header).block(block), area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::{backend::TestBackend, Terminal};
    use rxsteer_records::XdpMode;

    fn skb_xdp() -> Observed {
        Observed {
            observer: Observer::Xdp,
            xdp_mode: Some(XdpMode::Skb),
            xdp_frags: false,
            tc: rxsteer_records::TcAttached::Tcx,
            level: rxsteer_records::ObserveLevel::Full,
        }
    }

    #[test]
    fn whether_waits_were_timed_is_read_from_the_sample() {
        use rxsteer_records::log2::Log2Ns;
        let mut s = Sample::default();
        s.cpus.push(CpuSample {
            cpu: 3,
            net_rx_run_log2: Log2Ns([vec![0; 11], vec![100]].concat()),
            ..Default::default()
        });
        let line = |s: &Sample| net_rx_tail(Some(s));
        assert_eq!(
            line(&s).as_deref(),
            Some("p99 on cpu3: run < 5 us, wait not timed"),
            "runs and no waits: an arm below --observe full"
        );
        s.cpus[0].net_rx_wait_log2 = Log2Ns([vec![0; 16], vec![5]].concat());
        assert_eq!(
            line(&s).as_deref(),
            Some("p99 on cpu3: run < 5 us, wait < 132 us")
        );
        assert_eq!(line(&Sample::default()), None, "nothing before NET_RX ran");
    }

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
        let mut lossy = s.clone();
        lossy.nic_drops = Some(rxsteer_records::sample::NicDrops {
            counters: [("rx_missed_errors".to_string(), 1500)].into(),
            driver: Default::default(),
        });
        // CPU 1's NET_RX ran most: 100 runs under 4 us and waits of [64, 128) us.
        use rxsteer_records::log2::Log2Ns;
        lossy.cpus[1].net_rx_run_log2 = Log2Ns([vec![0; 11], vec![100]].concat());
        lossy.cpus[1].net_rx_wait_log2 = Log2Ns([vec![0; 16], vec![5]].concat());
        lossy.cpus[0].net_rx_run_log2 = Log2Ns(vec![3]);
        let history = VecDeque::from([s.clone(), s]);
        let mut t = Terminal::new(TestBackend::new(140, 30)).unwrap();
        t.draw(|f| draw(f, &history, &CpuKinds::default(), "veth0", &skb_xdp()))
            .unwrap();
        let text: String = t
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(text.contains("NIC drops: not read"), "never a silent zero");
        let lossy = VecDeque::from([lossy.clone(), lossy]);
        t.draw(|f| draw(f, &lossy, &CpuKinds::default(), "veth0", &skb_xdp()))
            .unwrap();
        let said: String = t
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(
            said.contains("NIC drops/s: 1.5k (rx_missed_errors)"),
            "{said}"
        );
        assert!(
            said.contains("p99 on cpu1: run < 5 us, wait < 132 us"),
            "{said}"
        );
        assert!(!text.contains("p99 on cpu"), "nothing before NET_RX ran");
        assert!(text.contains("rxsteer top  veth0  observer xdp, XDP skb (generic)"));
        assert!(
            text.contains("after the RX core has built each packet's skb"),
            "the mode's meaning"
        );
        assert!(text.contains("7.0k"), "tc ingress packets/s of cpu1");
        assert!(text.contains("cpu0") && text.contains("cpu1"));
        assert!(text.contains("2.0k"), "pkt/s of cpu1");
        assert!(
            text.contains("25.0"),
            "NET_RX% of a quarter second in one second"
        );
    }

    /// The picture is the live view's own drawing: its title, its CPUs and a heat cell's
    /// colour come out in the SVG.
    #[test]
    fn the_picture_is_the_live_views_drawing() {
        let lines: Vec<SampleLine> = (0..30)
            .map(|_| SampleLine::new("eth0", &skb_xdp(), many(4)))
            .collect();
        let svg = picture(&lines, 140, 24).unwrap();
        assert!(svg.contains("rxsteer top  eth0  observer xdp"), "{svg}");
        assert!(svg.contains("cpu3"), "{svg}");
        assert!(svg.contains("<rect x="), "heat cells drawn: {svg}");
        assert!(picture(&[], 140, 24).is_err());
    }

    /// `n` CPUs, some of them busy: CPU 0 (the RX core), the last, and every 16th.
    fn many(n: u32) -> Sample {
        let mut s = Sample {
            interval_s: 1.0,
            ..Default::default()
        };
        for cpu in 0..n {
            let busy = cpu == 0 || cpu == n - 1 || cpu % 16 == 5;
            s.cpus.push(CpuSample {
                cpu,
                packets: if busy { 500_000 } else { cpu as u64 },
                net_rx_ns: if busy { 600_000_000 } else { 1_000 },
                cpumap_kthread_ns: if busy { 200_000_000 } else { 0 },
                time: rxsteer_records::sample::CpuTimes {
                    user: if busy { 900 } else { 10 },
                    idle: if busy { 100 } else { 990 },
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        s
    }

    fn screen(s: &Sample, w: u16, h: u16) -> Vec<String> {
        screen_with(s, &CpuKinds::default(), w, h)
    }

    fn screen_with(s: &Sample, kinds: &CpuKinds, w: u16, h: u16) -> Vec<String> {
        let history = VecDeque::from(vec![s.clone(); 50]);
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, &history, kinds, "eth0", &skb_xdp()))
            .unwrap();
        let buf = t.backend().buffer();
        (0..h)
            .map(|y| (0..w).map(|x| buf[(x, y)].symbol()).collect())
            .collect()
    }

    /// Every CPU of every heatmap and of the table is shown or counted as hidden, none twice,
    /// each label whole, and the busy CPUs are among the shown.
    fn check(n: u32, w: u16, h: u16) {
        let s = many(n);
        let lines = screen(&s, w, h);
        let text = lines.join("\n");
        let split = (w - table_width(w).unwrap_or(0)) as usize;
        let mut maps: Vec<(Vec<u32>, usize)> = Vec::new();
        for line in &lines {
            let left: String = line.chars().take(split).collect();
            if HEATMAPS.iter().any(|m| left.contains(m.title)) {
                maps.push((Vec::new(), 0));
                continue;
            }
            let Some((cpus, hidden)) = maps.last_mut() else {
                continue;
            };
            let cells = left.trim_start_matches(['│', ' ']);
            if let Some(rest) = cells.strip_prefix("cpu") {
                let id: String = rest.chars().take_while(char::is_ascii_digit).collect();
                // The label is whole: the id, then the current figure, within its 12 columns.
                let label: Vec<&str> = cells[..14].split_whitespace().collect();
                assert!(
                    label.len() == 2
                        && label[0] == format!("cpu{id}")
                        && cells.as_bytes()[13] == b' ',
                    "cut label: {line}"
                );
                cpus.push(id.parse().unwrap());
            } else if let Some(k) = cells.strip_prefix('+') {
                *hidden = k.split(' ').next().unwrap().parse().unwrap();
                assert!(cells.contains("quieter CPUs hidden"), "{line}");
            }
        }
        assert_eq!(
            maps.len(),
            3,
            "three heatmaps at {n} CPUs, {w}x{h}:\n{text}"
        );
        for (cpus, hidden) in &maps {
            let mut seen = cpus.clone();
            seen.dedup();
            assert_eq!(seen.len(), cpus.len(), "a CPU twice: {cpus:?}");
            assert_eq!(
                cpus.len() + hidden,
                n as usize,
                "{n} CPUs at {w}x{h}:\n{text}"
            );
            let busy: Vec<u32> = (0..n)
                .filter(|c| *c == 0 || *c == n - 1 || c % 16 == 5)
                .collect();
            let room = cpus.len();
            for b in busy.iter().take(room) {
                assert!(
                    cpus.contains(b),
                    "busy CPU {b} not shown at {n} CPUs:\n{text}"
                );
            }
        }
        // The table: a row per shown CPU, the rest counted on its bottom border.
        let table: Vec<u32> = lines
            .iter()
            .filter_map(|l| {
                let right: String = l.chars().skip(split).collect();
                let first = right
                    .trim_start_matches(['│', ' '])
                    .split(' ')
                    .next()?
                    .to_string();
                (!first.is_empty() && first.chars().all(|c| c.is_ascii_digit()))
                    .then(|| first.parse().ok())?
            })
            .collect();
        // The bottom border's " +K quieter CPUs hidden ", on the right-hand side.
        let table_hidden: usize = lines
            .iter()
            .filter_map(|l| {
                let right: String = l.chars().skip(split).collect();
                let k = right.split(" +").nth(1)?.split(' ').next()?.parse().ok()?;
                right.contains("quieter CPUs hidden").then_some(k)
            })
            .next()
            .unwrap_or(0);
        if table_width(w).is_some() {
            let mut distinct = table.clone();
            distinct.dedup();
            assert_eq!(distinct.len(), table.len(), "a CPU twice in the table");
            assert_eq!(
                table.len() + table_hidden,
                n as usize,
                "table rows {table:?} at {n} CPUs:\n{text}"
            );
        } else {
            assert!(table.is_empty(), "no table at {w} columns:\n{text}");
        }
        // Nothing is cut: every title whole.
        for m in &HEATMAPS {
            assert!(
                text.contains(m.title),
                "{} cut at {w}x{h}:\n{text}",
                m.title
            );
        }
    }

    #[test]
    fn every_cpu_is_shown_or_counted_at_20_64_and_192_cpus() {
        for (n, w, h) in [
            (20, 160, 80),
            (20, 120, 40),
            (64, 200, 220),
            (64, 160, 50),
            (192, 220, 600),
            (192, 200, 60),
            (192, 80, 24),
        ] {
            check(n, w, h);
        }
    }

    #[test]
    fn a_tall_enough_screen_hides_nothing() {
        let lines = screen(&many(20), 160, 80).join("\n");
        assert!(!lines.contains("hidden"), "{lines}");
        assert!(lines.contains("cpu19") && lines.contains(" 60%"), "{lines}");
        let lines = screen(&many(192), 160, 40).join("\n");
        assert!(lines.contains("quieter CPUs hidden"), "{lines}");
    }

    #[test]
    fn rows_carry_the_core_kind_on_a_machine_of_two() {
        let kind = |c| {
            if c >= 10 {
                CoreKind::Performance
            } else {
                CoreKind::Efficiency
            }
        };
        let kinds = CpuKinds((0..20).map(|c| (c, kind(c))).collect());
        let text = screen_with(&many(20), &kinds, 160, 80).join("\n");
        assert!(text.contains("cpu19 P   60%"), "{text}");
        assert!(text.contains("cpu3 E     0%"), "{text}");
        assert!(!screen(&many(20), 160, 80).join("\n").contains("cpu3 E"));
    }

    #[test]
    fn rows_shown_keeps_the_busiest_in_cpu_order() {
        assert_eq!(rows_shown(&[1.0, 2.0, 3.0], 3), (vec![0, 1, 2], 0));
        assert_eq!(rows_shown(&[5.0, 0.0, 9.0, 1.0, 7.0], 3), (vec![2, 4], 3));
        assert_eq!(busiest(&[0.0, 0.0, 0.0], 2), vec![0, 1]);
        assert_eq!(compact(1_234_567.0), "1.2M");
        assert_eq!(compact(12_345.0), "12k");
        assert_eq!(compact(1_500.0), "1.5k");
        assert_eq!(compact(999.0), "999");
    }

    #[test]
    fn heat_scale() {
        assert_eq!(heat(0.0), Color::Rgb(20, 20, 20));
        assert_eq!(heat(2.0), heat(1.0));
        assert_ne!(heat(0.3), heat(0.9));
    }
}
