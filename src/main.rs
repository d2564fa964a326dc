//! The `ferrocrawl` command: the process's allocator, then the command line
//! ([`ferrocrawl::cli`]). No logic lives here.

use std::process::ExitCode;

/// mimalloc keeps fragmentation low under many threads; glibc's per-thread arenas kept a
/// crawl's transient page buffers resident (about 1 GB on a 100 000-page crawl). The store's
/// IO buffers are kept for reuse ([`ferrocrawl::process::alloc`]).
#[global_allocator]
static GLOBAL: ferrocrawl::process::alloc::Allocator = ferrocrawl::process::alloc::Allocator::new();

fn main() -> ExitCode {
    ferrocrawl::cli::main()
}
