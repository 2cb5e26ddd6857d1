//! How many repetitions a comparison measured and why it stopped there (`--reps`,
//! `--budget`): the report derives each verdict's confidence level from it, since a run that
//! looked after every repetition needs a stricter level per look than one that looked once.
use serde::{Deserialize, Serialize};

/// `--reps auto`: repetitions until every arm's answer is settled.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sequential {
    /// The first look: no arm is judged before this many repetitions.
    pub min: u32,
    /// The last look the level was derived for (`--max-reps`).
    pub max: u32,
    /// `--budget`, seconds: no repetition starts that would end past it.
    pub budget_s: f64,
    pub ended: Ended,
}

/// Why a sequential run stopped.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ended {
    /// Every arm's answer was settled.
    #[default]
    Settled,
    /// The budget ran out first.
    Budget,
    /// The most repetitions allowed were measured.
    MaxReps,
}

impl Ended {
    pub fn said(&self) -> &'static str {
        match self {
            Ended::Settled => "every answer settled",
            Ended::Budget => "the budget ran out first",
            Ended::MaxReps => "the most repetitions allowed were measured",
        }
    }
}

/// `--interleave`: how each repetition measured its arms. One continuous load per protocol
/// and repetition, the arms switched in place under it one after another (rotated), a settle
/// window after each switch dropped, then `window_s` measured, cut at the load's own live
/// lines. Absent: every load had its own server and load generator (one arm per load).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Interleaved {
    /// Measured time of each arm's window, seconds.
    pub window_s: f64,
    /// Dropped after each switch, from the moment the arm was in place, seconds.
    pub settle_s: f64,
    /// The live lines' interval: the grain the windows are cut at, seconds.
    pub live_interval_s: f64,
}
