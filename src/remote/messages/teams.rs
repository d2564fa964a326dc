//! The `Teams` channel: what nodes ask each other about teams (keys, credits and tokens
//! used, concurrency slots, the request rate, browser profiles). Positional (postcard), as
//! every channel: variants are only ever added at the end.

use serde::{Deserialize, Serialize};

use crate::store::ledger::Month;
use crate::store::profiles::ProfileState;
use crate::store::reports::{Report, ReportKey};
use crate::teams::Grant;

/// What nodes ask each other about teams.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Request {
    /// Whose is the key with this digest?
    KeyTeam([u8; 32]),
    /// Credits the team used in the month through this node.
    Used(String, Month),
    /// Language-model tokens the team used in the month through this node.
    Tokens(String, Month),
    /// The sender holds `held` of the team's slots and has `want` pages waiting (to the
    /// team's owner).
    Slots {
        /// The team.
        team: String,
        /// Slots the sender holds.
        held: u32,
        /// Pages waiting on the sender.
        want: u32,
    },
    /// Count one POST request of the team (to the team's owner).
    Rate(String),
    /// The team's saved profile (to the profile's keeper).
    Profile {
        /// The team.
        team: String,
        /// The profile's name.
        name: String,
    },
    /// Save the team's profile (to the profile's keeper).
    SaveProfile {
        /// The team.
        team: String,
        /// The profile's name.
        name: String,
        /// What it holds now.
        state: ProfileState,
    },
    /// The sender's ledger holds `total` credits of the team for the month (to the team's
    /// owner).
    Charged {
        /// The team.
        team: String,
        /// The month.
        month: Month,
        /// The sender's total.
        total: u64,
    },
    /// Credits the team used in the month on every node but the sender (to the team's
    /// owner).
    UsedBeyond(String, Month),
    /// The team's pages in flight and waiting on this node.
    Load(String),
    /// The sender's token ledger holds `total` tokens of the team for the month, `by_key`
    /// per key label (to the team's owner).
    TokensUsed {
        /// The team.
        team: String,
        /// The month.
        month: Month,
        /// The sender's total.
        total: u64,
        /// Its part per key label.
        by_key: Vec<(String, u64)>,
    },
    /// Tokens the team used in the month on every node but the sender (to the team's
    /// owner).
    TokensBeyond(String, Month),
    /// What the sender last heard nodes that are down report of their ledgers (each as the
    /// sender keeps it on disk), passed on to each team's owner and next owners at a
    /// membership change.
    Relayed(Vec<(ReportKey, Report)>),
}

/// The answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Response {
    /// The key's team, if this node has the key.
    KeyTeam(Option<String>),
    /// See [`Request::Used`].
    Used(u64),
    /// See [`Request::Tokens`] and [`Request::TokensBeyond`]: the total and the use per
    /// key label.
    Tokens(u64, Vec<(String, u64)>),
    /// See [`Request::Slots`].
    Slots(Grant),
    /// See [`Request::Rate`]: `None` when allowed, else how long to wait (ms).
    Rate(Option<u64>),
    /// See [`Request::Profile`].
    Profile(Option<ProfileState>),
    /// See [`Request::SaveProfile`].
    Saved,
    /// See [`Request::Charged`], [`Request::TokensUsed`] and [`Request::Relayed`].
    Noted,
    /// See [`Request::Load`]: pages in flight, pages waiting.
    Load(u32, u32),
}
