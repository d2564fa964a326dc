//! Lower scheduling priorities for background CPU work, so the work a user waits for
//! (fetching, answering) gets the cores first: a nice value above the default, or the idle
//! class, which runs a thread only on a core nothing else wants and yields it at once to
//! any other thread that wakes there. On Linux both belong to the calling thread, and the
//! threads it starts afterwards inherit them.

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
    // SAFETY: both calls take plain integers and a parameter struct that outlives them;
    // `0` names the calling thread.
    unsafe {
        let nice = match priority {
            Priority::Nice(n) => n,
            Priority::Idle => {
                let param = libc::sched_param { sched_priority: 0 };
                if libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) == 0 {
                    return;
                }
                19
            }
        };
        libc::setpriority(libc::PRIO_PROCESS, 0, nice);
    }
}
