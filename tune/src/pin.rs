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

/// Every kernel thread whose comm starts with one of `prefixes`: (pid, comm), by pid. A user
/// process may take any comm (`prctl(PR_SET_NAME)`), so the kernel's own flag decides, not the
/// name: an impostor is never pinned, waited for or counted. Tasks that exit between the
/// listing and the read are skipped.
pub fn kthreads_with_comm_prefix(prefixes: &[&str]) -> io::Result<Vec<(u32, String)>> {
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
            if prefixes.iter().any(|p| comm.starts_with(p)) && crate::task::is_kernel_thread(pid) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A user process that names itself like a NAPI kthread is not one: it is never listed, so
    /// never pinned, waited for or counted.
    #[test]
    fn an_impostor_named_like_a_napi_kthread_is_not_listed() {
        use std::io::BufRead;
        // Only a process itself may rename itself: the shell does, says so, and waits for its
        // stdin to close.
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "printf napi/impst0-77 > /proc/$$/comm && echo named && read x",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut said = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut said)
            .unwrap();
        let named = std::fs::read_to_string(format!("/proc/{}/comm", child.id())).unwrap();
        let listed = kthreads_with_comm_prefix(&["napi/impst0-"]);
        drop(child.stdin.take());
        child.wait().unwrap();
        assert_eq!(said, "named\n");
        assert_eq!(named.trim_end(), "napi/impst0-77", "the impostor is named");
        assert_eq!(listed.unwrap(), vec![], "and not listed");
        // Real kernel threads still are: kthreadd is pid 2.
        let kthreadd = kthreads_with_comm_prefix(&["kthreadd"]).unwrap();
        assert_eq!(kthreadd, vec![(2, "kthreadd".to_string())]);
    }
}
