//! How far a sampled run count may be from the kernel's. The windows' runs are not binomial:
//! polls and softirqs come in bursts tens of milliseconds long, so a tenth of the time sees
//! a count that varies between windows several times as much as runs falling at random
//! would. Fresh-clone CI guests read -13 % against a 7 % binomial bound with only 3 windows,
//! and -4.1 % against 4.0 % with 12 under a paced load; the signs varied from run to run,
//! so it is spread, not bias (results/2026-12-06-ci-selftest-failures). The bound is
//! therefore taken from the windows themselves: how much the scaled count moves from one
//! interval to the next.
use rxsteer_records::{bpf_cost::BpfRuns, Sample};

/// The fewest windows whose spread is worth estimating: with fewer, the estimate itself is
/// too unsure (its Student's t at a 0.1 % level is above 6) to judge by.
pub const MIN_WINDOWS: usize = 10;

/// The level at which a sampled count that is right fails all the same.
const ALPHA: f64 = 0.001;

/// One program's scaled runs in each sampled interval (0 where it did not run), in order.
pub fn runs_by_window(samples: &[Sample], program: &str) -> Vec<f64> {
    samples
        .iter()
        .filter(|s| s.bpf_window_s.is_some())
        .filter_map(|s| match &s.bpf {
            Some(BpfRuns::Measured(runs)) => Some(
                runs.iter()
                    .filter(|p| p.name == program)
                    .map(|p| p.runs as f64)
                    .sum(),
            ),
            _ => None,
        })
        .collect()
}

/// The share of the count a sampled total `Σ xs` may be off by when it is right, or why it
/// cannot be judged. The per-interval error's variance is at most half the mean squared
/// successive difference of the scaled counts (von Neumann): a slow change in the rate
/// cancels between neighbours, and whatever of it is left only widens the bound. The
/// total's error is the sum of `n` of them, scaled by Student's t at [`ALPHA`] with the
/// estimate's degrees of freedom (two thirds of `n - 1`: successive differences are not
/// independent). Never tighter than three binomial standard errors of counting a share
/// `on` of the time, nor than 1 %.
pub fn allowed_share(xs: &[f64], on: f64) -> Result<f64, String> {
    let n = xs.len();
    if n < MIN_WINDOWS {
        return Err(format!(
            "{n} sampled window(s): too few to know their spread, which sets how far a right \
             count may be off (at least {MIN_WINDOWS}: --duration {MIN_WINDOWS}s at a 1s \
             interval)"
        ));
    }
    let total: f64 = xs.iter().sum();
    if total <= 0.0 {
        return Err("no run fell in the sampled windows".into());
    }
    let mssd = xs.windows(2).map(|w| (w[1] - w[0]).powi(2)).sum::<f64>() / (n - 1) as f64;
    let per_interval = mssd / 2.0;
    let df = 2.0 * (n - 1) as f64 / 3.0;
    let t = rxsteer_report::stats::t_critical(ALPHA, df);
    let spread = t * (n as f64 * per_interval).sqrt() / total;
    Ok(spread.max(binomial(total, on)).max(0.01))
}

/// Three standard errors of a count of `n` runs, a share `on` of them falling in the
/// windows at random, as a share of `n`: sqrt(n (1 - on) / on) each.
fn binomial(n: f64, on: f64) -> f64 {
    if n <= 0.0 || on <= 0.0 || on >= 1.0 {
        return 0.0;
    }
    3.0 * (n * (1.0 - on) / on).sqrt() / n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_few_windows_are_not_judged() {
        let why = allowed_share(&[100.0; 9], 0.1).unwrap_err();
        assert!(why.contains("9 sampled window(s)"), "{why}");
        assert!(allowed_share(&[0.0; 12], 0.1).is_err());
    }

    #[test]
    fn a_steady_count_falls_back_to_counting_precision() {
        // No spread between windows: the binomial bound of 12 000 runs at a tenth.
        let share = allowed_share(&[1000.0; 12], 0.1).unwrap();
        let binomial = 3.0 * (12_000.0f64 * 0.9 / 0.1).sqrt() / 12_000.0;
        assert!((share - binomial).abs() < 1e-12, "{share} vs {binomial}");
    }

    #[test]
    fn bursty_windows_widen_the_bound_and_a_slow_trend_does_not() {
        // Alternating 800/1200: each window 20 % off, far past binomial.
        let bursty: Vec<f64> = (0..12)
            .map(|i| if i % 2 == 0 { 800.0 } else { 1200.0 })
            .collect();
        let wide = allowed_share(&bursty, 0.1).unwrap();
        assert!(wide > 0.15, "{wide}");
        // A rate rising steadily 1000 -> 1110 moves each neighbour by 10 only.
        let trend: Vec<f64> = (0..12).map(|i| 1000.0 + 10.0 * i as f64).collect();
        let narrow = allowed_share(&trend, 0.1).unwrap();
        assert!(narrow < 0.1, "{narrow}");
    }

    #[test]
    fn the_series_is_one_programs_scaled_runs_with_zeros_where_it_did_not_run() {
        use rxsteer_records::bpf_cost::ProgramRuns;
        let sample = |runs: Vec<(&str, u64)>, window: Option<f64>| Sample {
            bpf: Some(BpfRuns::Measured(
                runs.into_iter()
                    .map(|(name, runs)| ProgramRuns {
                        name: name.into(),
                        runs,
                        ns: 0,
                    })
                    .collect(),
            )),
            bpf_window_s: window,
            ..Sample::default()
        };
        let samples = [
            sample(vec![("a", 10), ("b", 3)], Some(0.1)),
            sample(vec![("b", 4)], Some(0.1)),
            sample(vec![("a", 99)], None), // no window: not a sampled interval
        ];
        assert_eq!(runs_by_window(&samples, "a"), [10.0, 0.0]);
        assert_eq!(runs_by_window(&samples, "b"), [3.0, 4.0]);
    }
}
