//! What the NIC itself lost, said in the answer: packets its ring or FIFO dropped before any
//! CPU saw them are in no figure of the tables, so a load with such loss is named where the
//! answer is read, with the counters that said so.
use rxsteer_records::{run::RunDoc, Proto};

/// One sentence per protocol where any load lost packets at the NIC: which arms, how many,
/// by which counters. None where no load did (or none read the interface).
pub fn drops_said(run: &RunDoc, proto: Proto) -> Option<String> {
    let (arms, _) = run.dims();
    let mut parts = Vec::new();
    for a in arms {
        let rows = run.of(a, proto);
        let lossy: Vec<_> = rows
            .iter()
            .filter_map(|r| r.nic_drops.as_ref().filter(|d| d.lost() > 0))
            .collect();
        if lossy.is_empty() {
            continue;
        }
        let lost: u64 = lossy.iter().map(|d| d.lost()).sum();
        let mut names: Vec<&str> = lossy
            .iter()
            .flat_map(|d| d.counters.iter().chain(&d.driver))
            .filter(|(_, v)| **v > 0)
            .map(|(k, _)| k.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        parts.push(format!(
            "{} lost {lost} packets at the NIC in {} of {} loads ({})",
            a.label(),
            lossy.len(),
            rows.len(),
            names.join(", ")
        ));
    }
    (!parts.is_empty()).then(|| {
        format!(
            "**The NIC dropped packets** over {}: {}. They never reached a CPU, so no figure \
             above counts them: a larger ring (`--ring max`) or a faster receive core is the \
             lever there.",
            proto.label(),
            parts.join("; ")
        )
    })
}
