//! Crawl options read from a plain-language prompt without a language model, for
//! `POST /v2/crawl/params-preview` on a server without one: paths to include or exclude,
//! depth, page limit, subdomains, external links, the whole domain, query parameters,
//! sitemap use, delay and de-duplication, each from the phrases people write for them
//! ("only the /blog section", "skip /tags", "at most 50 pages", "2 levels deep",
//! "include subdomains", "no external links", "wait 2 seconds between pages"). What it
//! does not recognise it leaves out; the answer says it came from this parser.

use regex::Regex;
use serde_json::{Map, Value, json};
use std::sync::LazyLock;

/// Words that turn a following path into an exclusion when they come shortly before it.
const EXCLUDING: &[&str] = &[
    "exclude",
    "excluding",
    "skip",
    "skipping",
    "except",
    "not",
    "without",
    "ignore",
    "ignoring",
    "avoid",
    "no",
];
/// Words that negate a switch ("no subdomains", "without external links").
const NEGATING: &[&str] =
    &["no", "not", "without", "never", "don't", "dont", "exclude", "excluding", "skip", "avoid"];

static PATH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|[\s(\x22'`])(/[A-Za-z0-9._~%\-/*]*)").expect("regex"));
static LIMIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:limit(?:\s+(?:of|to))?|at\s+most|up\s+to|max(?:imum)?(?:\s+of)?|first|only)\s+(\d{1,7})\b|(\d{1,7})\s+(?:pages|urls|documents)\b")
        .expect("regex")
});
static DEPTH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:depth(?:\s+(?:of|to))?\s+(\d{1,3})\b|(\d{1,3})\s+(?:levels?|clicks?|hops?)(?:\s+deep)?)",
    )
    .expect("regex")
});
static DELAY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?)\b[^.]{0,30}\b(?:between|delay|apart|pause)|(?:delay|wait|pause)(?:\s+of)?\s+(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?)\b")
        .expect("regex")
});

/// The options `prompt` asks for, as crawl-body fields (camelCase).
pub fn options(prompt: &str) -> Map<String, Value> {
    let lower = prompt.to_lowercase();
    let mut out = Map::new();
    let (mut include, mut exclude) = (Vec::new(), Vec::new());
    for found in PATH.captures_iter(prompt) {
        let m = found.get(1).expect("group");
        let path = m.as_str().trim_end_matches(['.', ',', ')', '\'', '"', '`']);
        if path.len() < 2 {
            continue;
        }
        let before = &lower[..m.start()];
        let pattern = path_pattern(path);
        if recent_words(before, 4).iter().any(|w| EXCLUDING.contains(&w.as_str())) {
            exclude.push(pattern);
        } else {
            include.push(pattern);
        }
    }
    if !include.is_empty() {
        out.insert("includePaths".into(), json!(include));
    }
    if !exclude.is_empty() {
        out.insert("excludePaths".into(), json!(exclude));
    }
    if let Some(c) = LIMIT.captures(prompt) {
        let n = c.get(1).or(c.get(2)).and_then(|m| m.as_str().parse::<u64>().ok());
        if let Some(n) = n.filter(|n| *n > 0) {
            out.insert("limit".into(), json!(n));
        }
    }
    if let Some(c) = DEPTH.captures(prompt)
        && let Some(n) = c.get(1).or(c.get(2)).and_then(|m| m.as_str().parse::<u32>().ok())
    {
        out.insert("maxDiscoveryDepth".into(), json!(n));
    }
    if let Some(c) = DELAY.captures(prompt) {
        let (number, unit) = match (c.get(1), c.get(2)) {
            (Some(n), Some(u)) => (n.as_str(), u.as_str()),
            _ => (c.get(3).map_or("", |m| m.as_str()), c.get(4).map_or("", |m| m.as_str())),
        };
        if let Ok(n) = number.parse::<f64>() {
            let secs = if unit.to_lowercase().starts_with("m") { n / 1000.0 } else { n };
            out.insert("delay".into(), json!(secs));
        }
    }
    switch(&lower, &["subdomain"], "allowSubdomains", &mut out);
    switch(
        &lower,
        &["external link", "external site", "other domain", "other site", "external domain"],
        "allowExternalLinks",
        &mut out,
    );
    switch(
        &lower,
        &["entire domain", "whole domain", "entire site", "whole site", "whole website", "entire website"],
        "crawlEntireDomain",
        &mut out,
    );
    switch(&lower, &["deduplicat", "similar url", "duplicate"], "deduplicateSimilarURLs", &mut out);
    if lower.contains("query param") || lower.contains("query string") {
        // "ignore query parameters" turns ignoring on; "keep query parameters" off.
        let on = lower.contains("ignore query")
            || lower.contains("without query")
            || lower.contains("strip query");
        out.insert("ignoreQueryParameters".into(), json!(on));
    }
    if lower.contains("sitemap") {
        let mode = if lower.contains("only the sitemap")
            || lower.contains("sitemap only")
            || lower.contains("only sitemap")
        {
            "only"
        } else if [
            "skip the sitemap",
            "ignore the sitemap",
            "no sitemap",
            "without the sitemap",
            "skip sitemap",
            "ignore sitemap",
        ]
        .iter()
        .any(|p| lower.contains(p))
        {
            "skip"
        } else {
            "include"
        };
        out.insert("sitemap".into(), json!(mode));
    }
    out
}

/// A path as an include/exclude regex on URL paths: `/blog` → `^/blog(/.*)?$`; a `*`
/// matches anything.
fn path_pattern(path: &str) -> String {
    let trimmed = path.trim_end_matches('/').trim_end_matches("/*").trim_end_matches('*');
    let escaped: String = regex::escape(trimmed).replace(r"\*", ".*");
    if escaped.is_empty() { "^/.*$".to_owned() } else { format!("^{escaped}(/.*)?$") }
}

/// The last `n` words of `text`.
fn recent_words(text: &str, n: usize) -> Vec<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    words[words.len().saturating_sub(n)..].to_vec()
}

/// Sets `key` true when one of `phrases` occurs, false when the phrase comes right after a
/// negating word.
fn switch(lower: &str, phrases: &[&str], key: &str, out: &mut Map<String, Value>) {
    for phrase in phrases {
        if let Some(at) = lower.find(phrase) {
            let negated = recent_words(&lower[..at], 3).iter().any(|w| NEGATING.contains(&w.as_str()));
            out.insert(key.into(), json!(!negated));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_phrasings_become_options() {
        let o = options(
            "Crawl only the /blog section, skip /blog/tags, at most 50 pages, 2 levels deep, include subdomains but no external links",
        );
        assert_eq!(o["includePaths"], json!(["^/blog(/.*)?$"]));
        assert_eq!(o["excludePaths"], json!(["^/blog/tags(/.*)?$"]));
        assert_eq!(o["limit"], 50);
        assert_eq!(o["maxDiscoveryDepth"], 2);
        assert_eq!(o["allowSubdomains"], true);
        assert_eq!(o["allowExternalLinks"], false);
        let o = options(
            "Get the whole site, 200 pages, ignore query parameters, wait 1.5 seconds between requests, skip the sitemap",
        );
        assert_eq!(o["crawlEntireDomain"], true);
        assert_eq!(o["limit"], 200);
        assert_eq!(o["ignoreQueryParameters"], true);
        assert_eq!(o["delay"], 1.5);
        assert_eq!(o["sitemap"], "skip");
        let o = options("docs under /docs/* with a delay of 500 ms");
        assert_eq!(o["includePaths"], json!(["^/docs(/.*)?$"]));
        assert_eq!(o["delay"], 0.5);
        assert!(options("just the homepage").is_empty());
    }
}
