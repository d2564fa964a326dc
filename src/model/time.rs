//! Wall-clock helpers: timestamps are kept as milliseconds since the Unix epoch and shown
//! as ISO 8601 strings with millisecond precision, the way Firecrawl clients parse them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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
