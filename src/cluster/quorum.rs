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
//!
//! A cut can also fall between two members only, each still hearing the rest: both then
//! hold a majority. Each peer's answer to a ping names the members it hears, so a node
//! that counts a member silent that a live peer hears knows the cut is between the two of
//! them, and the higher-named stands aside ([`stands_aside`]).

/// What this node knows of a peer, for the count.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seen<'a> {
    /// Its node name.
    pub name: &'a str,
    /// Its cluster address.
    pub address: &'a str,
    /// The addresses of the members it counted live at its latest answer.
    pub hears: &'a [String],
    /// A live member.
    pub up: bool,
    /// Down, and its address refused a connection since: not running.
    pub stopped: bool,
}

impl<'a> Seen<'a> {
    /// What `peer`, named `name`, is to the count.
    pub(crate) fn of(name: &'a str, peer: &'a super::agent::Peer) -> Self {
        Seen { name, address: &peer.address, up: peer.up, stopped: peer.stopped, hears: &peer.hears }
    }
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

/// Whether node `me` stands aside from a partial cut: a live peer hears a member that this
/// node counts as down and silent (not stopped), so the network fails between that member
/// and this node only. Each of the two would place the other's sites over the members it
/// hears and fetch them, beside the other still fetching them; so the one with the higher
/// name (which both tell alike) fetches nothing while the cut lasts, and the other goes on.
/// A peer's report lags its own judgement by up to a ping interval: a member that all have
/// just lost stops the higher-named ones that long.
pub(crate) fn stands_aside<'a>(me: &str, peers: impl IntoIterator<Item = Seen<'a>>) -> bool {
    let (mut heard, mut silent) = (std::collections::HashSet::new(), Vec::new());
    for peer in peers {
        if peer.up {
            heard.extend(peer.hears.iter().map(String::as_str));
        } else if !peer.stopped && peer.name < me {
            silent.push(peer.address);
        }
    }
    silent.iter().any(|address| heard.contains(address))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(name: &str, up: bool, stopped: bool) -> Seen<'_> {
        Seen { name, address: name, up, stopped, hears: &[] }
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

    #[test]
    fn of_two_members_that_cannot_hear_each_other_the_higher_named_stands_aside() {
        let all = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let only_b = ["b".to_owned()];
        let peer = |name, up, hears| Seen { name, address: name, up, stopped: false, hears };
        // a and c cannot hear each other; b hears both: c stands aside, a goes on.
        assert!(!stands_aside("a", [peer("b", true, &all[..]), peer("c", false, &[])]));
        assert!(stands_aside("c", [peer("a", false, &[]), peer("b", true, &all[..])]));
        // A whole side cut off: the live peers do not hear the lost member either.
        assert!(!stands_aside("c", [peer("a", false, &[]), peer("b", true, &only_b[..])]));
        // A member that was killed (its address refuses) holds no one back.
        let killed = Seen { stopped: true, ..peer("a", false, &[]) };
        assert!(!stands_aside("c", [killed, peer("b", true, &all[..])]));
    }
}
