//! The capacity search of one load (run.json `runs[].search`): open-loop steps at rising
//! offered rates, then a bisection, until the arm no longer sustains what it is offered or its
//! p99 passes the bound. Its figure is the highest rate sustained under the bound.
use serde::{Deserialize, Serialize};

use crate::breakdown::{rate_text, Verdict};

/// What a step must deliver to count as sustained: this share of the offered rate served,
/// no failed request, and p99 at or under the bound.
pub const SUSTAINED_SHARE: f64 = 0.95;

/// The loader's CPU share (of its one thread) at which a step that failed is the loader's
/// limit, not the server's.
pub const LOADER_SATURATED: f64 = 0.85;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Search {
    /// The p99 bound every step was judged against, in us, and where it came from.
    pub bound_us: u64,
    pub bound_from: BoundFrom,
    /// The p99 of this load's unloaded step (a low open-loop rate), in us.
    pub unloaded_p99_us: Option<u64>,
    /// Every step in the order it ran; the first is the unloaded one.
    pub steps: Vec<Step>,
    /// The step at the capacity: the highest offered rate sustained (an index in `steps`).
    pub knee: Option<usize>,
    pub end: SearchEnd,
}

/// How a run searched (run.json `search`): the flags every load's search ran with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Asked {
    /// `--p99` in us; absent: 1 ms or 10x the unloaded p99 of each protocol's first load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_us: Option<u64>,
    /// `--rates`: the lowest and highest rate a step may offer.
    pub rates: [f64; 2],
    /// Measured time and warm-up of each step.
    pub step_s: f64,
    pub step_warmup_s: f64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BoundFrom {
    /// `--p99` as given.
    Flag,
    /// The 1 ms floor: 10x the unloaded p99 was below it.
    #[default]
    Floor,
    /// 10x the unloaded p99 of the protocol's first load.
    TenTimesUnloaded,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepKind {
    /// A low rate, for the unloaded p99.
    #[default]
    Unloaded,
    /// Rising rates, each a multiple of the last.
    Coarse,
    /// Between the highest sustained rate and the lowest one that was not.
    Bisect,
}

/// Why a search stopped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum SearchEnd {
    /// The knee is bracketed: `knee` sustained, a rate above it did not.
    #[default]
    Knee,
    /// The loader's CPU saturated at the lowest rate the arm failed: the server's capacity
    /// is above the knee, which is then only a lower bound.
    LoaderBound,
    /// The highest rate the search may offer was sustained.
    Ceiling,
    /// No step but the unloaded one was sustained (or not even that one).
    NothingSustained { why: String },
}

/// One open-loop step: what was offered, what came back, and how busy each CPU was.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Step {
    pub kind: StepKind,
    pub offered_per_s: f64,
    pub req_per_s: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub errors: u64,
    pub sustained: bool,
    /// Why it was not sustained, in a few words ("p99 2.10 ms over the 1.00 ms bound").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
    /// Per CPU, the busy share of the measured window (0 to 1).
    pub busy: Vec<f64>,
    /// The loader's CPU seconds per second of the window (read from outside; 1.0 = one CPU).
    pub loader_cpu: f64,
    /// What limited this step, from its CPUs' time split.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

impl Step {
    /// Judges the step against the bound; sets `sustained` and `why_not`.
    pub fn judge(&mut self, bound_us: u64) {
        let served = self.req_per_s / self.offered_per_s.max(1e-9);
        self.why_not = if self.errors > 0 {
            Some(format!("{} failed requests", self.errors))
        } else if served < SUSTAINED_SHARE {
            Some(format!(
                "served {:.0} % of the offered rate",
                served * 100.0
            ))
        } else if self.p99_us > bound_us {
            Some(format!(
                "p99 {} over the {} bound",
                ms(self.p99_us),
                ms(bound_us)
            ))
        } else {
            None
        };
        self.sustained = self.why_not.is_none();
    }

    /// Whether the loader, not the server, was the limit of this step.
    pub fn loader_limited(&self) -> bool {
        self.loader_cpu >= LOADER_SATURATED
            || self
                .verdict
                .as_ref()
                .is_some_and(|v| v.bound == "loader-bound")
    }
}

/// "1.00 ms" / "250 us".
pub fn ms(us: u64) -> String {
    if us >= 1000 {
        format!("{:.2} ms", us as f64 / 1000.0)
    } else {
        format!("{us} us")
    }
}

impl Search {
    /// The highest sustained step: the load's capacity.
    pub fn knee_step(&self) -> Option<&Step> {
        self.knee.and_then(|k| self.steps.get(k))
    }

    /// The capacity in req/s (what the knee step served).
    pub fn capacity(&self) -> Option<f64> {
        self.knee_step().map(|s| s.req_per_s)
    }

    /// The lowest offered rate that was not sustained, above the knee: what limited the arm
    /// is read from it.
    pub fn first_failed(&self) -> Option<&Step> {
        let knee = self.knee_step().map_or(0.0, |s| s.offered_per_s);
        self.steps
            .iter()
            .filter(|s| s.kind != StepKind::Unloaded && !s.sustained && s.offered_per_s > knee)
            .min_by(|a, b| a.offered_per_s.total_cmp(&b.offered_per_s))
    }

    /// What limited the arm: the verdict of the lowest rate it did not sustain. Where no CPU
    /// was saturated there, the verdict's own sentence (written for a single load) gives way
    /// to why the step failed.
    pub fn limit(&self) -> Option<Verdict> {
        let failed = self.first_failed()?;
        let mut v = failed.verdict.clone()?;
        if matches!(v.bound.as_str(), "offered-load-bound" | "wait-bound") {
            let cpus = v.text.split(" → ").next().unwrap_or_default().to_string();
            let idle = v.text.rsplit("; ").next().unwrap_or_default();
            v.bound = "latency-bound".into();
            v.text = format!(
                "{cpus} → latency-bound at {} req/s offered, with no CPU saturated: {}; {idle}",
                rate_text(failed.offered_per_s),
                failed.why_not.as_deref().unwrap_or("not sustained")
            );
        }
        Some(v)
    }

    /// Ends the search: the knee found among the steps, and why it stopped.
    pub fn finish(&mut self, ceiling_reached: bool) {
        self.knee = self
            .steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.kind != StepKind::Unloaded && s.sustained)
            .max_by(|a, b| a.1.offered_per_s.total_cmp(&b.1.offered_per_s))
            .map(|(i, _)| i);
        self.end = match (self.knee, self.first_failed()) {
            (None, failed) => SearchEnd::NothingSustained {
                why: failed
                    .or(self.steps.first())
                    .and_then(|s| s.why_not.clone())
                    .unwrap_or_else(|| "no step ran".into()),
            },
            (Some(_), Some(f)) if f.loader_limited() => SearchEnd::LoaderBound,
            (Some(_), Some(_)) => SearchEnd::Knee,
            (Some(_), None) if ceiling_reached => SearchEnd::Ceiling,
            (Some(_), None) => SearchEnd::Knee,
        };
    }

    /// The search's outcome in one sentence, for a report's table.
    pub fn outcome(&self) -> String {
        let cap = self.capacity().map_or("-".into(), rate_text);
        match &self.end {
            SearchEnd::Knee => format!("{cap} req/s"),
            SearchEnd::LoaderBound => {
                format!("loader-bound at {cap} req/s: the server's capacity is above this")
            }
            SearchEnd::Ceiling => format!("{cap} req/s: the search's ceiling, capacity above"),
            SearchEnd::NothingSustained { why } => format!("no rate sustained ({why})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(kind: StepKind, offered: f64, served: f64, p99: u64) -> Step {
        let mut s = Step {
            kind,
            offered_per_s: offered,
            req_per_s: served,
            p99_us: p99,
            ..Default::default()
        };
        s.judge(1000);
        s
    }

    #[test]
    fn a_step_is_sustained_only_under_the_bound_served_and_without_errors() {
        assert!(step(StepKind::Coarse, 10_000.0, 9_990.0, 400).sustained);
        let late = step(StepKind::Coarse, 10_000.0, 9_990.0, 2100);
        assert_eq!(
            late.why_not.as_deref(),
            Some("p99 2.10 ms over the 1.00 ms bound")
        );
        let short = step(StepKind::Coarse, 10_000.0, 8_000.0, 400);
        assert_eq!(
            short.why_not.as_deref(),
            Some("served 80 % of the offered rate")
        );
        let mut failed = step(StepKind::Coarse, 10_000.0, 9_990.0, 400);
        failed.errors = 3;
        failed.judge(1000);
        assert!(!failed.sustained);
    }

    #[test]
    fn the_knee_is_the_highest_sustained_rate_and_the_loader_is_named() {
        let mut s = Search {
            bound_us: 1000,
            steps: vec![
                step(StepKind::Unloaded, 1000.0, 1000.0, 100),
                step(StepKind::Coarse, 20_000.0, 20_000.0, 200),
                step(StepKind::Coarse, 40_000.0, 30_000.0, 5000),
                step(StepKind::Bisect, 30_000.0, 29_900.0, 800),
                step(StepKind::Bisect, 35_000.0, 34_000.0, 3000),
            ],
            ..Default::default()
        };
        s.finish(false);
        assert_eq!(s.knee, Some(3));
        assert_eq!(s.capacity(), Some(29_900.0));
        assert_eq!(s.first_failed().unwrap().offered_per_s, 35_000.0);
        assert_eq!(s.end, SearchEnd::Knee);
        s.steps[4].loader_cpu = 0.97;
        s.finish(false);
        assert_eq!(s.end, SearchEnd::LoaderBound);
        assert!(s.outcome().starts_with("loader-bound at 30k req/s"));
        let mut none = Search {
            steps: vec![
                step(StepKind::Unloaded, 1000.0, 1000.0, 100),
                step(StepKind::Coarse, 2000.0, 2000.0, 4000),
            ],
            ..Default::default()
        };
        none.finish(false);
        assert!(matches!(none.end, SearchEnd::NothingSustained { .. }));
        assert!(none.outcome().contains("p99 4.00 ms"), "{}", none.outcome());
    }

    #[test]
    fn a_search_round_trips_through_json() {
        let mut s = Search {
            bound_us: 1000,
            bound_from: BoundFrom::TenTimesUnloaded,
            unloaded_p99_us: Some(120),
            steps: vec![step(StepKind::Coarse, 2000.0, 2000.0, 300)],
            ..Default::default()
        };
        s.finish(true);
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains(r#""end":{"kind":"ceiling"}"#), "{text}");
        assert_eq!(serde_json::from_str::<Search>(&text).unwrap(), s);
    }
}
