//! The instructions given to the model for each feature, and the checks of what comes
//! back that do not need a model: quotes and highlights must be verbatim spans of the page.

/// A summary of a page.
pub const SUMMARY: &str = "You summarise web pages. Write a concise, factual summary of the page \
the user sends (at most about 120 words), in the page's language. Do not add facts that are not on \
the page. Answer with the summary text only.";

/// Extraction into JSON; the caller's prompt, when given, follows.
pub const EXTRACT: &str = "You extract structured data from web pages. Read the page the user \
sends and return the data asked for. Use only what the page says; where it does not say, use null.";

/// A question about a page (`question`, and `query` in freeform mode).
pub const QUESTION: &str = "You answer questions about a web page. Use only what the page says; \
if the page does not answer the question, say so. Answer briefly, with the answer only.";

/// `query` in directQuote mode and `highlights`: verbatim spans only.
pub const QUOTES: &str = "You find passages in a web page. Return a JSON object \
{\"quotes\": [\"...\"]} listing at most 5 passages of the page that best answer the request, each \
copied exactly, character for character, from the page (whole sentences; no paraphrase, no \
ellipsis). Return {\"quotes\": []} when nothing on the page answers it.";

/// The cleaning pass of `onlyCleanContent`.
pub const CLEAN: &str = "You clean Markdown extracted from a web page. Remove the residual \
boilerplate: cookie banners, ad blocks, share widgets, breadcrumbs, newsletter sign-ups, comment \
sections and related-article lists. Keep everything else exactly as written: headings, paragraphs, \
lists, tables, code blocks, image references and inline links. Do not rewrite, summarise or add \
anything. Answer with the cleaned Markdown only, without code fences around it.";

/// The page given to the model: its URL, title and Markdown.
pub fn page(url: &str, title: Option<&str>, markdown: &str) -> String {
    match title {
        Some(title) if !title.is_empty() => format!("URL: {url}\nTitle: {title}\n\n{markdown}"),
        _ => format!("URL: {url}\n\n{markdown}"),
    }
}

/// `text` with every run of whitespace made one space, and its characters lowercased, for
/// comparing quotes with the page.
fn folded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// The quotes that are verbatim spans of `page` (whitespace and case aside, and Markdown
/// emphasis markers ignored), and how many were not.
pub fn verbatim(page: &str, quotes: &[String]) -> (Vec<String>, usize) {
    let plain = |t: &str| folded(&t.replace(['*', '_', '`'], ""));
    let haystack = plain(page);
    let mut kept = Vec::new();
    let mut dropped = 0;
    for quote in quotes {
        let needle = plain(quote.trim().trim_matches('"'));
        if needle.len() >= 3 && haystack.contains(&needle) {
            kept.push(quote.trim().trim_matches('"').to_owned());
        } else {
            dropped += 1;
        }
    }
    (kept, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_verbatim_quotes_are_kept() {
        let page = "# Pricing\n\nThe **Pro plan** costs $20 per\nmonth. Cancel any time.";
        let quotes = vec![
            "The Pro plan costs $20 per month.".to_owned(),
            "The Pro plan is cheap.".to_owned(),
            "\"Cancel any time.\"".to_owned(),
        ];
        let (kept, dropped) = verbatim(page, &quotes);
        assert_eq!(kept, ["The Pro plan costs $20 per month.", "Cancel any time."]);
        assert_eq!(dropped, 1);
    }
}
