//! Every piece of knowledge about versions of the node-to-node protocol, in one table.
//!
//! **The promise:** a node speaks its own release's protocol and the previous release's, so
//! a cluster is upgraded one node at a time (`CHANGELOG.md` lists the releases with their
//! protocol versions). Nothing is kept for the commits between two releases: what one
//! release changes on the wire is one new protocol version.
//!
//! Two nodes write to each other in the older of their two versions (`cluster` carries the
//! version in every envelope). What a newer version brought is a [`Feature`]; the layers
//! that send something only some peers read ask [`Peer::supports`], never a version number
//! of their own. When a release stops speaking a version, its features become plain
//! behaviour and leave the table, together with the readings of older peers kept here
//! (see [`previous`]).

use crate::cluster::{Cluster, Versions};

/// The protocol version of this release (0.3.0).
pub const PROTOCOL: u32 = 14;
/// The protocol version of the previous release (0.2.0), which this one still speaks.
pub const PREVIOUS: u32 = 13;

/// What a protocol version brought that a peer of the previous one neither sends nor reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// A page its site's node could not take (the node's site actors are stopping, or
    /// starting again after a failure) is answered as such (`Response::NotTaken`), not as
    /// a failure whose message names the missing actor. (14)
    NotTakenAnswered,
}

impl Feature {
    /// The protocol version that brought it.
    pub const fn since(self) -> u32 {
        match self {
            Self::NotTakenAnswered => 14,
        }
    }
}

/// The versions this process speaks: [`PROTOCOL`] down to [`PREVIOUS`]. A debug build
/// reads `TEST_FERROCRAWL_PROTOCOL_VERSION` (the version it claims) so a test can start a
/// node of the previous release, and `TEST_FERROCRAWL_OLDEST_PROTOCOL_VERSION` (the oldest
/// it speaks), so a test can start one that no longer speaks this release's peers' version.
pub fn versions() -> Versions {
    let test = |name: &str| {
        let value = std::env::var(name).ok().and_then(|v| v.parse::<u32>().ok());
        value.filter(|_| cfg!(debug_assertions))
    };
    let own = test("TEST_FERROCRAWL_PROTOCOL_VERSION").unwrap_or(PROTOCOL);
    let oldest = test("TEST_FERROCRAWL_OLDEST_PROTOCOL_VERSION").unwrap_or(PREVIOUS);
    Versions { own, oldest: oldest.min(own) }
}

/// A live member as the protocol sees it: the version it and this node speak to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    version: u32,
}

impl Peer {
    /// Live member `node` of `cluster`, when it is one.
    pub fn of(cluster: &Cluster, node: &str) -> Option<Self> {
        cluster.version_of(node).map(|version| Self { version })
    }

    /// A peer that speaks `version` with this node.
    pub const fn speaking(version: u32) -> Self {
        Self { version }
    }

    /// Whether the peer reads and sends what `feature` brought.
    pub fn supports(self, feature: Feature) -> bool {
        self.version >= feature.since()
    }
}

/// How peers of the previous release ([`PREVIOUS`]) say what this release says with a
/// [`Feature`]: read and written here, and nowhere else. The module goes when [`PREVIOUS`]
/// moves past 13.
pub mod previous {
    /// The beginnings of the messages a node of protocol 13 gave a page its site actors
    /// could not take: the site supervisor did not answer a lookup, the site's actor did
    /// not take the request, it stopped with the request, or the actor tree was gone.
    const NOT_TAKEN: [&str; 4] = [
        "site supervisor unavailable",
        "site actor unavailable",
        "site actor stopped before answering",
        "root supervisor unreachable",
    ];

    /// Whether a failure a node of protocol 13 answered is its site actors not taking the
    /// page (which that protocol could only say in words).
    pub fn not_taken(message: &str) -> bool {
        NOT_TAKEN.iter().any(|words| message.contains(words))
    }

    /// A page not taken, in the words a node of protocol 13 reads as such.
    pub fn not_taken_message(reason: &str) -> String {
        if not_taken(reason) { reason.to_owned() } else { format!("{}: {reason}", NOT_TAKEN[1]) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_of_the_previous_release_lacks_this_ones_features() {
        assert!(Peer::speaking(PROTOCOL).supports(Feature::NotTakenAnswered));
        assert!(!Peer::speaking(PREVIOUS).supports(Feature::NotTakenAnswered));
        let all = [Feature::NotTakenAnswered];
        assert!(
            all.iter().all(|f| f.since() > PREVIOUS && f.since() <= PROTOCOL),
            "features of spoken versions"
        );
    }

    #[test]
    fn the_previous_releases_words_for_a_page_not_taken_are_read_and_written() {
        for words in [
            "site supervisor unavailable: Err(SendErr)",
            "actor system: root supervisor unreachable: Err(SenderError)",
            "site actor stopped before answering",
            "site actor unavailable: closed",
        ] {
            assert!(previous::not_taken(words), "{words}");
        }
        for failure in ["connection refused", "timed out after 30000 ms"] {
            assert!(!previous::not_taken(failure), "{failure}");
        }
        assert!(previous::not_taken(&previous::not_taken_message("the actor tree stopped")));
    }
}
