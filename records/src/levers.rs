//! The one queue's own levers as read at one moment: what run.json records before a run,
//! under each arm, and after it (the host as found means after equals before).
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LeversRead {
    /// The RX/TX ring sizes (`rx=256 tx=256`) and the driver's maxima.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rings: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rings_max: Option<String>,
    /// Every coalescing value the driver reports (`rx-usecs=3 rx-frames=0 ...`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coalesce: Option<String>,
    /// `gro=on gso=on tso=on`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offloads: Option<String>,
    /// Each CPU's frequency governor; empty without cpufreq (`missing` says so).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub governors: BTreeMap<u32, String>,
    /// Each of the interface's interrupt vectors.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub irqs: Vec<IrqRead>,
    /// What could not be read, with why (`rings: the driver has none (...)`): a lever absent
    /// here is said, never a silent zero.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

/// One interrupt vector: the CPUs it may go to and the ones the kernel delivers it to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqRead {
    pub irq: u32,
    pub cpus: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective: Option<String>,
}

impl LeversRead {
    /// Each lever as (name, value) in a fixed order, for a table of before / under / after:
    /// `rings`, `coalescing`, `offloads`, `IRQ N`, `governors`; one absent is left out.
    pub fn named(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(r) = &self.rings {
            let max = self
                .rings_max
                .as_deref()
                .map_or(String::new(), |m| format!(" (max {m})"));
            out.push(("rings".to_string(), format!("{r}{max}")));
        }
        if let Some(c) = &self.coalesce {
            // The values a reader tunes; the rest are in run.json.
            let short: Vec<&str> = c
                .split_whitespace()
                .filter(|f| {
                    f.starts_with("rx-usecs=")
                        || f.starts_with("rx-frames=")
                        || f.starts_with("adaptive-rx=")
                })
                .collect();
            out.push(("coalescing".to_string(), short.join(" ")));
        }
        if let Some(o) = &self.offloads {
            out.push(("offloads".to_string(), o.clone()));
        }
        for i in &self.irqs {
            let eff = i
                .effective
                .as_deref()
                .map_or(String::new(), |e| format!(" (delivered to {e})"));
            out.push((format!("IRQ {}", i.irq), format!("{}{eff}", i.cpus)));
        }
        if !self.governors.is_empty() {
            let mut kinds: Vec<&str> = self.governors.values().map(String::as_str).collect();
            kinds.sort_unstable();
            kinds.dedup();
            out.push(("governors".to_string(), kinds.join(", ")));
        }
        out
    }
}
