//! CPU affinity for threads and tasks: the servers' workers, the lab's processes and NAPI
//! kthreads, the benches' floor threads.
use std::io;

use crate::cpus::format_cpu_list;

/// Pins the calling thread to one CPU.
pub fn pin_current_thread(cpu: u32) -> io::Result<()> {
    pin_task(0, &[cpu])
}

/// Pins task `pid` (0 = the calling thread) to a set of CPUs.
pub fn pin_task(pid: u32, cpus: &[u32]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data, zeroed is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu as usize >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {cpu} is past the largest CPU set this build knows"),
            ));
        }
        // SAFETY: the index was checked against the set's size above.
        unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    let rc = unsafe {
        libc::sched_setaffinity(
            pid as libc::pid_t,
            std::mem::size_of::<libc::cpu_set_t>(),
            &set,
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("pinning task {pid} to CPU {}: {e}", format_cpu_list(cpus)),
        ));
    }
    Ok(())
}

/// The comm prefix of `dev`'s threaded-NAPI kthreads (`napi/<dev>-<napi id>`), cut as the
/// kernel cuts a comm (15 bytes), so a long device name still matches.
pub fn napi_comm_prefix(dev: &str) -> String {
    let full = format!("napi/{dev}-");
    let mut end = full.len().min(15);
    while !full.is_char_boundary(end) {
        end -= 1;
    }
    full[..end].to_string()
}

/// Every task whose comm starts with one of `prefixes`: (pid, comm), by pid. Tasks that exit
/// between the listing and the read are skipped.
pub fn tasks_with_comm_prefix(prefixes: &[&str]) -> io::Result<Vec<(u32, String)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc")?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Ok(comm) = std::fs::read_to_string(format!("/proc/{pid}/comm")) {
            if prefixes.iter().any(|p| comm.starts_with(p)) {
                out.push((pid, comm.trim_end().to_string()));
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// The CPUs task `pid` may run on (`Cpus_allowed_list` of /proc/PID/status); NotFound once
/// the task is gone.
pub fn affinity_of(pid: u32) -> io::Result<Vec<u32>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .ok_or_else(|| io::Error::other(format!("/proc/{pid}/status has no Cpus_allowed_list")))?;
    crate::cpus::parse_cpu_list(list.trim()).map_err(io::Error::other)
}
