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
