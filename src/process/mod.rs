//! The process's own plumbing, below every other module: its memory allocator
//! ([`alloc`]), lower scheduling priorities for background threads ([`priority`]), the
//! flag that stops CPU work nobody waits for any more ([`cancel`]), logging
//! ([`logging`]), and the sandbox of code a caller runs ([`sandbox`]).

pub mod alloc;
pub mod cancel;
pub mod logging;
pub mod priority;
pub mod sandbox;
