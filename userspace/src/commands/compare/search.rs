//! The capacity search's plan: which open-loop rate each step offers. Coarse steps double the
//! rate from a start until one is not sustained, then a short bisection between the highest
//! sustained rate and the lowest that was not. Across a run, each protocol's bound is set
//! once (by its first load), and later loads start the climb at half the lowest knee found so
//! far, so they spend their steps near the knee. The steps themselves run in `mod.rs`.
use anyhow::Result;

use crate::refused::FlagRefused;
use std::collections::BTreeMap;

use rxsteer_records::{
    search::{BoundFrom, StepKind},
    Proto,
};

/// The unloaded step's rate: low enough to queue nothing on any box this runs on.
pub const UNLOADED_RATE: f64 = 1000.0;
/// Each coarse step offers this multiple of the last sustained one.
const FACTOR: f64 = 2.0;
/// At most this many bisection steps...
const BISECTIONS: u32 = 4;
/// ...and none once the bracket is this narrow (high / low).
const RESOLUTION: f64 = 1.04;
/// Without `--p99`: the bound is this many times the unloaded p99...
const UNLOADED_TIMES: u64 = 10;
/// ...and at least this (us).
const FLOOR_US: u64 = 1000;

/// `--rates LO..HI`: the offered rates a search may use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateRange {
    pub lo: f64,
    pub hi: f64,
}

impl Default for RateRange {
    fn default() -> Self {
        Self {
            lo: 2000.0,
            hi: 2_000_000.0,
        }
    }
}

/// `2000..500000`, `2k..1.5M`: both ends in 1..=10000000, low below high.
pub fn parse_rates(s: &str) -> Result<RateRange, String> {
    let bad =
        || format!("{s:?}: expected LO..HI requests per second, 1 <= LO < HI <= 10M (e.g. 2k..2M)");
    let (lo, hi) = s.split_once("..").ok_or_else(bad)?;
    let num = |t: &str| -> Option<f64> {
        let t = t.trim();
        let (digits, k) = match t.chars().last()? {
            'k' | 'K' => (&t[..t.len() - 1], 1e3),
            'm' | 'M' => (&t[..t.len() - 1], 1e6),
            _ => (t, 1.0),
        };
        digits.parse::<f64>().ok().map(|v| v * k)
    };
    let (lo, hi) = (num(lo).ok_or_else(bad)?, num(hi).ok_or_else(bad)?);
    if !(1.0..=1e7).contains(&lo) || !(1.0..=1e7).contains(&hi) || lo >= hi {
        return Err(bad());
    }
    Ok(RateRange { lo, hi })
}

/// One search's next rate, from what its steps sustained.
pub struct Planner {
    range: RateRange,
    start: f64,
    /// The highest rate sustained, and the lowest not sustained.
    good: Option<f64>,
    bad: Option<f64>,
    bisected: u32,
}

impl Planner {
    pub fn new(range: RateRange, start: f64) -> Self {
        Self {
            range,
            start: start.clamp(range.lo, range.hi),
            good: None,
            bad: None,
            bisected: 0,
        }
    }

    /// The next step, or None when the search is done.
    pub fn next(&self) -> Option<(StepKind, f64)> {
        let RateRange { lo, hi } = self.range;
        match (self.good, self.bad) {
            (None, None) => Some((StepKind::Coarse, self.start)),
            // Climbing: double until a rate fails, or the ceiling held.
            (Some(g), None) if g >= hi => None,
            (Some(g), None) => Some((StepKind::Coarse, (g * FACTOR).min(hi))),
            // Even the first rate failed: step down, to the floor.
            (None, Some(b)) if b <= lo => None,
            (None, Some(b)) => Some((StepKind::Coarse, (b / FACTOR / FACTOR).max(lo))),
            (Some(g), Some(b)) if self.bisected >= BISECTIONS || b / g <= RESOLUTION => None,
            (Some(g), Some(b)) => Some((StepKind::Bisect, ((g + b) / 2.0).round())),
        }
    }

    /// What the step at `rate` did.
    pub fn record(&mut self, kind: StepKind, rate: f64, sustained: bool) {
        if kind == StepKind::Bisect {
            self.bisected += 1;
        }
        if sustained {
            self.good = Some(self.good.map_or(rate, |g| g.max(rate)));
        } else {
            self.bad = Some(self.bad.map_or(rate, |b| b.min(rate)));
        }
        // A rate above one that failed, sustained after all (noise): the bracket stays
        // ordered, the failure above it stands.
        if let (Some(g), Some(b)) = (self.good, self.bad) {
            if g >= b {
                self.bad = None;
            }
        }
    }

    /// Whether the search ended by sustaining its ceiling.
    pub fn at_ceiling(&self) -> bool {
        self.bad.is_none() && self.good.is_some_and(|g| g >= self.range.hi)
    }
}

/// What a run's searches share, per protocol: the bound, and the knees found so far.
pub struct Plans {
    range: RateRange,
    /// `--p99` in us.
    asked_us: Option<u64>,
    bounds: BTreeMap<Proto, (u64, BoundFrom)>,
    knees: BTreeMap<Proto, f64>,
}

impl Plans {
    pub fn new(range: RateRange, asked_us: Option<u64>) -> Self {
        Self {
            range,
            asked_us,
            bounds: BTreeMap::new(),
            knees: BTreeMap::new(),
        }
    }

    pub fn range(&self) -> RateRange {
        self.range
    }

    /// The protocol's bound: set by its first load's unloaded p99 (or `--p99`), then kept,
    /// so every arm of a protocol is judged against the same bound.
    pub fn bound(&mut self, proto: Proto, unloaded_us: u64) -> Result<(u64, BoundFrom)> {
        if let Some(b) = self.bounds.get(&proto) {
            return Ok(*b);
        }
        let b = match self.asked_us {
            Some(asked) if asked <= unloaded_us => {
                // A `--p99` below what the server does unloaded: nothing could be sustained under it.
                return Err(FlagRefused(format!(
                    "--p99 {}: at or below the unloaded p99 of {} ({}, the first load), so no \
                     rate could be sustained under it; give a bound above it",
                    rxsteer_records::search::ms(asked),
                    proto.label(),
                    rxsteer_records::search::ms(unloaded_us)
                ))
                .into());
            }
            Some(asked) => (asked, BoundFrom::Flag),
            None if unloaded_us * UNLOADED_TIMES > FLOOR_US => {
                (unloaded_us * UNLOADED_TIMES, BoundFrom::TenTimesUnloaded)
            }
            None => (FLOOR_US, BoundFrom::Floor),
        };
        self.bounds.insert(proto, b);
        Ok(b)
    }

    /// Where a search of this protocol starts climbing: at the range's floor for the first,
    /// then at half the lowest knee found so far.
    pub fn start(&self, proto: Proto) -> f64 {
        self.knees
            .get(&proto)
            .map_or(self.range.lo, |k| (k / FACTOR).max(self.range.lo))
    }

    pub fn found(&mut self, proto: Proto, knee: Option<f64>) {
        if let Some(k) = knee {
            let e = self.knees.entry(proto).or_insert(k);
            *e = e.min(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a planner against a server that sustains every rate up to `capacity`.
    fn search(start: f64, capacity: f64) -> (Vec<f64>, Option<f64>, bool) {
        let mut p = Planner::new(RateRange::default(), start);
        let mut offered = Vec::new();
        let mut best = None;
        while let Some((kind, r)) = p.next() {
            assert!(offered.len() < 40, "the search must end: {offered:?}");
            offered.push(r);
            let ok = r <= capacity;
            if ok {
                best = Some(best.map_or(r, |b: f64| b.max(r)));
            }
            p.record(kind, r, ok);
        }
        (offered, best, p.at_ceiling())
    }

    #[test]
    fn the_climb_doubles_then_bisects_close_to_the_knee() {
        let (offered, best, ceiling) = search(2000.0, 50_000.0);
        assert_eq!(
            &offered[..6],
            [2000.0, 4000.0, 8000.0, 16000.0, 32000.0, 64000.0]
        );
        let best = best.unwrap();
        assert!((46_000.0..=50_000.0).contains(&best), "{best} {offered:?}");
        assert!(offered.len() <= 6 + BISECTIONS as usize, "{offered:?}");
        assert!(!ceiling);
    }

    #[test]
    fn a_start_above_the_knee_steps_down_and_the_ceiling_ends_it() {
        let (offered, best, _) = search(100_000.0, 30_000.0);
        assert_eq!(offered[..2], [100_000.0, 25_000.0]);
        assert!(best.unwrap() >= 25_000.0);
        let (_, none, _) = search(2000.0, 10.0);
        assert_eq!(none, None);
        let (offered, best, ceiling) = search(1_500_000.0, 1e9);
        assert_eq!(offered, [1_500_000.0, 2_000_000.0]);
        assert_eq!(best, Some(2_000_000.0));
        assert!(ceiling);
    }

    #[test]
    fn rates_are_parsed_and_refused_with_the_range() {
        assert_eq!(
            parse_rates("2k..1.5M").unwrap(),
            RateRange {
                lo: 2000.0,
                hi: 1_500_000.0
            }
        );
        for bad in ["5000..100", "100..100", "0..100", "1..20M", "fast", "1..x"] {
            assert!(
                parse_rates(bad)
                    .unwrap_err()
                    .contains("1 <= LO < HI <= 10M"),
                "{bad}"
            );
        }
    }

    #[test]
    fn one_bound_per_protocol_from_its_first_load() {
        let mut p = Plans::new(RateRange::default(), None);
        assert_eq!(p.bound(Proto::Http, 60).unwrap(), (1000, BoundFrom::Floor));
        assert_eq!(
            p.bound(Proto::Http, 900).unwrap(),
            (1000, BoundFrom::Floor),
            "kept"
        );
        assert_eq!(
            p.bound(Proto::Zap, 250).unwrap(),
            (2500, BoundFrom::TenTimesUnloaded)
        );
        assert_eq!(p.start(Proto::Http), 2000.0);
        p.found(Proto::Http, Some(80_000.0));
        p.found(Proto::Http, Some(60_000.0));
        assert_eq!(p.start(Proto::Http), 30_000.0);
        let mut asked = Plans::new(RateRange::default(), Some(100));
        let e = asked.bound(Proto::Http, 180).unwrap_err();
        assert!(e.is::<FlagRefused>());
        assert!(
            e.to_string().starts_with("--p99 100 us: at or below"),
            "{e}"
        );
        assert_eq!(
            Plans::new(RateRange::default(), Some(500))
                .bound(Proto::Zap, 100)
                .unwrap(),
            (500, BoundFrom::Flag)
        );
    }
}
