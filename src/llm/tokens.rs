//! Token counts, estimated with OpenAI's cl100k tokenizer (`bpe-openai`, a linear-time
//! byte-pair encoder that gives tiktoken's exact counts): exact for the GPT-4 family,
//! within some 10–20 % for Llama, Qwen or Mistral tokenizers, which is what a limit and a
//! usage estimate need. Used to cut page text at `llm.max_input_tokens` and to count
//! tokens when a server leaves `usage` out of its answer.

use super::{ChatRequest, Usage};

/// Tokens every message adds beyond its text (role and separators), as OpenAI counts them.
const PER_MESSAGE: u64 = 4;

fn tokenizer() -> &'static bpe_openai::Tokenizer {
    bpe_openai::cl100k_base()
}

/// Tokens of `text`.
pub fn count(text: &str) -> usize {
    tokenizer().count(text)
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
    for piece in t.split(text) {
        let n = t.bpe.count(piece.as_bytes());
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

/// [`cut`] for an owned text, counted on the blocking pool when it has to be, so a long
/// page never holds an async worker.
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
        assert!(count(kept) <= 10);
    }
}
