//! Wall-clock helpers: timestamps are kept as milliseconds since the Unix epoch and shown
//! as ISO 8601 strings with millisecond precision, the way Firecrawl clients parse them.
//!
//! Every part of the server reads the wall clock here ([`now_ms`]). A debug build started
//! with `TEST_FERROCRAWL_NOW_MS` set reads a clock that stood at that moment (epoch ms) when
//! the process started and runs on from there, so a test can open a frozen data directory
//! as of the day it was made, whatever day it runs.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    let real = system_ms();
    match set_clock() {
        Some((set_at, set_to)) => set_to.saturating_add(real.saturating_sub(set_at)),
        None => real,
    }
}

fn system_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// When the process read `TEST_FERROCRAWL_NOW_MS` (the system's clock), and the value it
/// set the clock to; `None` in a release build or without it.
fn set_clock() -> Option<(u64, u64)> {
    static SET: OnceLock<Option<(u64, u64)>> = OnceLock::new();
    *SET.get_or_init(|| {
        let value = std::env::var("TEST_FERROCRAWL_NOW_MS").ok().and_then(|v| v.parse().ok());
        value.filter(|_| cfg!(debug_assertions)).map(|to| (system_ms(), to))
    })
}

/// Formats epoch milliseconds as `2026-01-01T00:00:00.000Z`.
pub fn iso_ms(ms: u64) -> String {
    let at = UNIX_EPOCH + Duration::from_millis(ms);
    humantime::format_rfc3339_millis(at).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_millis_and_zulu() {
        assert_eq!(iso_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_ms(1_767_225_600_123), "2026-01-01T00:00:00.123Z");
    }
}
