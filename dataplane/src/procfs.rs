//! What the kernel already counts, read from /proc: softnet_stat per CPU, /proc/softirqs, and
//! the run time of the kernel threads that do receive work outside softirq (cpumap kthreads
//! and threaded NAPI), which softirq accounting alone would miss.
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;

pub use rxsteer_records::sample::Softnet;

/// softnet_stat by CPU id. Columns are 32-bit hex counters (they wrap; deltas mask them).
pub fn softnet_stat() -> Result<BTreeMap<u32, Softnet>> {
    let text = std::fs::read_to_string("/proc/net/softnet_stat")
        .context("reading /proc/net/softnet_stat")?;
    parse_softnet(&text)
}

fn parse_softnet(text: &str) -> Result<BTreeMap<u32, Softnet>> {
    let mut rows = BTreeMap::new();
    for (line_no, line) in text.lines().enumerate() {
        let cols: Vec<u64> = line
            .split_whitespace()
            .map(|c| u64::from_str_radix(c, 16))
            .collect::<Result<_, _>>()
            .with_context(|| format!("softnet_stat line {}: {line:?}", line_no + 1))?;
        if cols.len() < 11 {
            bail!(
                "softnet_stat line {} has {} columns, expected 11 or more",
                line_no + 1,
                cols.len()
            );
        }
        // Since Linux 5.10 column 13 is the CPU id (offline CPUs have no row).
        let cpu = cols.get(12).map_or(line_no as u32, |&c| c as u32);
        rows.insert(
            cpu,
            Softnet {
                processed: cols[0],
                dropped: cols[1],
                time_squeeze: cols[2],
                received_rps: cols[9],
                flow_limit: cols[10],
            },
        );
    }
    Ok(rows)
}

/// The interface's own count of received frames (`/sys/class/net/IF/statistics/rx_packets`),
/// if this process's sysfs shows the interface.
pub fn nic_rx_packets(iface: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/sys/class/net/{iface}/statistics/rx_packets"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The interrupts the interface raised, by CPU id: the per-CPU counts of every numbered line
/// of /proc/interrupts that is one of its device's IRQs in sysfs ([`device_irqs`]), or whose
/// action is the interface (`eth0`) or one of its vectors (`eth0-rx-0`). The IRQ numbers
/// find the drivers that name their vectors after the device, not the interface
/// (virtio-net's `virtio0-input.0`, mlx5's `mlx5_comp0@pci:...`). Empty where it has none
/// (a veth raises no interrupt).
pub fn nic_interrupts(iface: &str) -> Result<BTreeMap<u32, u64>> {
    let text = std::fs::read_to_string("/proc/interrupts").context("reading /proc/interrupts")?;
    Ok(interrupts_of(&text, iface, &device_irqs(iface)))
}

/// The IRQ numbers sysfs lists for the interface's device: tune's
/// [`rxsteer_tune::irq::vectors`], the same vectors `--irq-cpu` moves. Empty for a virtual
/// interface and for a device that lists none (a platform device's lines are found by name
/// only).
pub fn device_irqs(iface: &str) -> Vec<u32> {
    rxsteer_tune::irq::vectors(std::path::Path::new("/"), iface)
}

/// What the interface counted as lost so far: its standard counters of loss and its driver's
/// own (`ethtool -S`, those whose names say so). None where this process's sysfs does not
/// show the interface.
pub fn nic_drops(iface: &str) -> Option<rxsteer_records::sample::NicDrops> {
    let dir = format!("/sys/class/net/{iface}/statistics");
    let counters: BTreeMap<String, u64> = rxsteer_records::sample::NIC_DROP_COUNTERS
        .iter()
        .filter_map(|name| {
            let v = std::fs::read_to_string(format!("{dir}/{name}")).ok()?;
            Some((name.to_string(), v.trim().parse().ok()?))
        })
        .collect();
    if counters.is_empty() {
        return None;
    }
    let driver = rxsteer_tune::ethtool::driver_stats(iface)
        .unwrap_or_default()
        .into_iter()
        .filter(|(name, _)| rxsteer_records::sample::is_drop_stat(name))
        .collect();
    Some(rxsteer_records::sample::NicDrops { counters, driver })
}

/// One IRQ's count on each CPU, from `/sys/kernel/irq/N/per_cpu_count` (every possible CPU,
/// in order): the kernel's count read another way than /proc/interrupts.
pub fn irq_per_cpu_count(irq: u32) -> Result<BTreeMap<u32, u64>> {
    let path = format!("/sys/kernel/irq/{irq}/per_cpu_count");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    text.trim()
        .split(',')
        .enumerate()
        .map(|(cpu, n)| {
            let n = n
                .parse()
                .with_context(|| format!("{path}: {n:?} is not a count"))?;
            Ok((cpu as u32, n))
        })
        .collect()
}

/// The CPU ids of a /proc table's header line (`CPU0 CPU1 ...`): /proc/interrupts and
/// /proc/softirqs list only online CPUs, so the columns are these, in order.
fn cpu_columns(header: Option<&str>) -> Vec<u32> {
    header
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|c| c.strip_prefix("CPU")?.parse().ok())
        .collect()
}

fn interrupts_of(text: &str, iface: &str, device_irqs: &[u32]) -> BTreeMap<u32, u64> {
    let mut lines = text.lines();
    let cpus = cpu_columns(lines.next());
    let mut out: BTreeMap<u32, u64> = BTreeMap::new();
    for line in lines {
        let mut fields = line.split_whitespace();
        let Some(irq) = fields.next() else { continue };
        // NMI, LOC and the like are no device's line.
        let Ok(irq) = irq.trim_end_matches(':').parse::<u32>() else {
            continue;
        };
        let counts: Vec<u64> = fields
            .by_ref()
            .take(cpus.len())
            .map_while(|v| v.parse().ok())
            .collect();
        let ours = device_irqs.contains(&irq)
            || fields
                .flat_map(|f| f.split(','))
                .any(|a| a == iface || a.strip_prefix(iface).is_some_and(|r| r.starts_with('-')));
        if ours {
            for (&cpu, n) in cpus.iter().zip(counts) {
                *out.entry(cpu).or_default() += n;
            }
        }
    }
    out
}

/// One vector's row of /proc/softirqs, by CPU id (`NET_RX`, `NET_TX`, ...).
pub fn proc_softirqs(vector: &str) -> Result<BTreeMap<u32, u64>> {
    let text = std::fs::read_to_string("/proc/softirqs").context("reading /proc/softirqs")?;
    let mut lines = text.lines();
    let header = cpu_columns(lines.next());
    let row = lines
        .find(|l| l.trim_start().starts_with(&format!("{vector}:")))
        .with_context(|| format!("no {vector} row in /proc/softirqs"))?;
    let values = row.split_whitespace().skip(1).map(|v| v.parse::<u64>());
    header
        .into_iter()
        .zip(values)
        .map(|(cpu, v)| Ok((cpu, v?)))
        .collect()
}

/// Which receive kernel thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KthreadKind {
    /// `cpumap/<cpu>/map:<id>`: runs the cpumap ring and the network stack on the target CPU.
    Cpumap,
    /// `napi/<dev>-<id>` of the observed interface: threaded NAPI (the lab's stand-in for a
    /// NIC's interrupt core).
    Napi,
    /// `napi/<other dev>-<id>`: another interface's (in the lab, the loader veth's).
    OtherNapi,
    /// `backlog_napi/<cpu>`: the backlog (RPS's steered packets among them) in a thread, on a
    /// kernel booted with `thread_backlog_napi`.
    Backlog,
}

/// The comm prefix of the backlog NAPI kthreads.
pub const BACKLOG_THREADS: &str = "backlog_napi/";

/// Whether this kernel runs the backlog in threads (booted with `thread_backlog_napi`, or
/// PREEMPT_RT): its `backlog_napi/N` kthreads exist.
pub fn backlog_threads() -> bool {
    kthreads_with_comm_prefix(&[BACKLOG_THREADS]).is_ok_and(|t| !t.is_empty())
}

/// A receive kthread's total on-CPU time and the CPU it last ran on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KthreadTime {
    pub pid: u32,
    pub kind: KthreadKind,
    pub cpu: u32,
    pub run_ns: u64,
}

/// Every kernel thread (by the kernel's flag, not its name) whose comm starts with one of
/// `prefixes`: (pid, comm), by pid. Tasks that exit between the listing and the read are skipped.
pub fn kthreads_with_comm_prefix(prefixes: &[&str]) -> Result<Vec<(u32, String)>> {
    rxsteer_tune::pin::kthreads_with_comm_prefix(prefixes).context("listing /proc")
}

/// Every cpumap, threaded-NAPI and backlog-NAPI kernel thread on the machine, with its run time from
/// /proc/PID/schedstat (nanoseconds, not tick-sampled). NAPI threads of `iface` are told
/// apart from other interfaces' (comm `napi/<dev>-<id>`, cut to 15 bytes by the kernel).
pub fn receive_kthreads(iface: &str) -> Result<Vec<KthreadTime>> {
    let own = rxsteer_tune::pin::napi_comm_prefix(iface);
    let mut out = Vec::new();
    for (pid, comm) in kthreads_with_comm_prefix(&["cpumap/", "napi/", BACKLOG_THREADS])? {
        let kind = if comm.starts_with("cpumap/") {
            KthreadKind::Cpumap
        } else if comm.starts_with(BACKLOG_THREADS) {
            KthreadKind::Backlog
        } else if comm.starts_with(&own) {
            KthreadKind::Napi
        } else {
            KthreadKind::OtherNapi
        };
        let (Ok(sched), Ok(stat)) = (
            std::fs::read_to_string(format!("/proc/{pid}/schedstat")),
            std::fs::read_to_string(format!("/proc/{pid}/stat")),
        ) else {
            continue;
        };
        let stat = rxsteer_tune::task::Stat::parse(&stat);
        if let (Some(run_ns), Some(cpu)) = (schedstat_run_ns(&sched), stat.map(|s| s.processor)) {
            out.push(KthreadTime {
                pid,
                kind,
                cpu,
                run_ns,
            });
        }
    }
    Ok(out)
}

fn schedstat_run_ns(s: &str) -> Option<u64> {
    s.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softnet_rows_by_cpu_id() {
        let text = "00000009 00000001 00000002 00000000 00000000 00000000 00000000 00000000 00000000 0000000a 0000000b 00000000 00000000 00000000 00000000\n\
                    00001566 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000003 00000000 00000000\n";
        let rows = parse_softnet(text).unwrap();
        assert_eq!(rows.keys().copied().collect::<Vec<_>>(), vec![0, 3]);
        assert_eq!(
            rows[&0],
            Softnet {
                processed: 9,
                dropped: 1,
                time_squeeze: 2,
                received_rps: 10,
                flow_limit: 11
            }
        );
        assert_eq!(rows[&3].processed, 0x1566);
        assert!(parse_softnet("zz 00").is_err());
        assert!(parse_softnet("00000001 00000002").is_err());
    }

    #[test]
    fn softnet_deltas_survive_32_bit_wrap() {
        let prev = Softnet {
            processed: 0xffff_fff0,
            ..Default::default()
        };
        let now = Softnet {
            processed: 0x10,
            ..Default::default()
        };
        assert_eq!(now.delta(&prev).processed, 0x20);
    }

    #[test]
    fn schedstat_run_time_is_its_first_field() {
        assert_eq!(schedstat_run_ns("1133082 0 1\n"), Some(1133082));
    }

    #[test]
    fn this_machine_reads() {
        let cpus = rxsteer_tune::cpus::online_cpus().unwrap();
        let softnet = softnet_stat().unwrap();
        let net_rx = proc_softirqs("NET_RX").unwrap();
        for cpu in cpus {
            assert!(softnet.contains_key(&cpu), "softnet row for CPU {cpu}");
            assert!(net_rx.contains_key(&cpu), "NET_RX column for CPU {cpu}");
        }
        receive_kthreads("lo").unwrap();
    }
}

#[cfg(test)]
mod interrupt_lines {
    use super::interrupts_of;

    #[test]
    fn an_interfaces_lines_are_summed_per_cpu_and_others_left_out() {
        let text = "           CPU0       CPU1
  0:         44          0   IO-APIC   2-edge      timer
 11:        120       4000   IO-APIC  11-fasteoi   eth0
 24:          1        300   PCI-MSI 524288-edge      eth1-rx-0
 25:          2        100   PCI-MSI 524289-edge      eth1-tx-0
 26:          5          5   PCI-MSI 524290-edge      eth10
 27:          7          0   IO-APIC  12-fasteoi   ahci, eth1
NMI:          0          0   Non-maskable interrupts
LOC:       9000       8000   Local timer interrupts
";
        let eth0 = interrupts_of(text, "eth0", &[]);
        assert_eq!(eth0.into_iter().collect::<Vec<_>>(), [(0, 120), (1, 4000)]);
        let eth1 = interrupts_of(text, "eth1", &[]);
        assert_eq!(eth1.into_iter().collect::<Vec<_>>(), [(0, 10), (1, 400)]);
        assert!(interrupts_of(text, "veth0", &[]).is_empty());
    }

    /// virtio-net names its vectors after the virtio device, not the interface: they are
    /// found by the IRQ numbers sysfs lists for the device, and counted once each.
    #[test]
    fn a_devices_vectors_named_otherwise_are_found_by_their_numbers() {
        let text = "           CPU0       CPU1
 24:          1          0   PCI-MSIX-0000:00:03.0   0-edge      virtio0-config
 25:        900         10   PCI-MSIX-0000:00:03.0   1-edge      virtio0-input.0
 26:          3         40   PCI-MSIX-0000:00:03.0   2-edge      virtio0-output.0
 27:          8          8   PCI-MSIX-0000:00:04.0   1-edge      virtio1-input.0
";
        assert!(interrupts_of(text, "eth0", &[]).is_empty());
        let eth0 = interrupts_of(text, "eth0", &[24, 25, 26]);
        assert_eq!(eth0.into_iter().collect::<Vec<_>>(), [(0, 904), (1, 50)]);
    }
}
