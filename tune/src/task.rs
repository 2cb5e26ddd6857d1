//! Who a process is, not what it is called: a pid names a process only together with its start
//! time (pids are reused), and a kernel thread is one the kernel flags as such (any user
//! process may call itself `napi/eth0-8193`).
use std::io;

/// `PF_KTHREAD` in include/linux/sched.h: the task is a kernel thread. The flags field of
/// /proc/PID/stat has carried it since 2.6.
const PF_KTHREAD: u32 = 0x0020_0000;

/// The fields of /proc/PID/stat rxsteer judges identity and placement by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// Field 9: the task's PF_* flags.
    pub flags: u32,
    /// Field 22: when the task started, in clock ticks after boot. With the pid, it names one
    /// process for as long as the machine runs.
    pub start_time: u64,
    /// Field 39: the CPU the task last ran on.
    pub processor: u32,
}

impl Stat {
    /// Parses one /proc/PID/stat line. The comm field may hold spaces and parentheses, so
    /// fields are counted from the last ')'.
    pub fn parse(line: &str) -> Option<Self> {
        let after = &line[line.rfind(')')? + 1..];
        // After ')' the first field is 3 (state): field N is index N - 3.
        let fields: Vec<&str> = after.split_whitespace().collect();
        let field = |n: usize| fields.get(n - 3).copied();
        Some(Self {
            flags: field(9)?.parse().ok()?,
            start_time: field(22)?.parse().ok()?,
            processor: field(39)?.parse().ok()?,
        })
    }

    /// Task `pid`'s fields now; NotFound once it is gone.
    pub fn of(pid: u32) -> io::Result<Self> {
        let line = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        Self::parse(&line).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("/proc/{pid}/stat: unexpected format"),
            )
        })
    }

    pub fn is_kernel_thread(&self) -> bool {
        self.flags & PF_KTHREAD != 0
    }
}

/// This process's start time (see [`Stat::start_time`]).
pub fn own_start_time() -> Option<u64> {
    Stat::of(std::process::id()).ok().map(|s| s.start_time)
}

/// Whether the process that was `pid` when it started at `start_time` still runs. Without a
/// start time (a record written before rxsteer kept one), whether any process has that pid.
pub fn alive(pid: u32, start_time: Option<u64>) -> bool {
    match (Stat::of(pid), start_time) {
        (Ok(now), Some(then)) => now.start_time == then,
        (Ok(_), None) => true,
        (Err(_), _) => false,
    }
}

/// Whether `pid` is a kernel thread now (false once it is gone).
pub fn is_kernel_thread(pid: u32) -> bool {
    Stat::of(pid).is_ok_and(|s| s.is_kernel_thread())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_count_from_the_last_paren() {
        // A comm with spaces and a ')' of its own; flags 0x208040 (a kthread), start 4242,
        // last CPU 7.
        let mut line = String::from("42 (we (ird) name) S 2 0 0 0 -1 2129984");
        for n in 10..=38 {
            line.push_str(if n == 22 { " 4242" } else { " 0" });
        }
        line.push_str(" 7 0 0 0 0 0");
        let s = Stat::parse(&line).unwrap();
        assert_eq!(
            s,
            Stat {
                flags: 0x0020_8040,
                start_time: 4242,
                processor: 7
            }
        );
        assert!(s.is_kernel_thread());
        assert_eq!(Stat::parse("42 (short) S 1 2"), None);
        assert_eq!(Stat::parse("no paren at all"), None);
    }

    #[test]
    fn kthreadd_is_a_kernel_thread_and_this_process_is_not() {
        assert!(is_kernel_thread(2), "pid 2 is kthreadd on Linux");
        assert!(!is_kernel_thread(std::process::id()));
        assert!(!is_kernel_thread(u32::MAX - 1), "no such pid");
    }

    /// A pid is alive only with the start time it had: pid 1 with another start time is a
    /// reused pid, not the recorded owner.
    #[test]
    fn a_reused_pid_is_not_the_recorded_process() {
        let me = std::process::id();
        let start = own_start_time().unwrap();
        assert!(alive(me, Some(start)));
        assert!(!alive(me, Some(start + 1)));
        assert!(alive(me, None), "no recorded start: the pid alone");
        let init = Stat::of(1).unwrap().start_time;
        assert!(!alive(1, Some(init + 12345)));
        assert!(!alive(u32::MAX - 1, None));
    }
}
