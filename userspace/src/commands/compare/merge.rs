//! Several loaders' rxload results as one: counts and rates added, errors added by kind, and
//! the latency histograms merged exactly from their recorded buckets (rxload's
//! `latency_us.histogram`), so the merged p99 is the p99 of every request, not an average of
//! per-loader percentiles.
use anyhow::{bail, Result};
use hdrhistogram::Histogram;
use rxsteer_records::{load::Quantiles, LoadResult};

pub fn merge(loads: &[LoadResult]) -> Result<LoadResult> {
    let (first, rest) = match loads {
        [] => bail!("no loader results to merge"),
        [one] => return Ok(one.clone()),
        [first, rest @ ..] => (first, rest),
    };
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let mut m = first.clone();
    m.requests = 0;
    m.req_per_s = 0.0;
    m.errors.clear();
    m.status.clear();
    // Every loader's account added up; unknown when one loader kept none.
    m.accounting = loads.iter().try_fold(
        rxsteer_records::load::Accounting::default(),
        |mut sum, l| {
            sum.add(l.accounting.as_ref()?);
            Some(sum)
        },
    );
    let mut allocs = 0.0;
    for l in std::iter::once(first).chain(rest) {
        if l.latency_us.histogram.is_empty() && l.requests > 0 {
            bail!("an rxload result without latency_us.histogram (rxload too old?)");
        }
        for &[v, n] in &l.latency_us.histogram {
            h.record_n(v.clamp(1, 60_000_000), n)?;
        }
        m.requests += l.requests;
        m.req_per_s += l.req_per_s;
        m.bytes_in += l.bytes_in;
        m.bytes_out += l.bytes_out;
        m.reconnects += l.reconnects;
        allocs += l.client.allocs_per_request * l.requests as f64;
        for (k, n) in &l.errors {
            *m.errors.entry(k.clone()).or_default() += n;
        }
        for (k, n) in &l.status {
            *m.status.entry(*k).or_default() += n;
        }
    }
    let q = |p: f64| {
        if h.is_empty() {
            0
        } else {
            h.value_at_quantile(p)
        }
    };
    m.latency_us.mean = h.mean();
    m.latency_us.quantiles = Quantiles {
        p50: q(0.5),
        p90: q(0.9),
        p99: q(0.99),
        p999: q(0.999),
        p9999: q(0.9999),
        max: h.max(),
    };
    m.latency_us.histogram = h
        .iter_recorded()
        .map(|v| [v.value_iterated_to(), v.count_at_value()])
        .collect();
    m.client.allocs_per_request = allocs / (m.requests.max(1) as f64);
    m.loaders = Some(loads.len() as u32);
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(values: &[(u64, u64)], rate: f64, read_errors: u64) -> LoadResult {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
        let mut l = LoadResult {
            requests: h.len(),
            req_per_s: rate,
            ..Default::default()
        };
        l.errors = [
            ("read".to_string(), read_errors),
            ("connect".to_string(), 0),
        ]
        .into();
        l.latency_us.histogram = h
            .iter_recorded()
            .map(|v| [v.value_iterated_to(), v.count_at_value()])
            .collect();
        l
    }

    #[test]
    fn merged_percentiles_are_those_of_every_request() {
        // Loader A: 980 fast requests; loader B: 20 slow ones. Each alone has a p99 of its
        // own kind; together the p99 falls among the slow ones (the top 1 % of 1000).
        let a = load(&[(100, 980)], 1000.0, 1);
        let b = load(&[(5000, 20)], 20.0, 2);
        let m = merge(&[a, b]).unwrap();
        assert_eq!(m.requests, 1000);
        assert_eq!(m.req_per_s, 1020.0);
        assert_eq!(m.errors["read"], 3);
        assert_eq!(m.loaders, Some(2));
        let p99 = m.latency_us.quantiles.p99;
        assert!((4990..=5010).contains(&p99), "{p99}");
        let p50 = m.latency_us.quantiles.p50;
        assert!((99..=101).contains(&p50), "{p50}");
    }

    #[test]
    fn one_loader_is_its_own_result_and_none_is_an_error() {
        let a = load(&[(100, 10)], 10.0, 0);
        assert_eq!(merge(std::slice::from_ref(&a)).unwrap(), a);
        assert!(merge(&[]).is_err());
        let no_histogram = LoadResult {
            requests: 5,
            ..Default::default()
        };
        assert!(merge(&[no_histogram.clone(), no_histogram])
            .unwrap_err()
            .to_string()
            .contains("histogram"));
    }
}
