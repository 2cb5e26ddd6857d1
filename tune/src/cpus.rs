//! CPU lists (`0-3,8`, the form of /sys/devices/system/cpu/online and of `--cpus`) and
//! cpumasks (`ff,ffffffff`, the form of `rps_cpus`).
//!
//! The reference script wrote one hex word `(1<<N)-1`: the kernel rejects more than 8 digits
//! without commas, and bash wraps it to 0 at 64 CPUs. Masks here are built in 32-bit groups.
use std::collections::BTreeSet;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CpuListError {
    #[error("{item:?} in CPU list {list:?} is not a CPU number or range")]
    Syntax { list: String, item: String },
    #[error("CPU range {item:?} in {list:?} runs backwards")]
    Backwards { list: String, item: String },
    #[error("CPU list {0:?} is empty")]
    Empty(String),
}

/// Upper bound on CPU ids accepted by the parser, so `0-4000000000` cannot eat memory.
pub const MAX_CPU_ID: u32 = 1 << 16;

/// Parses `0-3,8,10-11` into sorted, distinct CPU ids.
pub fn parse_cpu_list(list: &str) -> Result<Vec<u32>, CpuListError> {
    let syntax = |item: &str| CpuListError::Syntax {
        list: list.to_string(),
        item: item.to_string(),
    };
    let num = |s: &str, item: &str| -> Result<u32, CpuListError> {
        match s.trim().parse::<u32>() {
            Ok(n) if n < MAX_CPU_ID => Ok(n),
            _ => Err(syntax(item)),
        }
    };
    let trimmed = list.trim();
    if trimmed.is_empty() {
        return Err(CpuListError::Empty(list.to_string()));
    }
    let mut set = BTreeSet::new();
    for item in trimmed.split(',') {
        let (lo, hi) = match item.split_once('-') {
            Some((a, b)) => (num(a, item)?, num(b, item)?),
            None => {
                let n = num(item, item)?;
                (n, n)
            }
        };
        if lo > hi {
            return Err(CpuListError::Backwards {
                list: list.to_string(),
                item: item.to_string(),
            });
        }
        set.extend(lo..=hi);
    }
    Ok(set.into_iter().collect())
}

/// Formats CPU ids as a list with ranges: `[0,1,2,5]` -> `0-2,5`.
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut sorted: Vec<u32> = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        while i + 1 < sorted.len() && sorted[i + 1] == sorted[i] + 1 {
            i += 1;
        }
        let end = sorted[i];
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// A cpumask in the kernel's form for `nr_cpus` CPU ids: 32-bit hex groups, most significant
/// first, comma-separated; the top group is as wide as the bits it holds (as the kernel prints).
pub fn cpumask(cpus: &[u32], nr_cpus: u32) -> String {
    let nbits = cpus.iter().map(|&c| c + 1).fold(nr_cpus.max(1), u32::max);
    let groups = nbits.div_ceil(32) as usize;
    let mut words = vec![0u32; groups];
    for &c in cpus {
        words[(c / 32) as usize] |= 1 << (c % 32);
    }
    let top_digits = (nbits - 32 * (groups as u32 - 1)).div_ceil(4) as usize;
    words
        .iter()
        .enumerate()
        .rev()
        .map(|(i, w)| {
            let digits = if i == groups - 1 { top_digits } else { 8 };
            format!("{w:0digits$x}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Parses a cpumask as the kernel prints it (`00000003`, `ff,ffffffff`) into CPU ids.
pub fn parse_cpumask(mask: &str) -> Result<Vec<u32>, CpuListError> {
    let err = || CpuListError::Syntax {
        list: mask.to_string(),
        item: mask.to_string(),
    };
    let mut cpus = Vec::new();
    let groups: Vec<&str> = mask.trim().split(',').collect();
    for (i, g) in groups.iter().rev().enumerate() {
        if g.is_empty() || g.len() > 8 {
            return Err(err());
        }
        let w = u32::from_str_radix(g, 16).map_err(|_| err())?;
        for bit in 0..32 {
            if w & (1 << bit) != 0 {
                cpus.push(i as u32 * 32 + bit);
            }
        }
    }
    Ok(cpus)
}

/// The online CPUs of this machine.
pub fn online_cpus() -> std::io::Result<Vec<u32>> {
    online_cpus_under(std::path::Path::new("/"))
}

/// The online CPUs a system tree under `root` lists (`/` on a real machine).
pub fn online_cpus_under(root: &std::path::Path) -> std::io::Result<Vec<u32>> {
    cpu_list_file(&root.join("sys/devices/system/cpu/online"))
}

/// Highest possible CPU id + 1 under `root`: the width of the masks the kernel prints and the
/// largest cpumap it accepts.
pub fn nr_cpu_ids_under(root: &std::path::Path) -> std::io::Result<u32> {
    let cpus = cpu_list_file(&root.join("sys/devices/system/cpu/possible"))?;
    Ok(cpus.last().map_or(1, |c| c + 1))
}

fn cpu_list_file(path: &std::path::Path) -> std::io::Result<Vec<u32>> {
    let s = std::fs::read_to_string(path)?;
    parse_cpu_list(&s).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists() {
        assert_eq!(parse_cpu_list("0-3,8").unwrap(), vec![0, 1, 2, 3, 8]);
        assert_eq!(parse_cpu_list(" 2 ,1,1\n").unwrap(), vec![1, 2]);
        assert_eq!(format_cpu_list(&[5, 0, 1, 2, 7, 8]), "0-2,5,7-8");
        assert!(matches!(
            parse_cpu_list("3-1"),
            Err(CpuListError::Backwards { .. })
        ));
        assert!(matches!(parse_cpu_list(""), Err(CpuListError::Empty(_))));
        for bad in ["a", "1,,2", "1-", "-1", "99999999999", "70000"] {
            assert!(
                matches!(parse_cpu_list(bad), Err(CpuListError::Syntax { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn masks_are_grouped_by_32_bits() {
        assert_eq!(cpumask(&[0, 1], 2), "3");
        assert_eq!(cpumask(&[1], 20), "00002");
        let all20: Vec<u32> = (0..20).collect();
        assert_eq!(cpumask(&all20, 20), "fffff");
        let all32: Vec<u32> = (0..32).collect();
        assert_eq!(cpumask(&all32, 32), "ffffffff");
        let all64: Vec<u32> = (0..64).collect();
        assert_eq!(cpumask(&all64, 64), "ffffffff,ffffffff");
        assert_eq!(cpumask(&[0, 40], 48), "0100,00000001");
        assert_eq!(cpumask(&[0], 2), "1");
        assert_eq!(cpumask(&[33], 2), "2,00000000");
        assert_eq!(cpumask(&[], 8), "00");
        for cpus in [vec![0, 1], vec![3, 33, 64, 95], vec![]] {
            assert_eq!(parse_cpumask(&cpumask(&cpus, 96)).unwrap(), cpus);
        }
        assert_eq!(parse_cpumask("00000000,00000003").unwrap(), vec![0, 1]);
        assert!(parse_cpumask("1ffffffff").is_err());
    }
}
