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
            .flat_map(|d| d.nonzero().map(|(k, _)| k))
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

/// The one queue's levers before the run, under each arm that changed one, and after: a row
/// per lever, what could not be read said below it. Nothing where the run predates them.
pub fn levers_section(o: &mut String, run: &RunDoc) -> std::fmt::Result {
    use std::fmt::Write;
    let Some(before) = run.setup.as_ref().and_then(|s| s.levers.as_ref()) else {
        return Ok(());
    };
    let after = run.setup.as_ref().and_then(|s| s.levers_after.as_ref());
    let (arms, _) = run.dims();
    let base = before.named();
    // Each arm's levers as its first load read them, where any differs from before.
    let under: Vec<(String, Vec<(String, String)>)> = arms
        .iter()
        .filter_map(|a| {
            let read = run
                .runs
                .iter()
                .find(|r| r.arm() == *a)
                .and_then(|r| r.levers.as_ref())?;
            let named = read.named();
            (named != base).then(|| (a.label(), named))
        })
        .collect();
    writeln!(o, "## The one queue's levers\n")?;
    writeln!(o, "Each lever of the interface as read before the first arm, under each arm that changed one (read at the end of its first load), and after the last arm; read by the ethtool ioctl, /proc/irq and cpufreq.\n")?;
    let mut names: Vec<String> = base.iter().map(|(n, _)| n.clone()).collect();
    for (_, named) in &under {
        for (n, _) in named {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    let value = |named: &[(String, String)], n: &str| {
        named
            .iter()
            .find(|(k, _)| k == n)
            .map_or("-".to_string(), |(_, v)| v.clone())
    };
    let mut header = vec!["lever".to_string(), "before".to_string()];
    header.extend(under.iter().map(|(a, _)| format!("under {a}")));
    header.push("after".to_string());
    writeln!(o, "| {} |", header.join(" | "))?;
    writeln!(o, "|{}", "---|".repeat(header.len()))?;
    let after_named = after.map(|a| a.named());
    for n in &names {
        let mut cells = vec![n.clone(), value(&base, n)];
        cells.extend(under.iter().map(|(_, named)| value(named, n)));
        cells.push(
            after_named
                .as_deref()
                .map_or("not read".into(), |a| value(a, n)),
        );
        writeln!(o, "| {} |", cells.join(" | "))?;
    }
    writeln!(o)?;
    if under.is_empty() {
        writeln!(o, "No arm changed a lever here.\n")?;
    }
    if !before.missing.is_empty() {
        writeln!(o, "Not applicable here: {}.\n", before.missing.join("; "))?;
    }
    if after.is_some_and(|a| a != before) {
        writeln!(o, "**The levers after the run differ from before it**: compare the columns; `rxsteer restore` puts back what rxsteer changed.\n")?;
    }
    Ok(())
}
