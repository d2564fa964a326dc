//! Placement by key over the live members: rendezvous (highest-random-weight) hashing. Every
//! node computes the same owner for a key from the same member list, with no coordination;
//! when a member joins or leaves, only the keys it wins or held move. The hash is FNV-1a
//! with a final mix, fixed here so that nodes of different builds agree (a rolling upgrade
//! must not move every site).
//!
//! Sites are placed by **host**: the sites of one host (its ports, http and https) have
//! their actors on one node, where they share the host's pace (spacing,
//! `domain_concurrency`, Crawl-delay), so the host's limits hold cluster-wide.

/// FNV-1a over `parts` joined by a zero byte, then SplitMix64's finaliser.
fn weight(node: &str, key: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in node.as_bytes().iter().chain(&[0]).chain(key.as_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// A node's tag: what job ids made on it carry (see `JobId::tagged`).
pub fn tag_of(node: &str) -> u32 {
    (weight(node, "job-id-tag") >> 32) as u32
}

/// The member that owns `key` (`None` when there are no members). Ties go to the smaller name.
pub fn owner<'m>(members: &'m [String], key: &str) -> Option<&'m str> {
    members
        .iter()
        .map(|m| (weight(m, key), m.as_str()))
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(a.1)))
        .map(|(_, m)| m)
}

/// The members in `key`'s order: its owner first, then the member that owns it were the
/// owner gone, and so on (the node that takes `key` over when those before it go down).
pub fn in_order<'m>(members: &'m [String], key: &str) -> impl Iterator<Item = &'m str> {
    let mut weighed: Vec<(u64, &str)> = members.iter().map(|m| (weight(m, key), m.as_str())).collect();
    weighed.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    weighed.into_iter().map(|(_, m)| m)
}

/// The first `n` members after `key`'s owner in its order, but `me`: those that take `key`
/// over should the owner go down with `me` (the second once the first is down too).
pub fn next_owners(members: &[String], key: &str, me: &str, n: usize) -> Vec<String> {
    in_order(members, key).skip(1).filter(|m| *m != me).take(n).map(str::to_owned).collect()
}

/// The host of an origin written `scheme://host[:port][/]` (an IPv6 host keeps its
/// brackets); the text after the scheme when there is no port or path.
pub fn host_of_origin(origin: &str) -> &str {
    let rest = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or(rest);
    if authority.starts_with('[') {
        return authority.split_inclusive(']').next().unwrap_or(authority);
    }
    authority.rsplit_once(':').map_or(authority, |(host, _)| host)
}

/// The key placing site `origin`: its host.
pub fn site_key(origin: &str) -> &str {
    host_of_origin(origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn owners_spread_and_only_a_leaving_members_keys_move() {
        let three = names(&["a", "b", "c"]);
        let keys: Vec<String> = (0..3000).map(|i| format!("site-{i}.example")).collect();
        let mut counts = std::collections::HashMap::new();
        for k in &keys {
            *counts.entry(owner(&three, k).expect("owner")).or_insert(0) += 1;
        }
        for (node, n) in &counts {
            assert!((800..1200).contains(n), "{node} owns {n} of 3000");
        }
        let two = names(&["a", "c"]);
        for k in &keys {
            let before = owner(&three, k).expect("owner");
            let after = owner(&two, k).expect("owner");
            if before != "b" {
                assert_eq!(before, after, "{k} moved although its owner stayed");
            }
        }
        assert_eq!(owner(&[], "x"), None);
        // The members in a key's order: each owns it once those before it are gone.
        for k in &keys {
            let order: Vec<&str> = in_order(&three, k).collect();
            assert_eq!(order.len(), 3);
            assert_eq!(Some(order[0]), owner(&three, k));
            let rest: Vec<String> = three.iter().filter(|m| *m != order[0]).cloned().collect();
            assert_eq!(Some(order[1]), owner(&rest, k), "{k}");
            assert_eq!(Some(order[2]), owner(&names(&[order[2]]), k), "{k}");
        }
        // The next owners: after the owner, never the asking node, as many as asked.
        let four = names(&["a", "b", "c", "d"]);
        for k in &keys {
            let order: Vec<&str> = in_order(&four, k).collect();
            assert_eq!(next_owners(&four, k, order[0], 2), [order[1], order[2]]);
            assert_eq!(next_owners(&four, k, order[1], 2), [order[2], order[3]]);
            assert_eq!(next_owners(&four, k, order[3], 2), [order[1], order[2]]);
            assert_eq!(next_owners(&four, k, order[2], 5), [order[1], order[3]]);
        }
        assert!(next_owners(&names(&["a"]), "x", "a", 2).is_empty());
        // Fixed values: a change of the hash would move every site in a mixed-build cluster
        // (and change the tag of every job id).
        assert_eq!(weight("node-1", "example.com"), 0xb1dd_c66b_da4d_8199);
        assert_eq!(tag_of("n1"), 0x124c_9b4e);
        assert_eq!(owner(&three, "example.com"), Some("a"));
        assert_eq!(owner(&three, "example.com"), owner(&names(&["c", "b", "a"]), "example.com"));
    }

    #[test]
    fn a_sites_host_is_read_from_its_origin() {
        assert_eq!(host_of_origin("http://a.example:8080/"), "a.example");
        assert_eq!(host_of_origin("https://a.example/"), "a.example");
        assert_eq!(host_of_origin("https://a.example"), "a.example");
        assert_eq!(host_of_origin("http://[::1]:8080/"), "[::1]");
        assert_eq!(host_of_origin("http://[::1]/"), "[::1]");
        assert_eq!(site_key("http://a.example:81/"), site_key("https://a.example/"));
    }
}
