//! Pure HTML content extraction: parses a page once and produces the outputs the
//! scrape API asks for (Markdown, cleaned HTML, links, images, metadata).
//!
//! Pipeline: parse (html5ever via `scraper`) → build one working tree without
//! never-content tags, hidden elements, ads and excluded selectors → choose the
//! content (included selectors, or the main-content filter, or the whole body) →
//! write Markdown / serialize HTML from that same tree. Synchronous, no I/O.
//!
//! Hostile input: before parsing, nesting is bounded at 512 levels ([`depth`], as
//! Chromium's parser does), deeper tags dropped and their text kept, so every step is
//! linear in the page's size whatever its depth (`benches/deep.rs`). The parser is fed in
//! chunks and the steps after it check [`crate::process::cancel::requested`], so a conversion
//! nobody waits for any more stops early.

mod article;
mod chrome;
mod depth;
pub mod diff;
mod dom;
mod markdown;
mod md_code;
mod md_escape;
mod md_table;
mod metadata;
mod patterns;
mod placeholder;
mod prep;
mod prune;
mod serialize;
mod stats;
mod tags;
mod title;
mod urls;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};

use ego_tree::NodeId;
use scraper::{Html, Selector};

pub use metadata::PageMetadata;
pub use serialize::escape_html;

use dom::{Dom, Id};
use tags::Tag;

/// Options that change what content is extracted (Firecrawl scrape options).
#[derive(Debug, Clone)]
pub struct ExtractOptions {
    /// Keep only the page's main content (default true).
    pub only_main_content: bool,
    /// CSS selectors; when non-empty, the content is exactly the matching elements.
    pub include_tags: Vec<String>,
    /// CSS selectors of elements to drop.
    pub exclude_tags: Vec<String>,
    /// Replace `data:` image sources in Markdown with a placeholder (default true).
    pub remove_base64_images: bool,
    /// Drop ad slots and cookie/consent banners (default true).
    pub block_ads: bool,
}

impl Default for ExtractOptions {
    fn default() -> Self {
        ExtractOptions {
            only_main_content: true,
            include_tags: Vec::new(),
            exclude_tags: Vec::new(),
            remove_base64_images: true,
            block_ads: true,
        }
    }
}

/// Which outputs to compute (skip work that was not asked for).
#[derive(Debug, Clone, Copy, Default)]
pub struct Wanted {
    /// Compute [`Extracted::markdown`].
    pub markdown: bool,
    /// Compute [`Extracted::html`].
    pub html: bool,
    /// Compute [`Extracted::links`].
    pub links: bool,
    /// Compute [`Extracted::images`].
    pub images: bool,
}

/// Outputs of [`extract`].
#[derive(Debug, Clone, Default)]
pub struct Extracted {
    /// Markdown of the selected content, when wanted.
    pub markdown: Option<String>,
    /// Cleaned HTML of the selected content, when wanted.
    pub html: Option<String>,
    /// Every link of the page, absolute and de-duplicated, when wanted.
    pub links: Option<Vec<String>>,
    /// Every image of the page, absolute and de-duplicated, when wanted.
    pub images: Option<Vec<String>>,
    /// Page metadata (always).
    pub metadata: PageMetadata,
    /// The content (page chrome aside) is nearly empty or a loading notice, as when
    /// JavaScript fills the page in (computed with Markdown or HTML).
    pub placeholder: bool,
}

/// Checks that a CSS selector parses; the error text names the problem (used for 400 errors).
pub fn validate_selector(selector: &str) -> Result<(), String> {
    Selector::parse(selector).map(|_| ()).map_err(|e| format!("invalid CSS selector {selector:?}: {e}"))
}

/// Values of `attribute` on every element matching `selector`, per spec (Firecrawl
/// "attributes" format). An invalid selector yields an empty list.
pub fn attributes(html: &str, specs: &[(String, String)]) -> Vec<Vec<String>> {
    let doc = parse(html);
    specs
        .iter()
        .map(|(selector, attribute)| match Selector::parse(selector) {
            Ok(sel) => {
                doc.select(&sel).filter_map(|el| el.value().attr(attribute)).map(str::to_string).collect()
            }
            Err(_) => Vec::new(),
        })
        .collect()
}

/// Elements matching each selector (invalid selectors match nothing).
fn select_each(doc: &Html, selectors: &[String]) -> Vec<Vec<NodeId>> {
    selectors
        .iter()
        .map(|s| match Selector::parse(s) {
            Ok(sel) => doc.select(&sel).map(|el| el.id()).collect(),
            Err(_) => Vec::new(),
        })
        .collect()
}

/// Does the subtree show anything (non-blank text or an image)?
fn has_content(dom: &Dom, root: Id) -> bool {
    dom.descendants(root).any(|id| match dom.tag(id) {
        Tag::Text => dom.text_info(id).is_some_and(|i| !i.seg.empty),
        Tag::Img => true,
        _ => false,
    })
}

/// Input handed to the parser at a time: between chunks a cancelled conversion stops.
const PARSE_CHUNK: usize = 256 * 1024;
/// Inputs larger than this are parsed in chunks.
const CHUNKED_ABOVE: usize = 1 << 20;

/// Parses `html`, its nesting bounded ([`depth`]). An input of more than
/// [`CHUNKED_ABOVE`] bytes is fed to the parser a chunk at a time, and when the conversion
/// is cancelled ([`crate::process::cancel`]) the rest is skipped. A smaller one (a few
/// milliseconds of parsing) goes in one call, through `scraper`'s own build of the parser,
/// which runs several percent faster on the extraction benchmark than the build of it
/// this crate makes for the chunks (`benches/RESULTS.md`).
fn parse(html: &str) -> Html {
    use html5ever::tendril::TendrilSink;
    let html = depth::bound(html);
    if html.len() <= CHUNKED_ABOVE {
        return Html::parse_document(&html);
    }
    let sink = scraper::HtmlTreeSink::new(Html::new_document());
    let mut parser = html5ever::driver::parse_document(sink, Default::default());
    let mut rest: &str = &html;
    while !rest.is_empty() && !crate::process::cancel::requested() {
        let mut cut = rest.len().min(PARSE_CHUNK);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        parser.process(rest[..cut].into());
        rest = &rest[cut..];
    }
    parser.finish()
}

/// Parse `html` once (page URL `url`, used for relative URLs) and produce what was asked.
/// A cancelled conversion ([`crate::process::cancel`]) returns early with what it has so far.
pub fn extract(html: &str, url: &url::Url, opts: &ExtractOptions, wanted: Wanted) -> Extracted {
    let doc = parse(html);
    let base = urls::document_base(&doc, url);
    let (metadata, hints) = metadata::collect(&doc, &base);
    let mut out = Extracted {
        links: wanted.links.then(|| urls::page_links(&doc, &base)),
        images: wanted.images.then(|| urls::page_images(&doc, &base)),
        metadata,
        ..Extracted::default()
    };
    if (!wanted.markdown && !wanted.html) || crate::process::cancel::requested() {
        return out;
    }

    let included = select_each(&doc, &opts.include_tags);
    let include_set: HashSet<NodeId> = included.iter().flatten().copied().collect();
    let exclude_set: HashSet<NodeId> = select_each(&doc, &opts.exclude_tags).into_iter().flatten().collect();
    let (mut page, kept) = Dom::build(
        &doc,
        &dom::BuildOptions { block_ads: opts.block_ads, exclude: &exclude_set, include: &include_set },
    );
    if crate::process::cancel::requested() {
        return out;
    }
    let body = if page.body == dom::NONE { 0 } else { page.body };
    let main_only = opts.only_main_content && opts.include_tags.is_empty();
    // What is dropped from the page when no narrower content is chosen: page chrome too for
    // main content, as much of it as leaves something to show.
    let page_mask = if main_only { chrome::mask_for(&page, body) } else { chrome::AD };

    let chosen: Option<(Dom, Id)> = if !opts.include_tags.is_empty() {
        // What the caller names is kept, even an element that looks like an ad slot.
        for &(_, id) in &kept {
            page.n_mut(id).mark &= !chrome::ALL;
        }
        page.drop_marked(0, chrome::AD);
        let root = gather_included(&mut page, &included, &kept);
        Some((page.clone(), root))
    } else if opts.only_main_content {
        let title = hints.meta_title.clone().unwrap_or_else(|| title::article_title(&hints.doc_title, &page));
        let filter_hints = article::Hints { title, has_byline: hints.has_author };
        article::main_content(&page, &filter_hints)
            .map(|(mut d, root)| {
                let mask = chrome::mask_for(&d, root);
                d.drop_marked(root, mask);
                (d, root)
            })
            .filter(|(d, root)| has_content(d, *root))
    } else {
        None
    };
    if crate::process::cancel::requested() {
        return out;
    }
    page.drop_marked(0, page_mask);
    let (tree, root) = match &chosen {
        Some((d, r)) => (d, *r),
        None => (&page, body),
    };

    let md_opts = markdown::MdOptions { remove_base64_images: opts.remove_base64_images };
    let (mut tree, mut root) = (tree, root);
    if wanted.markdown {
        let mut md = markdown::render(tree, root, &base, md_opts);
        if md.trim().is_empty() && main_only {
            (tree, root) = (&page, body);
            md = markdown::render(tree, root, &base, md_opts);
        }
        out.markdown = Some(md);
    }
    if wanted.html && !crate::process::cancel::requested() {
        out.html = Some(serialize::to_html(tree, root, &base));
    }
    out.placeholder = placeholder::is_placeholder(tree, root, if main_only { 0 } else { chrome::ALL });
    out
}

/// Moves the included elements, selector by selector, into a new container. An
/// element inside one already taken is skipped, so nothing appears twice.
fn gather_included(page: &mut Dom, included: &[Vec<NodeId>], kept: &[(NodeId, Id)]) -> Id {
    let arena_of: HashMap<NodeId, Id> = kept.iter().copied().collect();
    let root = page.create(Tag::Div);
    let mut taken: Vec<Id> = Vec::new();
    for ids in included {
        for source in ids {
            let Some(&id) = arena_of.get(source) else {
                continue;
            };
            if taken.iter().any(|&t| t == id || page.is_ancestor(t, id)) {
                continue;
            }
            page.append(root, id);
            taken.push(id);
        }
    }
    root
}
