//! Token counts, estimated with OpenAI's cl100k tokenizer (`tiktoken-rs`): exact for the
//! GPT-4 family, within some 10–20 % for Llama, Qwen or Mistral tokenizers, which is what
//! a limit and a usage estimate need. Used to cut page text at `llm.max_input_tokens` and
//! to count tokens when a server leaves `usage` out of its answer.

use super::{ChatRequest, Usage};

/// Tokens every message adds beyond its text (role and separators), as OpenAI counts them.
const PER_MESSAGE: u64 = 4;

fn bpe() -> &'static tiktoken_rs::CoreBPE {
    tiktoken_rs::cl100k_base_singleton()
}

/// Tokens of `text`.
pub fn count(text: &str) -> usize {
    bpe().encode_ordinary(text).len()
}

/// `text` cut to at most `max` tokens, on a token boundary (and a character boundary), and
/// whether it was cut. No token is shorter than a byte, so a text of at most `max` bytes
/// is returned without counting.
pub fn cut(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let tokens = bpe().encode_ordinary(text);
    if tokens.len() <= max {
        return (text, false);
    }
    let kept: usize = tokens[..max].iter().map(|t| bpe().decode_bytes(&[*t]).map_or(0, |b| b.len())).sum();
    let mut end = kept.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// [`cut`] for an owned text, counted on the blocking pool when it has to be (counting
/// runs at some 6 MB/s, too long to hold an async worker for a long page).
pub async fn cut_off_worker(text: String, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text, false);
    }
    tokio::task::spawn_blocking(move || {
        let (kept, was_cut) = cut(&text, max);
        let end = kept.len();
        let mut text = text;
        text.truncate(end);
        (text, was_cut)
    })
    .await
    .unwrap_or_else(|_| (String::new(), true))
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
    }
}
