//! The two ledgers a team's use is counted in (credits charged, language-model tokens
//! used), and a total of one of them ([`Tally`]): this node's own, read from its store, or
//! what other nodes of a cluster used, as `remote::teams` adds them up.

use std::collections::BTreeMap;

use crate::model::TeamId;
use crate::store::ledger::Month;
use crate::store::reports::Report;
use crate::store::{Store, StoreError};

/// A ledger of a team's use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ledger {
    /// Credits charged.
    Credits,
    /// Language-model tokens used.
    Tokens,
}

impl Ledger {
    /// How this ledger is told apart on disk (reports) and between nodes.
    pub fn byte(self) -> u8 {
        match self {
            Self::Credits => 0,
            Self::Tokens => 1,
        }
    }

    /// The ledger written as `byte`.
    pub fn of_byte(byte: u8) -> Option<Self> {
        [Self::Credits, Self::Tokens].into_iter().find(|l| l.byte() == byte)
    }

    /// This node's own total of the team's `month` in this ledger.
    pub fn tally(self, store: &Store, team: &TeamId, month: Month) -> Result<Tally, StoreError> {
        Ok(match self {
            Self::Credits => Tally { total: store.ledger.used(team, month)?, by_key: BTreeMap::new() },
            Self::Tokens => Tally {
                total: store.tokens.used(team, month)?,
                by_key: store.tokens.by_key(team, month)?.into_iter().collect(),
            },
        })
    }
}

/// A total of a ledger, and for tokens its part per API key label.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// The total.
    pub total: u64,
    /// For tokens: the part per API key label.
    pub by_key: BTreeMap<String, u64>,
}

impl Tally {
    /// The tally of a report as kept on disk and passed on between nodes.
    pub fn of_report(report: Report) -> Self {
        Self { total: report.total, by_key: report.by_key.into_iter().collect() }
    }

    /// This tally as a report.
    pub fn report(&self) -> Report {
        Report { total: self.total, by_key: self.by_key.clone().into_iter().collect() }
    }

    /// Adds `other` to this tally.
    pub fn add(&mut self, other: &Self) {
        self.total = self.total.saturating_add(other.total);
        for (label, n) in &other.by_key {
            let part = self.by_key.entry(label.clone()).or_default();
            *part = part.saturating_add(*n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_add_up_per_key() {
        let tally = |total, by_key: &[(&str, u64)]| Tally {
            total,
            by_key: by_key.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect(),
        };
        let mut sum = tally(300, &[("k1", 200), ("k2", 100)]);
        sum.add(&tally(50, &[("k2", 20), ("k3", 30)]));
        assert_eq!(sum, tally(350, &[("k1", 200), ("k2", 120), ("k3", 30)]));
        assert_eq!(Tally::of_report(sum.report()), sum);
        assert_eq!(Ledger::of_byte(Ledger::Tokens.byte()), Some(Ledger::Tokens));
    }
}
