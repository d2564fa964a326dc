//! Lower scheduling priorities for background CPU work, so the work a user waits for
//! (fetching, answering) gets the cores first: a nice value above the default, or the idle
//! class, which runs a thread only on a core nothing else wants and yields it at once to
//! any other thread that wakes there. On Linux both belong to the calling thread, and the
//! threads it starts afterwards inherit them. At a stop the idle-class threads are put back
//! in the normal class, where the system allows it.

/// How low.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// A nice value (1..=19).
    Nice(i32),
    /// The idle class; where it is refused, nice 19.
    Idle,
}

/// Lowers the calling thread's priority. A refusal leaves the next best.
pub fn lower(priority: Priority) {
    let nice = match priority {
        Priority::Nice(n) => n,
        Priority::Idle if set_policy(0, libc::SCHED_IDLE) => return,
        Priority::Idle => 19,
    };
    // SAFETY: plain integers; `0` names the calling thread.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, nice);
    }
}

/// Puts thread `tid` (`0`: the calling thread) in scheduling class `policy`; whether the
/// system allowed it.
fn set_policy(tid: libc::pid_t, policy: libc::c_int) -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: plain integers and a parameter struct that outlives the call; a thread that
    // has exited meanwhile makes the call fail, nothing else.
    unsafe { libc::sched_setscheduler(tid, policy, &param) == 0 }
}

/// Puts this process's threads of the idle class back in the normal one (nice 0), where
/// the system allows it (root, or a high enough `RLIMIT_NICE`): at a stop, the work left
/// on them (the search index's last commit) is what the operator waits for, and on a busy
/// machine an idle-class thread may not even get the CPU to exit. Returns how many threads
/// were moved and how many the system refused.
pub fn raise_idle_threads() -> (usize, usize) {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return (0, 0) };
    let (mut raised, mut refused) = (0, 0);
    for tid in tasks.flatten().filter_map(|t| t.file_name().to_str()?.parse::<libc::pid_t>().ok()) {
        // SAFETY: a plain integer; a thread that has exited meanwhile makes the call fail.
        if unsafe { libc::sched_getscheduler(tid) } != libc::SCHED_IDLE {
            continue;
        }
        if set_policy(tid, libc::SCHED_OTHER) {
            raised += 1;
        } else {
            refused += 1;
        }
    }
    (raised, refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_threads_are_put_back_in_the_normal_class() {
        let (lowered, lowered_rx) = std::sync::mpsc::channel();
        let (done, done_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            lower(Priority::Idle);
            // SAFETY: `0` names the calling thread.
            let policy = unsafe { libc::sched_getscheduler(0) };
            lowered.send(policy).expect("send");
            let _ = done_rx.recv();
            // SAFETY: as above.
            unsafe { libc::sched_getscheduler(0) }
        });
        if lowered_rx.recv().expect("policy") != libc::SCHED_IDLE {
            // The system refused the idle class itself (nice 19 instead): nothing to raise.
            done.send(()).expect("send");
            thread.join().expect("join");
            return;
        }
        let (raised, refused) = raise_idle_threads();
        done.send(()).expect("send");
        let policy = thread.join().expect("join");
        assert!(raised + refused >= 1, "the idle thread was not found");
        if refused == 0 {
            assert_eq!(policy, libc::SCHED_OTHER);
        }
    }
}
