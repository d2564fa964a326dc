//! The credit ledger: credits used per team and calendar month (UTC). Charges are atomic
//! increments of one key, so concurrent requests never lose a charge.

use super::quarantine::Quarantine;
use super::{Result, codec};
use crate::model::TeamId;

/// A calendar month as `YYYYMM` (e.g. 202611).
pub type Month = u32;

/// The month (UTC) of an epoch-milliseconds instant.
pub fn month_of(ms: u64) -> Month {
    let (y, m, _) = civil_from_days((ms / 86_400_000) as i64);
    (y as u32) * 100 + m
}

/// First instant of `month` and of the month after it, as epoch milliseconds.
pub fn month_bounds(month: Month) -> (u64, u64) {
    let (y, m) = ((month / 100) as i64, month % 100);
    let next = if m == 12 { ((y + 1) as u32) * 100 + 1 } else { (y as u32) * 100 + m + 1 };
    (
        days_from_civil(y, m) as u64 * 86_400_000,
        days_from_civil((next / 100) as i64, next % 100) as u64 * 86_400_000,
    )
}

/// The month before `month`.
pub fn previous_month(month: Month) -> Month {
    if month % 100 == 1 { (month / 100 - 1) * 100 + 12 } else { month - 1 }
}

/// Months of use a team's history shows (`/v2/team/*-usage/historical`), the current one
/// among them.
pub const HISTORY_MONTHS: usize = 12;

/// The oldest month of the history that ends with `month`.
pub fn history_start(month: Month) -> Month {
    (1..HISTORY_MONTHS).fold(month, |m, _| previous_month(m))
}

// Howard Hinnant's civil-date algorithms (public domain), for day counts since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn days_from_civil(y: i64, m: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from(if m > 2 { m - 3 } else { m + 9 });
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Typed access to the `credit_ledger` tree.
#[derive(Debug, Clone)]
pub struct Ledger {
    tree: sled::Tree,
    q: Quarantine,
}

fn key(team: &TeamId, month: Month) -> Vec<u8> {
    let mut k = team.as_str().as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(&month.to_be_bytes());
    k
}

impl Ledger {
    pub(super) fn new(tree: sled::Tree, q: Quarantine) -> Self {
        Self { tree, q }
    }

    /// Adds `credits` to the team's use in the month of `at_ms`.
    pub fn charge(&self, team: &TeamId, credits: u64, at_ms: u64) -> Result<()> {
        if credits == 0 {
            return Ok(());
        }
        add_to(&self.tree, &self.q, &key(team, month_of(at_ms)), credits)
    }

    /// Credits the team used in `month`.
    pub fn used(&self, team: &TeamId, month: Month) -> Result<u64> {
        Ok(self.q.get::<u64>(&self.tree, &key(team, month))?.unwrap_or(0))
    }
}

/// Adds `n` to the counter at `key` of `tree` (compare-and-swap, so concurrent additions
/// never lose one).
pub(super) fn add_to(tree: &sled::Tree, q: &Quarantine, key: &[u8], n: u64) -> Result<()> {
    loop {
        let current = tree.get(key)?;
        let used = match &current {
            Some(bytes) => match q.read::<u64>(tree, key, bytes)? {
                Some(used) => used,
                None => continue,
            },
            None => 0,
        };
        let next = codec::encode(&used.saturating_add(n))?;
        if tree.compare_and_swap(key, current, Some(next))?.is_ok() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn months_and_bounds() {
        assert_eq!(month_of(0), 197001);
        assert_eq!(month_of(1_795_478_400_000), 202611); // 2026-11-23
        assert_eq!(month_bounds(202612), (1_796_083_200_000, 1_798_761_600_000));
        assert_eq!(month_bounds(202402).1 - month_bounds(202402).0, 29 * 86_400_000);
        assert_eq!(previous_month(202601), 202512);
        assert_eq!(previous_month(202611), 202610);
        assert_eq!(history_start(202611), 202512);
        assert_eq!(history_start(202612), 202601);
    }

    #[test]
    fn charges_add_up_per_team_and_month() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let (a, b) = (TeamId::parse("a").expect("t"), TeamId::parse("b").expect("t"));
        let now = 1_795_478_400_000;
        store.ledger.charge(&a, 3, now).expect("charge");
        store.ledger.charge(&a, 2, now).expect("charge");
        store.ledger.charge(&b, 7, now).expect("charge");
        store.ledger.charge(&a, 1, 1_790_000_000_000).expect("charge");
        assert_eq!(store.ledger.used(&a, 202611).expect("used"), 5);
        assert_eq!(store.ledger.used(&b, 202611).expect("used"), 7);
        assert_eq!(store.ledger.used(&a, month_of(1_790_000_000_000)).expect("used"), 1);
    }
}
