//! What the manager process used, read from `/proc`: CPU seconds and peak resident memory.

/// One reading of a process's resource use.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// User plus system CPU time so far, in seconds.
    pub cpu_seconds: f64,
    /// The largest resident set so far (`VmHWM`), in MiB.
    pub peak_rss_mib: f64,
    /// The resident set now (`VmRSS`), in MiB.
    pub rss_mib: f64,
}

/// Reads `pid`'s usage; `None` when the process is gone or `/proc` is not there.
pub fn usage(pid: u32) -> Option<Usage> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(Usage {
        cpu_seconds: cpu_seconds(&stat, clock_ticks())?,
        peak_rss_mib: status_kib(&status, "VmHWM:")? / 1024.0,
        rss_mib: status_kib(&status, "VmRSS:")? / 1024.0,
    })
}

fn clock_ticks() -> f64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .map_or(100.0, |ticks| ticks as f64)
}

/// `utime + stime` of a `/proc/<pid>/stat` line, in seconds. The command name may hold spaces and parentheses,
/// so fields are counted after its last `)`.
fn cpu_seconds(stat: &str, ticks_per_second: f64) -> Option<f64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // After the name: state is field 3 of the line, utime field 14 and stime field 15.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / ticks_per_second)
}

/// A `Name:   1234 kB` line of `/proc/<pid>/status`, in KiB.
fn status_kib(status: &str, name: &str) -> Option<f64> {
    let line = status.lines().find(|line| line.starts_with(name))?;
    line[name.len()..].split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_after_the_command_name() {
        let stat = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 8 0 1 0 0";
        assert_eq!(cpu_seconds(stat, 100.0), Some(3.0));
    }

    #[test]
    fn memory_lines_are_read_in_kib() {
        let status = "Name:\tmanager\nVmHWM:\t   65536 kB\nVmRSS:\t   32768 kB\n";
        assert_eq!(status_kib(status, "VmHWM:"), Some(65536.0));
        assert_eq!(status_kib(status, "VmRSS:"), Some(32768.0));
        assert_eq!(status_kib(status, "VmSwap:"), None);
    }

    #[test]
    fn this_process_can_be_read() {
        let usage = usage(std::process::id()).expect("our own /proc entry");
        assert!(usage.peak_rss_mib >= usage.rss_mib && usage.rss_mib > 0.0, "{usage:?}");
    }
}
