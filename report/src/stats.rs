//! The statistics behind a verdict: Student's t distribution, a paired interval on log ratios,
//! and the per-look level of a sequential run (a Pocock-type constant, derived by simulation).
//! Written here rather than taken from a crate: the one statistics crate of the field
//! (statrs) brings nalgebra, a long build on a 2-CPU machine, for three functions.
use std::sync::{Mutex, OnceLock};

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9: about 15 digits).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1-x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let a = G[1..]
        .iter()
        .enumerate()
        .fold(G[0], |a, (i, g)| a + g / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function I_x(a, b), by its continued fraction (Lentz).
fn inc_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The fraction converges fast for x < (a+1)/(a+b+2); use the symmetry otherwise.
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - inc_beta(1.0 - x, b, a);
    }
    const TINY: f64 = 1e-300;
    let (mut c, mut d) = (1.0, 1.0 - (a + b) * x / (a + 1.0));
    d = 1.0 / if d.abs() < TINY { TINY } else { d };
    let mut f = d;
    for m in 1..300 {
        let m = m as f64;
        for num in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + num * d;
            d = 1.0 / if d.abs() < TINY { TINY } else { d };
            c = 1.0 + num / c;
            if c.abs() < TINY {
                c = TINY;
            }
            f *= c * d;
        }
        if (c * d - 1.0).abs() < 1e-15 {
            break;
        }
    }
    front * f / a
}

/// P(|T| > t) for Student's t with `df` degrees of freedom: the two-sided p-value of t.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    inc_beta(df / (df + t * t), df / 2.0, 0.5)
}

/// The t with P(|T| > t) = `alpha` (`df` degrees of freedom), by bisection on the p-value.
pub fn t_critical(alpha: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 1e6_f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_two_sided_p(mid, df) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-10 * hi.max(1.0) {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// Mean and sample standard deviation.
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var.sqrt())
}

/// A two-sided interval on the mean of `logs` (each a repetition's log ratio) at level
/// 1 - `alpha`: (mean, lo, hi) in logs. None below 2 values, which have no spread.
pub fn t_interval(logs: &[f64], alpha: f64) -> Option<(f64, f64, f64)> {
    if logs.len() < 2 {
        return None;
    }
    let (m, sd) = mean_sd(logs);
    let half = t_critical(alpha, logs.len() as f64 - 1.0) * sd / (logs.len() as f64).sqrt();
    Some((m, m - half, m + half))
}

/// A small deterministic generator (splitmix64): the simulations here and in the tests are
/// the same on every run, so a derived constant is a constant.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform on (0, 1).
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Paths simulated to derive a sequential level: enough that the family level 5 % over 8
/// arms (0.625 % a path) rests on about 250 paths past it.
const PATHS: usize = 40_000;

/// The per-look two-sided level of a sequential run that looks after each repetition from
/// `first` to `last`, such that the chance any look's t interval misses the truth is
/// `alpha` overall (a Pocock-type boundary: the same nominal level at every look).
///
/// Derived, not tabled: under the null, each of [`PATHS`] simulated paths of normal log
/// ratios has a smallest p-value over its looks; the level is the `alpha`-quantile of those
/// minima. The t statistic does not depend on the noise's scale, so one simulation serves
/// every spread. A single look (`first == last`) is exactly `alpha`.
pub fn per_look_alpha(alpha: f64, first: u32, last: u32) -> f64 {
    let (first, last) = (first.max(2), last.max(2));
    if last <= first {
        return alpha;
    }
    let minima = min_p_values(first, last);
    let k = ((alpha * minima.len() as f64).floor() as usize).min(minima.len() - 1);
    minima[k].min(alpha)
}

type Minima = Vec<((u32, u32), std::sync::Arc<Vec<f64>>)>;

/// The sorted smallest p-values per simulated path, cached per (first, last).
fn min_p_values(first: u32, last: u32) -> std::sync::Arc<Vec<f64>> {
    static CACHE: OnceLock<Mutex<Minima>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
    if let Some((_, v)) = cache
        .lock()
        .unwrap()
        .iter()
        .find(|(k, _)| *k == (first, last))
    {
        return v.clone();
    }
    let mut rng = Rng::new(0x5EED_0000 ^ ((first as u64) << 32) ^ last as u64);
    let mut minima: Vec<f64> = (0..PATHS)
        .map(|_| {
            let (mut sum, mut sq) = (0.0, 0.0);
            let mut min_p = 1.0_f64;
            for n in 1..=last {
                let x = rng.normal();
                sum += x;
                sq += x * x;
                if n >= first {
                    let nf = n as f64;
                    let mean = sum / nf;
                    let var = ((sq - nf * mean * mean) / (nf - 1.0)).max(1e-300);
                    let t = mean / (var / nf).sqrt();
                    min_p = min_p.min(t_two_sided_p(t, nf - 1.0));
                }
            }
            min_p
        })
        .collect();
    minima.sort_by(f64::total_cmp);
    let minima = std::sync::Arc::new(minima);
    cache.lock().unwrap().push(((first, last), minima.clone()));
    minima
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_critical_values_match_the_tables() {
        // Two-sided 5 %: df 4 -> 2.776, df 6 -> 2.447, df 30 -> 2.042; 1 %: df 9 -> 3.250.
        for (alpha, df, want) in [
            (0.05, 4.0, 2.776_445),
            (0.05, 6.0, 2.446_912),
            (0.05, 30.0, 2.042_272),
            (0.01, 9.0, 3.249_836),
            (0.05, 1.0, 12.706_205),
        ] {
            let got = t_critical(alpha, df);
            assert!(
                (got - want).abs() < 1e-4,
                "t({alpha}, {df}) = {got}, want {want}"
            );
        }
        assert!((t_two_sided_p(1.959_964, 1e7) - 0.05).abs() < 1e-5);
    }

    #[test]
    fn an_interval_on_known_values() {
        let (m, lo, hi) = t_interval(&[0.1, 0.2, 0.3], 0.05).unwrap();
        // mean 0.2, sd 0.1, t(2) 4.303: half-width 0.2484.
        assert!((m - 0.2).abs() < 1e-12);
        assert!((hi - m - 0.248_414).abs() < 1e-4, "{lo} {hi}");
        assert!(t_interval(&[0.1], 0.05).is_none());
    }

    /// The values docs/experiment.md states for the default looks (5 to 20).
    #[test]
    fn the_documented_levels_for_the_default_looks() {
        let one = per_look_alpha(0.05, 5, 20);
        let five = per_look_alpha(0.01, 5, 20);
        assert!((one - 0.0100).abs() < 0.0005, "{one}");
        assert!((five - 0.0016).abs() < 0.0002, "{five}");
    }

    #[test]
    fn the_sequential_level_is_below_the_single_look_and_holds_its_error() {
        let single = per_look_alpha(0.05, 7, 7);
        assert_eq!(single, 0.05);
        let seq = per_look_alpha(0.05, 5, 20);
        // Sixteen looks: a Pocock boundary for 15-20 looks sits near 0.01 per look.
        assert!((0.006..0.02).contains(&seq), "{seq}");
        // Checked on fresh paths, not those it was derived from: the chance that any look
        // rejects a true null stays near 5 %.
        let mut rng = Rng::new(7);
        let paths = 4000;
        let rejected = (0..paths)
            .filter(|_| {
                let v: Vec<f64> = (0..20).map(|_| rng.normal()).collect();
                (5..=20).any(|n| {
                    let (m, sd) = mean_sd(&v[..n]);
                    t_two_sided_p(m / (sd / (n as f64).sqrt()), n as f64 - 1.0) < seq
                })
            })
            .count();
        let rate = rejected as f64 / paths as f64;
        assert!((0.035..0.065).contains(&rate), "{rate}");
    }
}
