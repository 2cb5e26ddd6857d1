//! Several loaders' rxload results as one: counts and rates added, errors added by kind, and
//! the latency histograms merged exactly from their recorded buckets (rxload's
//! `latency_us.histogram`), so the merged p99 is the p99 of every request, not an average of
//! per-loader percentiles.
use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};

pub fn merge(loads: &[Value]) -> Result<Value> {
    match loads {
        [] => bail!("no loader results to merge"),
        [one] => return Ok(one.clone()),
        _ => {}
    }
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let (mut requests, mut rate, mut allocs) = (0u64, 0f64, 0f64);
    let mut errors = Map::new();
    for l in loads {
        let buckets = l["latency_us"]["histogram"]
            .as_array()
            .context("an rxload result without latency_us.histogram (rxload too old?)")?;
        for b in buckets {
            let (v, n) = (b[0].as_u64().unwrap_or(0), b[1].as_u64().unwrap_or(0));
            h.record_n(v.clamp(1, 60_000_000), n)?;
        }
        let r = l["requests"].as_u64().unwrap_or(0);
        requests += r;
        rate += l["req_per_s"].as_f64().unwrap_or(0.0);
        allocs += l["client"]["allocs_per_request"].as_f64().unwrap_or(0.0) * r as f64;
        for (k, n) in l["errors"].as_object().into_iter().flatten() {
            let sum = errors.get(k).and_then(Value::as_u64).unwrap_or(0) + n.as_u64().unwrap_or(0);
            errors.insert(k.clone(), sum.into());
        }
    }
    let q = |p: f64| {
        if h.is_empty() {
            0
        } else {
            h.value_at_quantile(p)
        }
    };
    Ok(json!({
        "loaders": loads.len(),
        "requests": requests,
        "req_per_s": rate,
        "errors": errors,
        "latency_us": {
            "mean": h.mean(),
            "quantiles": {"p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "p99.9": q(0.999), "p99.99": q(0.9999), "max": h.max()},
            "histogram": h.iter_recorded().map(|v| [v.value_iterated_to(), v.count_at_value()]).collect::<Vec<_>>(),
        },
        "client": {"allocs_per_request": allocs / (requests.max(1) as f64)},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(values: &[(u64, u64)], rate: f64, read_errors: u64) -> Value {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
        json!({"requests": h.len(), "req_per_s": rate, "errors": {"read": read_errors, "connect": 0},
            "client": {"allocs_per_request": 0.0},
            "latency_us": {"histogram": h.iter_recorded().map(|v| [v.value_iterated_to(), v.count_at_value()]).collect::<Vec<_>>()}})
    }

    #[test]
    fn merged_percentiles_are_those_of_every_request() {
        // Loader A: 980 fast requests; loader B: 20 slow ones. Each alone has a p99 of its
        // own kind; together the p99 falls among the slow ones (the top 1 % of 1000).
        let a = load(&[(100, 980)], 1000.0, 1);
        let b = load(&[(5000, 20)], 20.0, 2);
        let m = merge(&[a, b]).unwrap();
        assert_eq!(m["requests"], 1000);
        assert_eq!(m["req_per_s"], 1020.0);
        assert_eq!(m["errors"]["read"], 3);
        assert_eq!(m["loaders"], 2);
        let p99 = m["latency_us"]["quantiles"]["p99"].as_u64().unwrap();
        assert!((4990..=5010).contains(&p99), "{p99}");
        let p50 = m["latency_us"]["quantiles"]["p50"].as_u64().unwrap();
        assert!((99..=101).contains(&p50), "{p50}");
    }

    #[test]
    fn one_loader_is_its_own_result_and_none_is_an_error() {
        let a = load(&[(100, 10)], 10.0, 0);
        assert_eq!(merge(std::slice::from_ref(&a)).unwrap(), a);
        assert!(merge(&[]).is_err());
        assert!(merge(&[json!({}), json!({})])
            .unwrap_err()
            .to_string()
            .contains("histogram"));
    }
}
