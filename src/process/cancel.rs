//! Stopping CPU work nobody waits for any more.
//!
//! Conversion (HTML extraction, office and PDF documents) runs on the blocking pool, where
//! dropping the future that awaits it does not stop it: a scrape answered 408 at its
//! deadline, a crawl page of a cancelled job, or a request whose client left would go on
//! burning a core. [`run`] ties such work to a [`Flag`] that [`Armed`] raises when it is
//! dropped before the work is done; the work polls [`requested`] between steps (html5ever
//! between input chunks, extraction between phases, documents page by page) and returns
//! early with whatever it has, which nobody reads.
//!
//! The flag is ambient for the thread running the work, like a tracing span, so the pure
//! transforms in [`crate::extract`] and [`crate::documents`] check it without a parameter
//! in every signature; outside [`run`] it is never raised.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Pages and documents whose conversion was stopped before it ended.
static CUT_SHORT: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static CURRENT: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// A cancellation flag shared by the waiting side and the work.
#[derive(Debug, Clone, Default)]
pub struct Flag(Arc<AtomicBool>);

impl Flag {
    /// A guard that raises this flag when dropped, unless [`Armed::disarm`]ed first.
    pub fn arm(&self) -> Armed {
        Armed(Some(self.clone()))
    }

    /// Has the work been asked to stop?
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Raises its flag on drop: held by the future that waits for the work.
#[derive(Debug)]
pub struct Armed(Option<Flag>);

impl Armed {
    /// The work ended and its result was taken: nothing to stop.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        if let Some(flag) = self.0.take() {
            flag.0.store(true, Ordering::Relaxed);
            CUT_SHORT.fetch_add(1, Ordering::Relaxed);
            tracing::debug!("conversion cut short: its result is no longer awaited");
        }
    }
}

/// Runs `work` with `flag` as the thread's cancellation flag.
pub fn run<T>(flag: &Flag, work: impl FnOnce() -> T) -> T {
    struct Reset(Option<Arc<AtomicBool>>);
    impl Drop for Reset {
        fn drop(&mut self) {
            CURRENT.with(|c| *c.borrow_mut() = self.0.take());
        }
    }
    let previous = CURRENT.with(|c| c.borrow_mut().replace(flag.0.clone()));
    let _reset = Reset(previous);
    work()
}

/// Should the work running on this thread stop? Always false outside [`run`].
pub fn requested() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(|f| f.load(Ordering::Relaxed)))
}

/// How many conversions were stopped before they ended, since the process started.
pub fn cut_short_total() -> u64 {
    CUT_SHORT.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_guard_stops_the_work_and_a_disarmed_one_does_not() {
        let flag = Flag::default();
        let before = cut_short_total();
        run(&flag, || assert!(!requested()));
        flag.arm().disarm();
        assert!(!flag.is_raised());
        assert_eq!(cut_short_total(), before);
        drop(flag.arm());
        assert!(flag.is_raised());
        run(&flag, || assert!(requested()));
        assert!(!requested(), "the flag is the work's only");
        assert!(cut_short_total() > before);
    }
}
