//! `compare --interleave`: the arms of one repetition side by side in short windows under one
//! continuous load. For each protocol, one rxload runs the whole cycle against the one
//! server of the run; each arm in turn is put in place under it (`rxsteer attach`), checked
//! against what the kernel shows, left to settle, measured for `--window`, and taken down
//! again. The drift of this machine is slow (req/s has a lag-1 autocorrelation of 0.68-0.79
//! per second), so windows next to each other differ by less than loads started apart: the
//! stored A/A run (results/2026-12-05-vm-aa-interleaved-vs-per-rep) reached the same standard
//! error in 0.18x the time.
//!
//! A window is cut at rxload's own live lines: it begins at the first line written after the
//! settle time (that line's interval, which overlaps the settle, is dropped) and holds the
//! next lines up to `--window`, so its requests are exactly the ones rxload counted in those
//! intervals. Its p99 is the highest p99 of its lines (each line has its own histogram; the
//! window's exact quantile is not kept), its p99.9 is not known. Per-CPU figures come from
//! attach's samples whose span is centred inside the window.
use anyhow::{Context, Result};
use rxsteer_records::{
    load::{Latency, OpenLoop, Quantiles},
    run::ratio_in,
    LiveLine, LoadResult, Phase, Proto, Row,
};
use std::{
    process::Child,
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use super::{
    arm::Arm,
    figures,
    load::LoadSpec,
    screen::{Done, Screen},
    session::{Server, Steering},
    watch::{Clocks, Tagged, Tail},
    witness, Run,
};

/// The live lines' interval, the grain a window is cut at: 250 ms, or a quarter of a shorter
/// window (never under 50 ms).
pub fn live_interval(window: Duration) -> Duration {
    let i = Duration::from_millis(250).min(window / 4);
    Duration::from_millis(i.as_millis() as u64).max(Duration::from_millis(50))
}

/// `--interleave` as run.json keeps it: None when the run was not interleaved.
pub fn record(args: &super::CompareArgs) -> Option<rxsteer_records::reps::Interleaved> {
    args.interleave.then(|| rxsteer_records::reps::Interleaved {
        window_s: args.window.as_secs_f64(),
        settle_s: args.settle.as_secs_f64(),
        live_interval_s: live_interval(args.window).as_secs_f64(),
    })
}

/// attach's sampling interval in a window: `--interval`, or the live lines' if shorter, so a
/// window holds several samples.
fn sample_interval(args: &super::CompareArgs) -> Duration {
    args.interval.min(live_interval(args.window))
}

/// Which of attach's samples belong to the window: those whose span (the interval before
/// each arrived) is centred between the window's first and last live line. Samples run on
/// attach's own clock, so a window's per-CPU figures are within one sample of its span.
#[derive(Default)]
struct Tag {
    open: Option<Instant>,
    close: Option<Instant>,
}

impl Tag {
    fn new() -> Self {
        Self::default()
    }

    fn open(&mut self, at: Instant) {
        self.open = Some(at);
    }

    fn close(&mut self, at: Instant) {
        self.close.get_or_insert(at);
    }

    fn closed(&self) -> bool {
        self.close.is_some()
    }

    fn phase_of(&self, arrived: Instant, interval_s: f64) -> Phase {
        let mid = arrived
            .checked_sub(Duration::from_secs_f64(interval_s.max(0.0) / 2.0))
            .unwrap_or(arrived);
        match (self.open, self.close) {
            (Some(o), None) if mid >= o => Phase::Measure,
            (Some(o), Some(c)) if mid >= o && mid <= c => Phase::Measure,
            _ => Phase::Warmup,
        }
    }

    /// Closed, and the last sample centred inside it has had time to arrive.
    fn done(&self, now: Instant, sampled: Duration) -> bool {
        self.close
            .is_some_and(|c| now >= c + sampled / 2 + Duration::from_millis(30))
    }
}

/// The most a switch may take (attach loads its programs and applies the mode) before the
/// cycle's load would run out: rxload's -d is sized with it, and the load is stopped as
/// soon as the last window is cut.
const SWITCH_ALLOWANCE: Duration = Duration::from_secs(10);

/// How one arm's turn in the cycle ended.
enum Turn {
    /// Its window was measured: these live lines, after the one at this t_s.
    Measured(f64, Vec<LiveLine>),
    /// The cycle's load ended before the window did (rxload exited): why.
    LoadGone(String),
    /// The user or a signal asked to stop.
    Stopped,
}

impl Run<'_> {
    /// One repetition of `proto` interleaved: `arms` in this order under one load, each
    /// arm's row pushed onto `rows` as its window ends.
    pub(super) fn cycle(
        &self,
        rep: u32,
        proto: Proto,
        arms: &[Arm],
        server: &Server,
        screen: &mut Screen,
        rows: &mut Vec<Row>,
    ) -> Result<()> {
        let args = self.args;
        let every = live_interval(args.window);
        let per_arm = SWITCH_ALLOWANCE + args.settle + args.window;
        let base = format!("cycle-{}-rep{rep}", proto.as_str());
        let spec = LoadSpec {
            proto,
            scenario: args.scenario,
            body_size: args.body_size,
            rate: args.rate,
            connections: args.connections,
            io: args.loader_io,
            measure: per_arm * arms.len() as u32,
            warmup: args.warmup,
            target_ip: &self.site.target_ip,
            json: self.dir.join(format!("rxload-{base}.json")),
            hgrm: self.dir.join(format!("latency-{base}.hgrm")),
            live: self.dir.join(format!("live-{base}.jsonl")),
            base: base.clone(),
            live_every: Some(every),
        };
        let mut load = self.loader.spawn(&spec)?;
        let result = self.turns(rep, proto, arms, server, screen, rows, &spec, &mut load);
        // The load is bounded by its -d; it is stopped here as soon as the cycle is done
        // (its own totals mix every arm and are not used: the live lines are the record).
        for c in &mut load {
            crate::child::terminate(c);
        }
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn turns(
        &self,
        rep: u32,
        proto: Proto,
        arms: &[Arm],
        server: &Server,
        screen: &mut Screen,
        rows: &mut Vec<Row>,
        spec: &LoadSpec,
        load: &mut [Child],
    ) -> Result<()> {
        let args = self.args;
        let mut tail = Tail::new(&spec.live);
        let label = |arm: &Arm| {
            format!(
                "rep {}  {}  {}  (interleaved)",
                rep + 1,
                arm.key(),
                proto.as_str()
            )
        };
        // The load's own warm-up, before the first switch.
        screen.begin(format!("rep {}  {}  warm-up", rep + 1, proto.as_str()));
        let warm = Instant::now() + args.warmup;
        let mut gone = None;
        while Instant::now() < warm {
            self.idle(&mut tail, screen, load, &mut gone)?;
            if gone.is_some() || self.stopped(screen)? {
                break;
            }
        }
        for arm in arms {
            let base = format!("{}-{}-rep{rep}", arm.key(), proto.as_str());
            screen.begin(label(arm));
            if let Some(why) = &gone {
                rows.push(failed_row(rep, *arm, proto, why));
                continue;
            }
            if self.stop.load(Ordering::SeqCst) {
                anyhow::bail!("stopped before the end (q or a signal); everything was restored");
            }
            let switch = Instant::now();
            if arm.observer == rxsteer_dataplane::ObserverChoice::Off {
                witness::wait_unloaded(Duration::from_secs(5))?;
            }
            let steering =
                Steering::start(self.site, *arm, proto, sample_interval(args), args.watch())?;
            let attached = witness::read(self.site)?;
            witness::check(arm, &self.site.server_dev, &attached)?;
            let switch_ms = switch.elapsed().as_secs_f64() * 1e3;
            let mut clocks = Clocks::new(server.pid(), load.iter().map(Child::id).collect());
            let mut tagged = Vec::new();
            let turn = self.turn(&mut tail, &steering, &mut clocks, screen, load, &mut tagged)?;
            steering.stop()?;
            figures::store_samples(&self.dir.join(format!("samples-{base}.jsonl")), &tagged)?;
            let mut row = match turn {
                Turn::Stopped => anyhow::bail!(
                    "stopped before the end (q or a signal); everything was restored; partial \
                     files in {}",
                    self.dir.display()
                ),
                Turn::LoadGone(why) => {
                    screen.note(format!("{base}: {why}"));
                    let row = failed_row(rep, *arm, proto, &why);
                    gone = Some(why);
                    row
                }
                Turn::Measured(from, lines) => {
                    let result = window_result(from, &lines, args.connections, args.rate);
                    let mut row = window_row(rep, *arm, proto, &result, &tagged);
                    row.window_at = lines.last().map(|l| [from, l.t_s]);
                    row.levers = self.site.levers_now();
                    row
                }
            };
            row.switch_ms = Some((switch_ms * 10.0).round() / 10.0);
            row.attached = Some(attached);
            let (req_per_s, p99_us) = (row.req_per_s.unwrap_or(0.0), row.p99_us.unwrap_or(0));
            rows.push(row);
            screen.on_done(Done {
                label: label(arm),
                req_per_s,
                p99_us,
                ratio: ratio_in(rows, rep, arm.key(), proto),
            });
        }
        Ok(())
    }

    /// One arm in place: its settle, then its window, with the samples tagged as they come.
    fn turn(
        &self,
        tail: &mut Tail,
        steering: &Steering,
        clocks: &mut Clocks,
        screen: &mut Screen,
        load: &mut [Child],
        tagged: &mut Vec<Tagged>,
    ) -> Result<Turn> {
        let args = self.args;
        let every = live_interval(args.window).as_secs_f64();
        let sampled = sample_interval(args);
        let settled = Instant::now() + args.settle;
        let mut tag = Tag::new();
        // (the t_s the window starts after, its lines)
        let mut window: Option<(f64, Vec<LiveLine>)> = None;
        loop {
            for line in tail.lines() {
                let Ok(l) = serde_json::from_str::<LiveLine>(&line) else {
                    continue;
                };
                screen.on_live(&l);
                match &mut window {
                    None if Instant::now() >= settled => {
                        window = Some((l.t_s, vec![]));
                        tag.open(Instant::now());
                    }
                    None => {}
                    // Lines after the window (while its last samples arrive) are not its.
                    Some(_) if tag.closed() => {}
                    Some((from, lines)) => {
                        lines.push(l);
                        // Whole intervals up to the window (half an interval of slack for
                        // the timer's jitter).
                        if l.t_s - *from >= args.window.as_secs_f64() - every / 2.0 {
                            tag.close(Instant::now());
                        }
                    }
                }
            }
            while let Ok(s) = steering.samples.try_recv() {
                screen.on_sample(&s.sample);
                let phase = tag.phase_of(Instant::now(), s.sample.interval_s);
                tagged.push(Tagged {
                    phase,
                    line: s,
                    procs: clocks.take(),
                });
            }
            if let (Some((from, lines)), true) = (&window, tag.done(Instant::now(), sampled)) {
                return Ok(Turn::Measured(*from, lines.clone()));
            }
            if self.stopped(screen)? {
                return Ok(Turn::Stopped);
            }
            if let Some(why) = load_gone(load)? {
                return Ok(Turn::LoadGone(why));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Draws what the load says while nothing is measured (the warm-up).
    fn idle(
        &self,
        tail: &mut Tail,
        screen: &mut Screen,
        load: &mut [Child],
        gone: &mut Option<String>,
    ) -> Result<()> {
        for line in tail.lines() {
            if let Ok(l) = serde_json::from_str::<LiveLine>(&line) {
                screen.on_live(&l);
            }
        }
        *gone = load_gone(load)?;
        std::thread::sleep(Duration::from_millis(20));
        Ok(())
    }

    fn stopped(&self, screen: &mut Screen) -> Result<bool> {
        Ok(screen.tick()? || self.stop.load(Ordering::SeqCst))
    }
}

/// Why the cycle's load is no longer running, if it is not.
fn load_gone(load: &mut [Child]) -> Result<Option<String>> {
    for c in load.iter_mut() {
        if let Some(status) = c.try_wait().context("waiting for rxload")? {
            let why = crate::child::stderr_of(c);
            return Ok(Some(format!(
                "the interleaved load ended early ({status}): {}",
                why.trim().trim_start_matches("rxload: ")
            )));
        }
    }
    Ok(None)
}

/// A window's load figures from its live lines (those after the line at `from`): the requests rxload counted in them over
/// their span; the p50 the median of theirs, the p99 and max the highest. For a closed loop
/// the mean latency follows from Little's law (connections over req/s).
fn window_result(from: f64, lines: &[LiveLine], connections: u32, rate: Option<f64>) -> LoadResult {
    let mut prev = from;
    let (mut requests, mut seconds, mut errors) = (0.0, 0.0, 0);
    for l in lines {
        // Each line counts the interval since the one before it.
        let dt = l.t_s - prev;
        prev = l.t_s;
        requests += l.req_per_s * dt;
        seconds += dt;
        errors += l.errors;
    }
    let req_per_s = requests / seconds.max(1e-9);
    let mut p50: Vec<u64> = lines.iter().map(|l| l.p50_us).collect();
    p50.sort_unstable();
    let quantiles = Quantiles {
        p50: p50.get(p50.len() / 2).copied().unwrap_or(0),
        p99: lines.iter().map(|l| l.p99_us).max().unwrap_or(0),
        max: lines.iter().map(|l| l.max_us).max().unwrap_or(0),
        ..Default::default()
    };
    LoadResult {
        connections,
        threads: 1,
        measured_s: seconds,
        requests: requests.round() as u64,
        req_per_s,
        open_loop: rate.map(|r| OpenLoop {
            target_per_s: r,
            reached: req_per_s >= 0.95 * r,
        }),
        latency_us: Latency {
            mean: match rate {
                None if req_per_s > 0.0 => f64::from(connections) / req_per_s * 1e6,
                _ => 0.0,
            },
            quantiles,
            histogram: vec![],
        },
        errors: if errors > 0 {
            [("any".to_string(), errors)].into()
        } else {
            Default::default()
        },
        ..Default::default()
    }
}

/// A window's row: the load's figures beside the per-CPU ones, less what a window does not
/// know (its p99.9, the loader's allocations; an open loop's mean latency).
fn window_row(rep: u32, arm: Arm, proto: Proto, load: &LoadResult, tagged: &[Tagged]) -> Row {
    let mut row = figures::row(rep, arm, proto, Some(load), tagged);
    row.p999_us = None;
    row.client_allocs_per_request = None;
    if load.open_loop.is_some() {
        row.mean_us = None;
    }
    row
}

/// An arm whose window never came: the load had ended. No ratio is taken from it.
fn failed_row(rep: u32, arm: Arm, proto: Proto, why: &str) -> Row {
    let mut row = figures::row(rep, arm, proto, None, &[]);
    row.fail(why.to_string());
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(t_s: f64, req_per_s: f64, p50: u64, p99: u64) -> LiveLine {
        LiveLine {
            t_s,
            phase: Phase::Measure,
            req_per_s,
            errors: 1,
            p50_us: p50,
            p99_us: p99,
            max_us: p99 * 2,
        }
    }

    #[test]
    fn a_window_counts_what_its_lines_counted() {
        let lines = [
            line(10.25, 4000.0, 100, 300),
            line(10.5, 8000.0, 120, 900),
            line(10.75, 4000.0, 110, 400),
            line(11.0, 4000.0, 90, 500),
        ];
        let r = window_result(10.0, &lines, 32, None);
        assert!((r.measured_s - 1.0).abs() < 1e-9, "{}", r.measured_s);
        assert_eq!(r.requests, 5000);
        assert!((r.req_per_s - 5000.0).abs() < 1e-6);
        assert_eq!(r.latency_us.quantiles.p99, 900);
        assert_eq!(r.latency_us.quantiles.p50, 110);
        assert_eq!(r.latency_us.quantiles.max, 1800);
        // Little's law: 32 connections at 5000 req/s spend 6.4 ms per request.
        assert!((r.latency_us.mean - 6400.0).abs() < 1e-6);
        assert_eq!(r.error_total(), 4);
        let open = window_result(10.0, &lines, 32, Some(5200.0));
        assert_eq!(open.open_loop.map(|o| o.reached), Some(true));
        assert_eq!(open.latency_us.mean, 0.0);
        assert!(
            !window_result(10.0, &lines, 32, Some(6000.0))
                .open_loop
                .unwrap()
                .reached
        );
    }

    #[test]
    fn samples_centred_in_the_window_are_measured() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut tag = Tag::new();
        assert_eq!(
            tag.phase_of(at(100), 0.25),
            Phase::Warmup,
            "before it opens"
        );
        tag.open(at(1000));
        assert_eq!(tag.phase_of(at(1100), 0.25), Phase::Warmup, "mostly settle");
        assert_eq!(tag.phase_of(at(1200), 0.25), Phase::Measure);
        tag.close(at(2000));
        tag.close(at(2100));
        assert_eq!(
            tag.phase_of(at(2100), 0.25),
            Phase::Measure,
            "centred before the end"
        );
        assert_eq!(tag.phase_of(at(2200), 0.25), Phase::Warmup);
        let quarter = Duration::from_millis(250);
        assert!(!tag.done(at(2100), quarter));
        assert!(tag.done(at(2200), quarter));
    }

    #[test]
    fn the_grain_is_a_quarter_of_a_short_window() {
        let ms = Duration::from_millis;
        assert_eq!(live_interval(ms(1000)), ms(250));
        assert_eq!(live_interval(ms(5000)), ms(250));
        assert_eq!(live_interval(ms(400)), ms(100));
        assert_eq!(live_interval(ms(200)), ms(50));
    }
}
