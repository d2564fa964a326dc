//! This server's own documentation as a searchable set of passages, for
//! `POST /v2/support/docs-search`: the README, the configuration reference
//! (`config/default.toml`, one passage per section with its comments), the cluster guide
//! and the guides in `docs/`, built into the binary and split at their headings. The passages go into an
//! in-memory index of the same layout as the page index, so a question is answered with the
//! local provider's ranking (all words where some passage has them all, else any).

use std::sync::OnceLock;

use super::index::{IndexedPage, SearchIndex};
use super::{SearchRequest, local, query};

/// The documents: (path, text).
const SOURCES: &[(&str, &str)] = &[
    ("README.md", include_str!("../../README.md")),
    ("config/default.toml", include_str!("../../config/default.toml")),
    ("cluster/README.md", include_str!("../../cluster/README.md")),
    ("docs/browser-sessions.md", include_str!("../../docs/browser-sessions.md")),
    ("docs/language-models.md", include_str!("../../docs/language-models.md")),
];

/// Longest passage (bytes); longer sections are split at paragraphs.
const MAX_PASSAGE: usize = 2_000;

/// Words too common to search for.
const STOPWORDS: &[&str] = &[
    "the", "and", "for", "are", "how", "what", "can", "does", "with", "this", "that", "which", "when",
    "where", "why", "who", "you", "your", "use", "should", "from", "into", "there", "their", "about", "have",
    "has", "was", "will", "would", "could", "its", "not", "but", "all", "any", "get", "set",
];

/// One passage of the documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// File and heading, e.g. `README.md#Running a cluster`.
    pub path: String,
    /// The heading (or TOML section).
    pub heading: String,
    /// Its text.
    pub text: String,
}

/// The documentation, indexed.
#[derive(Debug)]
pub struct Docs {
    index: SearchIndex,
    passages: Vec<Passage>,
}

/// The documentation of this build, indexed on first use.
pub fn shared() -> Result<&'static Docs, String> {
    static DOCS: OnceLock<Result<Docs, String>> = OnceLock::new();
    DOCS.get_or_init(|| Docs::build().map_err(|e| e.to_string())).as_ref().map_err(Clone::clone)
}

impl Docs {
    fn build() -> tantivy::Result<Self> {
        let passages: Vec<Passage> = SOURCES.iter().flat_map(|(path, text)| split(path, text)).collect();
        let index = SearchIndex::in_memory()?;
        let pages: Vec<IndexedPage> = passages
            .iter()
            .enumerate()
            .map(|(i, p)| IndexedPage {
                url: format!("http://docs.invalid/{i}"),
                title: p.heading.clone(),
                description: String::new(),
                text: p.text.clone(),
                file_type: "md".to_owned(),
                ..IndexedPage::default()
            })
            .collect();
        index.add(&pages)?;
        index.commit()?;
        Ok(Self { index, passages })
    }

    /// Every passage.
    pub fn passages(&self) -> &[Passage] {
        &self.passages
    }

    /// The `n` passages that best answer `question`, best first, with the question's
    /// words each contains.
    pub fn find(&self, question: &str, n: usize) -> Vec<(&Passage, Vec<String>)> {
        let words = keywords(question);
        if words.is_empty() {
            return Vec::new();
        }
        let raw = words.join(" ");
        let Ok(query) = query::parse(&raw) else { return Vec::new() };
        let request = SearchRequest::web(raw, query, n.saturating_mul(4).max(20));
        let Ok(found) = local::search(&self.index, &request) else { return Vec::new() };
        let pairs = pairs_of(&words);
        let mut ranked: Vec<(&Passage, Vec<String>, usize)> = found
            .web
            .iter()
            .filter_map(|hit| hit.url.rsplit('/').next()?.parse::<usize>().ok())
            .filter_map(|i| self.passages.get(i))
            .map(|p| {
                let lower = format!("{} {}", p.heading, p.text).to_lowercase();
                // Every section of the configuration reference is a setting.
                let setting = |w: &str| SETTING_WORDS.contains(&w) && p.path.starts_with(CONFIG);
                let matched =
                    words.iter().filter(|w| lower.contains(w.as_str()) || setting(w)).cloned().collect();
                let together = pairs_of(&keywords_in_order(&lower));
                (p, matched, pairs.iter().filter(|pair| together.contains(pair)).count())
            })
            .collect();
        // A passage that has more of the question's words answers it better than one whose
        // title happens to hold one of them, and of two with as many, the one where more of
        // them stand together as in the question; the index's order breaks ties.
        ranked.sort_by_key(|(_, matched, together)| std::cmp::Reverse((matched.len(), *together)));
        ranked.truncate(n);
        ranked.into_iter().map(|(p, matched, _)| (p, matched)).collect()
    }
}

/// The configuration reference's path.
const CONFIG: &str = "config/default.toml";

/// Words by which a question asks for a setting.
const SETTING_WORDS: &[&str] =
    &["setting", "settings", "option", "options", "configure", "configuration", "config"];

/// The words of `text` worth searching for, in order, repeats kept.
fn keywords_in_order(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '_')
        .map(str::to_lowercase)
        .filter(|w| w.len() >= 3 && !STOPWORDS.contains(&w.as_str()))
        .collect()
}

/// Each word of `words` with the next one.
fn pairs_of(words: &[String]) -> std::collections::HashSet<(String, String)> {
    words.windows(2).map(|w| (w[0].clone(), w[1].clone())).collect()
}

/// The words of `question` worth searching for.
pub fn keywords(question: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in question.split(|c: char| !c.is_alphanumeric() && c != '_') {
        let word = word.to_lowercase();
        if word.len() >= 3 && !STOPWORDS.contains(&word.as_str()) && !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

/// The passages of one document: Markdown at its headings, TOML at its `[sections]` (the
/// comments above a section belong to it).
fn split(path: &str, text: &str) -> Vec<Passage> {
    let toml = path.ends_with(".toml");
    let mut out = Vec::new();
    let mut heading = String::new();
    let mut body = String::new();
    let mut fence = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
        }
        let starts = if toml {
            line.starts_with('[').then(|| line.trim().trim_matches(['[', ']']).to_owned())
        } else if !fence && line.starts_with('#') {
            Some(line.trim_start_matches('#').trim().to_owned())
        } else {
            None
        };
        if let Some(next) = starts {
            push(&mut out, path, &heading, &body);
            heading = next;
            body = std::mem::take(&mut pending);
            continue;
        }
        if toml && line.starts_with('#') {
            // A comment block may introduce the next section.
            pending.push_str(line.trim_start_matches('#').trim());
            pending.push('\n');
            continue;
        }
        if toml {
            body.push_str(&std::mem::take(&mut pending));
        }
        body.push_str(line);
        body.push('\n');
    }
    body.push_str(&pending);
    push(&mut out, path, &heading, &body);
    out
}

fn push(out: &mut Vec<Passage>, path: &str, heading: &str, body: &str) {
    let body = body.trim();
    if body.is_empty() {
        return;
    }
    let name = if heading.is_empty() { path.to_owned() } else { format!("{path}#{heading}") };
    let mut chunk = String::new();
    for paragraph in body.split("\n\n") {
        if !chunk.is_empty() && chunk.len() + paragraph.len() > MAX_PASSAGE {
            out.push(Passage {
                path: name.clone(),
                heading: heading.to_owned(),
                text: std::mem::take(&mut chunk),
            });
        }
        if !chunk.is_empty() {
            chunk.push_str("\n\n");
        }
        chunk.push_str(paragraph);
    }
    if !chunk.is_empty() {
        out.push(Passage { path: name, heading: heading.to_owned(), text: chunk });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_split_at_headings_and_sections() {
        let md = split("A.md", "# Title\n\nIntro.\n\n## Setup\n\nRun it.\n```sh\n# not a heading\n```\n");
        assert_eq!(md.len(), 2);
        assert_eq!(md[1].path, "A.md#Setup");
        assert!(md[1].text.contains("# not a heading"));
        let toml = split("c.toml", "[a]\nx = 1\n# About b.\n[b]\ny = 2\n");
        assert_eq!(toml.len(), 2);
        assert_eq!(toml[1].heading, "b");
        assert!(toml[1].text.starts_with("About b."), "{:?}", toml[1]);
    }

    #[test]
    fn questions_find_the_passages_that_answer_them() {
        let docs = shared().expect("docs");
        let found = docs.find("Which setting limits the calls in flight to the language model?", 3);
        assert!(
            found.iter().any(|(p, _)| p.path == "config/default.toml#llm"),
            "{:?}",
            found.iter().map(|(p, _)| &p.path).collect::<Vec<_>>()
        );
        assert!(docs.find("the and how", 3).is_empty());
    }

    #[test]
    fn a_passage_with_the_questions_words_together_ranks_first() {
        let docs = shared().expect("docs");
        let found = docs.find("Which setting limits the calls in flight to the language model?", 3);
        assert_eq!(found.first().map(|(p, _)| p.path.as_str()), Some("config/default.toml#llm"), "{found:?}");
        let pairs = pairs_of(&keywords_in_order("Calls in flight across the server; the language model."));
        assert!(pairs.contains(&("calls".to_owned(), "flight".to_owned())), "{pairs:?}");
        assert!(pairs.contains(&("language".to_owned(), "model".to_owned())), "{pairs:?}");
    }
}
