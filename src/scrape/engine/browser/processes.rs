//! What `/proc` tells of a browser's processes. A Chromium is started as the leader of a
//! process group of its own (the launcher runs it under `setsid`), and its helpers (zygotes,
//! the GPU and network processes, renderers) stay in that group. So the whole browser can
//! be killed at once, and its profile directory removed only once none of them runs: a
//! browser that died or was killed leaves helpers that write into the directory (the
//! network service's state, the cache's index) for a moment after it, which would make the
//! directory again after its removal.

use std::time::{Duration, Instant};

/// How often a group is looked at while waiting for it to end.
const POLL: Duration = Duration::from_millis(20);

/// The state letter and process group of process `pid`, from `/proc/{pid}/stat`.
fn state_and_group(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is parenthesised and may hold anything: read after its end.
    let (_, rest) = stat.rsplit_once(") ")?;
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let _parent = fields.next()?;
    let group = fields.next()?.parse().ok()?;
    Some((state, group))
}

/// Whether a state letter is of a process that runs (a zombie or a dead one does not).
fn runs(state: char) -> bool {
    !matches!(state, 'Z' | 'X')
}

/// Whether process `pid` runs (a killed child not reaped yet is a zombie: not running).
pub(super) fn running(pid: u32) -> bool {
    state_and_group(pid).is_some_and(|(state, _)| runs(state))
}

/// `pid` when it leads a process group of its own.
pub(super) fn own_group(pid: u32) -> Option<u32> {
    state_and_group(pid).filter(|(_, group)| *group == pid).map(|_| pid)
}

/// Whether any process of group `group` runs.
pub(super) fn group_running(group: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else { return false };
    entries.flatten().any(|entry| {
        let pid = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok());
        pid.and_then(state_and_group).is_some_and(|(state, of)| of == group && runs(state))
    })
}

/// Kills every process of group `group` (SIGKILL).
pub(super) fn kill_group(group: u32) {
    if let Some(group) = i32::try_from(group).ok().and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
}

/// Waits, up to `limit`, until no process of group `group` runs; whether none does.
pub(super) fn wait_group(group: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if !group_running(group) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_of_its_own_is_seen_killed_and_waited_for() {
        // `setsid` makes the shell lead a group of its own; its child stays in the group.
        let mut leader = std::process::Command::new("setsid")
            .args(["sh", "-c", "sleep 30 & exec sleep 30"])
            .spawn()
            .expect("setsid sh");
        let pid = leader.id();
        let started = Instant::now();
        while own_group(pid).is_none() {
            assert!(started.elapsed() < Duration::from_secs(5), "the shell never led a group");
            std::thread::sleep(POLL);
        }
        assert!(running(pid) && group_running(pid));
        assert_eq!(own_group(std::process::id()), None, "the test leads no group of its own");
        kill_group(pid);
        let _ = leader.wait();
        assert!(wait_group(pid, Duration::from_secs(5)), "the background sleep died with its group");
        assert!(!running(pid));
    }
}
