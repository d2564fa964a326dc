//! cl100k's vocabulary as merge ranks, and byte-pair encoding's count of one short piece by
//! the definition of the algorithm: start from single bytes and merge, again and again, the
//! adjacent pair whose joined bytes have the lowest rank (a token's rank is its id), until
//! no joined pair is a token. For the few bytes of a pre-tokenized piece this costs less
//! than `bpe`'s backtracking encoder (no automaton scan per step, no allocation); longer
//! pieces still go to `bpe`. The tests check both against every piece of a page.
//!
//! Tokens of up to 15 bytes, nearly all of them, are keyed by their bytes packed in one
//! integer, so a look-up hashes one number and compares in place instead of reading the
//! token's bytes from elsewhere.

use std::collections::HashMap;
use std::sync::LazyLock;

use foldhash::fast::RandomState;

/// Longest piece counted here; longer ones go to `bpe`.
pub(crate) const SHORT: usize = 48;

/// Longest token kept under a packed key.
const PACKED: usize = 15;

/// Ranks of the vocabulary's tokens by their bytes.
struct Ranks {
    /// Every pair of bytes, indexed by the pair as a big-endian number: its rank, or
    /// `u32::MAX` (a piece's first merges all look here; 256 KiB, read in place).
    pairs: Box<[u32]>,
    /// Other tokens of at most [`PACKED`] bytes, by [`pack`]ed key.
    short: HashMap<u128, u32, RandomState>,
    /// Longer tokens, by their bytes.
    long: HashMap<&'static [u8], u32, RandomState>,
}

/// The bytes (at most 15) and their length in one key.
fn pack(bytes: &[u8]) -> u128 {
    let mut key = [0u8; 16];
    key[..bytes.len()].copy_from_slice(bytes);
    key[15] = bytes.len() as u8;
    u128::from_le_bytes(key)
}

static RANKS: LazyLock<Ranks> = LazyLock::new(|| {
    let bpe = &bpe_openai::cl100k_base().bpe;
    let mut ranks =
        Ranks { pairs: vec![u32::MAX; 1 << 16].into(), short: HashMap::default(), long: HashMap::default() };
    for id in 0..bpe.num_tokens() as u32 {
        let bytes = bpe.token_bytes(id);
        if let [a, b] = bytes {
            ranks.pairs[pair_index(*a, *b)] = id;
        } else if bytes.len() <= PACKED {
            ranks.short.insert(pack(bytes), id);
        } else {
            ranks.long.insert(bytes, id);
        }
    }
    ranks
});

/// Where the pair of bytes `a`, `b` is in [`Ranks::pairs`].
fn pair_index(a: u8, b: u8) -> usize {
    usize::from(a) << 8 | usize::from(b)
}

/// The rank of `bytes` when they are a token of the vocabulary.
pub(crate) fn rank(bytes: &[u8]) -> Option<u32> {
    if let [a, b] = bytes {
        let rank = RANKS.pairs[pair_index(*a, *b)];
        return (rank != u32::MAX).then_some(rank);
    }
    if bytes.len() <= PACKED {
        RANKS.short.get(&pack(bytes)).copied()
    } else {
        RANKS.long.get(bytes).copied()
    }
}

/// Tokens of `piece` (at most [`SHORT`] bytes) by repeated lowest-rank merges.
pub(crate) fn count_short(piece: &[u8]) -> usize {
    debug_assert!(piece.len() <= SHORT);
    let n = piece.len();
    if n < 2 {
        return n;
    }
    // `starts[i]` is where part `i` begins; `pair[i]` the rank of parts `i` and `i + 1`
    // joined (none when they are not a token). `len` parts are left; `starts[len]` is the end.
    let mut starts = [0u8; SHORT + 1];
    let mut pair = [u32::MAX; SHORT];
    for (i, start) in starts.iter_mut().enumerate().take(n + 1) {
        *start = i as u8;
    }
    for (i, rank_of) in pair.iter_mut().enumerate().take(n - 1) {
        *rank_of = rank(&piece[i..i + 2]).unwrap_or(u32::MAX);
    }
    let mut len = n;
    let joined = |starts: &[u8], i: usize, len: usize| {
        if i + 2 > len {
            return u32::MAX;
        }
        rank(&piece[starts[i] as usize..starts[i + 2] as usize]).unwrap_or(u32::MAX)
    };
    loop {
        let (mut best, mut at) = (u32::MAX, 0);
        for (i, &r) in pair.iter().enumerate().take(len - 1) {
            if r < best {
                (best, at) = (r, i);
            }
        }
        if best == u32::MAX {
            return len;
        }
        // Parts `at` and `at + 1` become one: drop the start of `at + 1`.
        starts.copy_within(at + 2..=len, at + 1);
        pair.copy_within(at + 2..len, at + 1);
        len -= 1;
        pair[at] = joined(&starts, at, len);
        if at > 0 {
            pair[at - 1] = joined(&starts, at - 1, len);
        }
        if len == 1 {
            return 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_token_has_its_id_as_rank() {
        let bpe = &bpe_openai::cl100k_base().bpe;
        let wrong = (0..bpe.num_tokens() as u32).filter(|&id| rank(bpe.token_bytes(id)) != Some(id)).count();
        assert_eq!(wrong, 0);
        assert_eq!(rank(b"not a token at all, surely"), None);
    }

    #[test]
    fn short_pieces_count_as_bpe_counts_them() {
        let bpe = &bpe_openai::cl100k_base().bpe;
        let mut pieces: Vec<Vec<u8>> = [
            "antidisestablishment",
            " supercalifragilistic",
            "Ünïcödé",
            " 日本語のテキスト",
            "))))]]]]}}}}",
            "\n\n\n\n\n\n",
            "                                ",
            " Donaudampfschifffahrtsgesellschaft",
            "ferrocrawl",
            "0123456789",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        // Every piece of a real page, and prefixes of the longer ones.
        for page in [
            include_str!("../../tests/fixtures/extract/article_page.html"),
            include_str!("../../tests/fixtures/extract/code.html"),
        ] {
            pieces.extend(super::super::pretokenize::pieces(page).map(|piece| piece.as_bytes().to_vec()));
        }
        let mut grown = Vec::new();
        for piece in &pieces {
            for end in 1..=piece.len().min(SHORT) {
                grown.push(piece[..end].to_vec());
            }
        }
        for piece in grown.iter().filter(|p| p.len() <= SHORT) {
            assert_eq!(count_short(piece), bpe.count(piece), "{:?}", String::from_utf8_lossy(piece));
        }
    }
}
