//! The HdrHistogram percentile-distribution text format (HdrHistogram's
//! outputPercentileDistribution, as wrk2 prints it and the HdrHistogram plotter reads it),
//! values in milliseconds from a histogram of microseconds.
use hdrhistogram::Histogram;
use std::fmt::Write;

pub fn percentile_distribution(h: &Histogram<u64>) -> String {
    let ms = |us: u64| us as f64 / 1000.0;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let mut total = 0u64;
    for v in h.iter_quantiles(5) {
        total += v.count_since_last_iteration();
        let q = v.quantile_iterated_to();
        if q < 1.0 {
            let _ = writeln!(
                o,
                "{:>12.3} {:>2.12} {:>10} {:>14.2}",
                ms(v.value_iterated_to()),
                q,
                total,
                1.0 / (1.0 - q)
            );
        } else {
            let _ = writeln!(
                o,
                "{:>12.3} {:>2.12} {:>10}",
                ms(v.value_iterated_to()),
                q,
                total
            );
        }
    }
    let _ = writeln!(
        o,
        "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
        h.mean() / 1000.0,
        h.stdev() / 1000.0
    );
    let _ = writeln!(
        o,
        "#[Max     = {:>12.3}, Total count    = {:>12}]",
        ms(h.max()),
        h.len()
    );
    let _ = writeln!(
        o,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        h.buckets(),
        h.distinct_values()
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_format() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for us in 1..=1000u64 {
            h.record(us * 10).unwrap();
        }
        let text = percentile_distribution(&h);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("Value") && lines[0].contains("1/(1-Percentile)"));
        assert_eq!(lines[1], "");
        let first: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(first, ["0.010", "0.000000000000", "1", "1.00"]);
        // Counts are cumulative and end at the total; the last row has no 1/(1-p) column.
        let rows: Vec<Vec<&str>> = lines[2..]
            .iter()
            .take_while(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().collect())
            .collect();
        let last = rows.last().unwrap();
        assert_eq!((last.len(), last[2]), (3, "1000"));
        assert_eq!(
            last[0], "10.007",
            "max in ms, at the histogram's 3-digit precision"
        );
        assert!(
            text.contains("#[Max     =       10.007, Total count    =         1000]"),
            "{text}"
        );
    }
}
