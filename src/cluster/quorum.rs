//! Which side of a split cluster goes on fetching. A network cut leaves each side seeing
//! the other as down; each would then place every site over its own members and fetch it,
//! so a site would get requests from both sides. With `cluster.keep_majority` (the
//! default) only the side holding more than half of the members that may still be running
//! fetches; the other sends nothing to any site until it sees a majority again.
//!
//! The members that may still be running are this node, the live ones, and the down ones
//! that are silent (frozen, cut off, or on a machine that is off). A down member whose
//! address refuses connections is not running (its process is gone: nothing listens
//! there) and is left out, so losing nodes one kill at a time never stops the survivors.
//! Half exactly (a cluster of two cut in two, or of four cut in halves) goes to the side
//! holding the lowest-named of them, which both sides tell alike.

/// What this node knows of a peer, for the count.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seen<'a> {
    /// Its node name.
    pub name: &'a str,
    /// A live member.
    pub up: bool,
    /// Down, and its address refused a connection since: not running.
    pub stopped: bool,
}

/// Whether node `me` is on the side that fetches, with its `peers` as they are seen.
pub(crate) fn holds<'a>(me: &'a str, peers: impl IntoIterator<Item = Seen<'a>>) -> bool {
    let (mut live, mut counted, mut lowest) = (1usize, 1usize, (me, true));
    for peer in peers.into_iter().filter(|p| p.up || !p.stopped) {
        counted += 1;
        live += usize::from(peer.up);
        if peer.name < lowest.0 {
            lowest = (peer.name, peer.up);
        }
    }
    2 * live > counted || (2 * live == counted && lowest.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(name: &str, up: bool, stopped: bool) -> Seen<'_> {
        Seen { name, up, stopped }
    }

    #[test]
    fn the_side_with_most_of_the_members_that_may_run_fetches() {
        // Alone, or with every peer live.
        assert!(holds("b", []));
        assert!(holds("b", [seen("a", true, false), seen("c", true, false)]));
        // Cut off from two silent peers: the minority stops; the two together go on.
        assert!(!holds("a", [seen("b", false, false), seen("c", false, false)]));
        assert!(holds("b", [seen("a", false, false), seen("c", true, false)]));
        // A stopped peer is not counted: one killed and one frozen leave the survivor
        // with half of the two that may run, and it is the lowest-named.
        assert!(holds("a", [seen("b", false, true), seen("c", false, false)]));
        // Two killed: the survivor goes on alone.
        assert!(holds("c", [seen("a", false, true), seen("b", false, true)]));
    }

    #[test]
    fn a_tie_goes_to_the_side_of_the_lowest_named_member() {
        assert!(holds("a", [seen("b", false, false)]));
        assert!(!holds("b", [seen("a", false, false)]));
        // Four cut in halves: {a, d} goes on, {b, c} stops.
        let side = |me: &'static str, with: &'static str| {
            let others = ["a", "b", "c", "d"].into_iter().filter(|n| *n != me);
            holds(me, others.map(|n| seen(n, n == with, false)).collect::<Vec<_>>())
        };
        assert!(side("a", "d") && side("d", "a"));
        assert!(!side("b", "c") && !side("c", "b"));
    }
}
