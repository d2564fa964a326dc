//! The threads that convert pages and documents, apart from the runtime.
//!
//! Conversion is CPU-bound, so it runs off the async workers, at a lower priority than
//! they: the workers, which send the next requests and settle results, get the CPU first,
//! and a crawl keeps its connections busy while pages convert. It has threads of its own,
//! not the runtime's blocking pool, where the store's reads run: a crawl of slow pages
//! keeps every conversion thread busy with pages waiting in line, and a job's status read
//! must not wait in that line (it took seconds when both shared one pool).
//!
//! Two lanes, by the size of the input. Time to convert grows with size (linearly, at any
//! depth: [`crate::extract`]), so a large input is the expensive one: a page of a few
//! megabytes takes half a second of a core where an ordinary page takes a millisecond.
//! Large inputs convert on the heavy lane, in the idle scheduling class and one at a time
//! (per node), and their pages are written to the cache there too: when the CPU is
//! contended, everything else gets it first, so a site of huge or machine-made pages cannot
//! take the CPU from the crawls beside it, and it still converts at full speed when the CPU
//! is free. The price: on a node kept busy without a pause, a large page waits for a free
//! moment and can reach its deadline first (a timeout, like any page too slow to answer).

use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle, Runtime};

use super::ScrapeError;
use crate::process::cancel;
use crate::process::priority::{self, Priority};

/// Inputs of this many bytes or more convert on the heavy lane.
const HEAVY_BYTES: usize = 1 << 20;

/// Nice value of the ordinary lane's threads: a little below the async workers.
const ORDINARY_NICE: i32 = 5;

/// Runs `work`, the conversion of `size` bytes, on its lane's threads. Dropping the
/// returned future (a deadline passed, the job was cancelled) stops the work at its next
/// check ([`crate::process::cancel`]).
pub(super) async fn convert<T: Send + 'static>(
    size: usize,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ScrapeError> {
    let heavy = is_heavy(size);
    let flag = cancel::Flag::default();
    let armed = flag.arm();
    let run = move || cancel::run(&flag, work);
    let task = match lane(heavy) {
        Some(pool) => pool.spawn_blocking(run),
        None => tokio::task::spawn_blocking(run),
    };
    let done = task.await.map_err(|e| ScrapeError::Internal(e.to_string()));
    armed.disarm();
    done
}

/// Whether an input of `size` bytes is a large one, for the heavy lane.
pub(super) fn is_heavy(size: usize) -> bool {
    size >= HEAVY_BYTES
}

/// Runs `work` on the heavy lane without waiting for it: a large input's store work (a
/// page of megabytes written to the cache) costs the crawls beside it least there. Runs it
/// at once when the lane cannot be started.
pub(super) fn spawn_heavy(work: impl FnOnce() + Send + 'static) {
    match lane(true) {
        Some(pool) => drop(pool.spawn_blocking(work)),
        None => work(),
    }
}

/// The lane's threads: two per core for ordinary inputs, one for heavy ones.
/// `None` when the threads cannot be started; conversion then shares the caller's pool.
fn lane(heavy: bool) -> Option<&'static Handle> {
    static ORDINARY: OnceLock<Option<Runtime>> = OnceLock::new();
    static HEAVY: OnceLock<Option<Runtime>> = OnceLock::new();
    let (cell, name) = if heavy { (&HEAVY, "ferrocrawl-heavy") } else { (&ORDINARY, "ferrocrawl-convert") };
    cell.get_or_init(|| {
        // Counted once: the count reads the cgroup's files, too slow for every page.
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        let threads = if heavy { 1 } else { cores * 2 };
        Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(threads)
            .thread_name(name)
            .on_thread_start(move || lower_priority(heavy))
            .build()
            .inspect_err(
                |e| tracing::warn!(error = %e, lane = name, "no conversion threads; using the shared pool"),
            )
            .ok()
    })
    .as_ref()
    .map(Runtime::handle)
}

/// Lowers the calling thread's scheduling priority: a little for the ordinary lane, to the
/// idle class for the heavy one. A nice-19 thread still gets slices of a contended core (a
/// normal crawl beside a site of huge pages kept 89 % of its pages per second with it, 95 %
/// with the idle class; `benches/RESULTS.md`).
fn lower_priority(heavy: bool) {
    priority::lower(if heavy { Priority::Idle } else { Priority::Nice(ORDINARY_NICE) });
}
