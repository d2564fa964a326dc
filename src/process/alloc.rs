//! The process's memory allocator: mimalloc, with the store's IO buffers kept for reuse.
//!
//! sled writes its log through buffers of a whole segment (8 MiB, aligned to 8 KiB), a new
//! one each time the last one fills, and frees each once it is written. Given back to
//! mimalloc, a block that size goes back to the system within the purge delay (100 ms, set
//! by the `ferrocrawl` command), so every new buffer faulted its 2 048 pages in afresh: at
//! a crawl's write rate some ten page faults a page stored, most of a node's page faults.
//! [`Allocator`] keeps up to [`KEPT`] such buffers when they are freed and hands them out
//! again, already mapped, for the next ones (`benches/RESULTS.md`, "The store's IO
//! buffers"). Every other allocation goes to mimalloc as it is, with the purge delay and
//! huge pages set by [`tune_memory`].

use std::alloc::{GlobalAlloc, Layout};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

/// IO buffers kept for reuse at most (the one sled fills and the one being written out).
pub const KEPT: usize = 2;
/// Alignment of sled's IO buffers.
const IO_BUFFER_ALIGN: usize = 8192;

/// mimalloc, keeping freed store IO buffers for reuse (see the module's documentation).
#[derive(Debug)]
pub struct Allocator {
    kept: [AtomicPtr<u8>; KEPT],
}

impl Allocator {
    /// The allocator, keeping no buffer yet.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Self { kept: [const { AtomicPtr::new(null_mut()) }; KEPT] }
    }
}

/// Whether `layout` is that of one of the store's IO buffers.
fn is_io_buffer(layout: Layout) -> bool {
    layout.size() == crate::store::SEGMENT_BYTES && layout.align() == IO_BUFFER_ALIGN
}

// SAFETY: every block handed out was allocated by mimalloc with the layout it is handed out
// for (a kept block only ever for the one layout it was allocated with), and every block
// freed here is either kept whole for that layout or given back to mimalloc with it.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_io_buffer(layout) {
            for slot in &self.kept {
                let kept = slot.swap(null_mut(), Ordering::Acquire);
                if !kept.is_null() {
                    return kept;
                }
            }
        }
        // SAFETY: the caller's contract for `layout` is passed on unchanged.
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_io_buffer(layout) {
            for slot in &self.kept {
                if slot.compare_exchange(null_mut(), ptr, Ordering::Release, Ordering::Relaxed).is_ok() {
                    return;
                }
            }
        }
        // SAFETY: `ptr` was allocated by mimalloc with `layout` (kept blocks included).
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`; zeroed blocks are mimalloc's own.
        unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` is a mimalloc block of `layout` (kept ones included), as realloc needs.
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}

/// `mi_option_purge_delay` in mimalloc 3's `mi_option_e` (libmimalloc-sys has no name for it;
/// both crates are pinned in Cargo.toml).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// Its default (ms), checked before the option is changed so a different layout is left alone.
const MI_PURGE_DELAY_DEFAULT: std::ffi::c_long = 1000;
/// How long freed pages stay with the allocator before going back to the system (ms). A
/// second (the default) lets a long crawl's resident memory creep up; returning them at
/// once makes every page's buffers fault in afresh, which costs a crawl about a tenth of
/// its CPU time. Even 100 ms costs a crawl of large pages ~5 % of its CPU against 300 ms,
/// for ~30 MB less peak memory (README, "Memory against CPU").
const PURGE_DELAY_MS: std::ffi::c_long = 100;

/// Tunes how the allocator returns memory (called first thing by the `ferrocrawl` command
/// and by the benchmarks that time its code), unless `MIMALLOC_PURGE_DELAY` was set in the
/// environment, and turns transparent huge pages off for the process: the allocator asks
/// for them on its arenas, and on a crawl's churn of short-lived buffers each fault then
/// zeroes 2 MiB, of which most is freed again before use.
pub fn tune_memory() {
    // An operator's own value stands, even one equal to the default.
    let chosen =
        ["MIMALLOC_PURGE_DELAY", "mimalloc_purge_delay"].iter().any(|name| std::env::var_os(name).is_some());
    // SAFETY: both calls only read or write an entry of mimalloc's option table, and the
    // index is one mimalloc defines (its default value is checked first).
    unsafe {
        if !chosen && libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) == MI_PURGE_DELAY_DEFAULT {
            libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
        }
    }
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and changes only this process's flag
    // (children, Chromium among them, inherit it). A kernel without it answers EINVAL,
    // which leaves things as they were.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_buffers_are_kept_and_handed_out_again_and_nothing_else_is() {
        let alloc = Allocator::new();
        let io = Layout::from_size_align(crate::store::SEGMENT_BYTES, IO_BUFFER_ALIGN).expect("layout");
        // SAFETY: each block is freed once, with the layout it was allocated with.
        unsafe {
            let blocks: Vec<*mut u8> = (0..KEPT + 1).map(|_| alloc.alloc(io)).collect();
            assert!(blocks.iter().all(|b| !b.is_null() && b.align_offset(IO_BUFFER_ALIGN) == 0));
            blocks[0].write(7);
            for &block in &blocks {
                alloc.dealloc(block, io);
            }
            let again: Vec<*mut u8> = (0..KEPT).map(|_| alloc.alloc(io)).collect();
            for block in &again {
                assert!(blocks[..KEPT].contains(block), "a kept buffer is handed out again");
            }
            let other = Layout::from_size_align(crate::store::SEGMENT_BYTES, 8).expect("layout");
            let plain = alloc.alloc(other);
            alloc.dealloc(plain, other);
            assert!(
                alloc.kept.iter().all(|slot| slot.load(Ordering::Relaxed).is_null()),
                "other layouts are not kept"
            );
            for block in again {
                alloc.dealloc(block, io);
            }
        }
    }
}
