//! Per-repetition ratios, summarised the same way in every bench that compares arms.

/// (median, min, max) of `v` (sorted in place).
pub fn summary(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}
