//! Token counts, estimated with OpenAI's cl100k tokenizer (`bpe-openai`, a linear-time
//! byte-pair encoder that gives tiktoken's exact counts): exact for the GPT-4 family,
//! within some 10–20 % for Llama, Qwen or Mistral tokenizers, which is what a limit and a
//! usage estimate need. Used to cut page text at `llm.max_input_tokens` and to count
//! tokens when a server leaves `usage` out of its answer.
//!
//! The text is cut into pieces by our own scan (`pretokenize`, the same pieces as the
//! tokenizer's regular expression); most pieces of a page are words that are one token
//! each, found in the vocabulary's table of ranks (`ranks`). A short piece of more than
//! one token is counted there by byte-pair merges, which costs less than remembering it;
//! a long one (rare: runs of symbols or spaces) is encoded by `bpe` once and remembered.

use std::collections::HashMap;
use std::sync::{LazyLock, PoisonError, RwLock};

use foldhash::fast::RandomState;

use super::pretokenize::pieces;
use super::ranks;
use super::{ChatRequest, Usage};

/// Tokens every message adds beyond its text (role and separators), as OpenAI counts them.
const PER_MESSAGE: u64 = 4;

fn tokenizer() -> &'static bpe_openai::Tokenizer {
    bpe_openai::cl100k_base()
}

/// Long pieces remembered with their counts (for every thread) before
/// the memory is cleared.
const REMEMBERED: usize = 64 * 1024;

/// Long pieces of more than one token with their counts.
type Encoded = HashMap<Box<[u8]>, u32, RandomState>;

static ENCODED: LazyLock<RwLock<Encoded>> = LazyLock::new(RwLock::default);

/// Tokens of one piece of pre-tokenized text: one when the piece is a token of the
/// vocabulary, else counted by merges when short, else encoded once and remembered.
fn piece_tokens(piece: &[u8]) -> usize {
    if piece.len() == 1 || ranks::rank(piece).is_some() {
        return 1;
    }
    if piece.len() <= ranks::SHORT {
        return ranks::count_short(piece);
    }
    let remembered = ENCODED.read().unwrap_or_else(PoisonError::into_inner).get(piece).copied();
    if let Some(n) = remembered {
        return n as usize;
    }
    let n = tokenizer().bpe.count(piece);
    let mut encoded = ENCODED.write().unwrap_or_else(PoisonError::into_inner);
    if encoded.len() >= REMEMBERED {
        encoded.clear();
    }
    encoded.insert(piece.into(), n as u32);
    n
}

/// Builds the tokenizer's tables (a moment of one core) on a thread of
/// their own, so the first page a server prepares for a model does not wait for them.
pub fn warm_in_background() {
    let built = std::thread::Builder::new().name("token-tables".into()).spawn(|| count("tables built"));
    if let Err(e) = built {
        tracing::warn!(error = %e, "could not build the token tables ahead; the first count builds them");
    }
}

/// Forgets the remembered encodings, as at start (for measurements of a cold start).
pub fn forget() {
    ENCODED.write().unwrap_or_else(PoisonError::into_inner).clear();
}

/// Tokens of `text`.
pub fn count(text: &str) -> usize {
    pieces(text).map(|piece| piece_tokens(piece.as_bytes())).sum()
}

/// `text` cut to at most `max` tokens, on a token boundary (backed off to a character
/// boundary), and whether it was cut. No token is
/// shorter than a byte, so a text of at most `max` bytes is returned without counting.
pub fn cut(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let t = tokenizer();
    let mut used = 0;
    for piece in pieces(text) {
        let n = piece_tokens(piece.as_bytes());
        if used + n > max {
            // The piece is a slice of `text`; the cut falls inside it, after the tokens that
            // still fit, backed off to a character boundary.
            let start = piece.as_ptr() as usize - text.as_ptr() as usize;
            let tokens = t.bpe.encode_via_backtracking(piece.as_bytes());
            let mut end = start + t.bpe.decode_tokens(&tokens[..max - used]).len();
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            return (&text[..end], true);
        }
        used += n;
    }
    (text, false)
}

/// [`cut`] for an owned text, counted off the async workers when it has to be, so a long
/// page never holds one: on a multi-threaded runtime this thread stops being a worker
/// while it counts (`block_in_place`: the runtime hands its other tasks to a new worker,
/// and this count starts at once, without waiting for a thread of the blocking pool),
/// elsewhere on the blocking pool.
pub async fn cut_off_worker(text: String, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let cut_owned = move || {
        let end = cut(&text, max).0.len();
        let mut text = text;
        let was_cut = end < text.len();
        text.truncate(end);
        (text, was_cut)
    };
    let flavor = tokio::runtime::Handle::try_current().map(|runtime| runtime.runtime_flavor());
    if matches!(flavor, Ok(tokio::runtime::RuntimeFlavor::MultiThread)) {
        return tokio::task::block_in_place(cut_owned);
    }
    tokio::task::spawn_blocking(cut_owned).await.unwrap_or_else(|_| (String::new(), true))
}

/// What a call cost by our count, for servers that do not say.
pub fn estimate(request: &ChatRequest, answer: &str) -> Usage {
    let input = request.messages.iter().map(|m| count(&m.content) as u64 + PER_MESSAGE).sum::<u64>();
    Usage { input, output: count(answer) as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_cuts_on_token_boundaries() {
        assert_eq!(count("hello world"), 2);
        let text = "The quick brown fox jumps over the lazy dog. ".repeat(50);
        let (short, was_cut) = cut(&text, 20);
        assert!(was_cut);
        assert_eq!(count(short), 20);
        assert!(text.starts_with(short));
        assert_eq!(cut("tiny", 100), ("tiny", false));
        let accents = "é".repeat(300);
        let (kept, was_cut) = cut(&accents, 10);
        assert!(was_cut && !kept.is_empty() && kept.chars().all(|c| c == 'é'));
        assert!(count(kept) <= 10);
    }

    #[test]
    fn counts_as_the_tokenizer_does() {
        let t = tokenizer();
        for text in [
            "hello world, it's 2026!",
            "Ünïcödé and 日本語 with   spaces\n\n\tand tabs",
            "supercalifragilisticexpialidocious antidisestablishmentarianism",
            "https://example.com/a/b?c=d&e=f#anchor",
        ] {
            // Twice: the second count reads the remembered pieces.
            assert_eq!(count(text), t.count(text), "{text:?}");
            assert_eq!(count(text), t.count(text), "{text:?}");
        }
    }

    #[test]
    fn long_texts_are_cut_off_the_workers_of_either_kind_of_runtime() {
        let text = "Markdown of a long page, with words and numbers 12345!\n".repeat(500);
        let expected = cut(&text, 1_000);
        for runtime in [
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).build(),
            tokio::runtime::Builder::new_current_thread().build(),
        ] {
            let runtime = runtime.expect("runtime");
            let (kept, was_cut) =
                runtime.block_on(runtime.spawn(cut_off_worker(text.clone(), 1_000))).expect("task");
            assert_eq!((kept.as_str(), was_cut), expected);
        }
    }

    #[test]
    fn every_token_alone_encodes_as_itself() {
        let bpe = &tokenizer().bpe;
        let odd = (0..bpe.num_tokens() as u32).filter(|&id| bpe.count(bpe.token_bytes(id)) != 1).count();
        assert_eq!(odd, 0, "tokens whose own bytes encode as more than one token");
    }
}
