//! URL handling: the document base, absolute links and image sources, the choice of
//! the best image candidate (`srcset`, lazy-loading attributes), and the page-wide
//! link and image lists.

use std::collections::HashSet;

use scraper::Html;
use scraper::node::Element;
use url::Url;

/// Repairs `http:/host` and `https:/host` (one slash), a common authoring slip.
fn fix_scheme_slash(href: &str) -> Option<String> {
    for scheme in ["http:/", "https:/"] {
        if let Some(rest) = strip_prefix_ci(href, scheme)
            && !rest.starts_with('/')
        {
            return Some(format!("{scheme}/{rest}"));
        }
    }
    None
}

fn strip_prefix_ci<'s>(s: &'s str, prefix: &str) -> Option<&'s str> {
    let head = s.get(..prefix.len())?;
    if head.eq_ignore_ascii_case(prefix) { s.get(prefix.len()..) } else { None }
}

/// Resolves `href` against `base`.
pub(crate) fn resolve(base: &Url, href: &str) -> Option<Url> {
    let href = href.trim();
    match fix_scheme_slash(href) {
        Some(fixed) => base.join(&fixed).ok(),
        None => base.join(href).ok(),
    }
}

/// Resolves `href` against `base`, keeping it as written when it cannot be parsed.
pub(crate) fn resolve_str(base: &Url, href: &str) -> String {
    resolve(base, href).map_or_else(|| href.trim().to_string(), String::from)
}

/// The document base: `<base href>` resolved against the page URL, else the page URL.
pub(crate) fn document_base(html: &Html, page: &Url) -> Url {
    html.tree
        .values()
        .filter_map(|n| n.as_element())
        .find(|el| el.name() == "base" && el.attr("href").is_some())
        .and_then(|el| el.attr("href"))
        .and_then(|href| resolve(page, href))
        .unwrap_or_else(|| page.clone())
}

/// One `srcset` candidate: URL and its width or density descriptor.
struct Candidate<'s> {
    url: &'s str,
    width: Option<f64>,
    density: f64,
}

fn parse_srcset(srcset: &str) -> Vec<Candidate<'_>> {
    let mut out = Vec::new();
    let mut rest = srcset;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == ',');
        if rest.is_empty() {
            break;
        }
        let end = rest.find(|c: char| c.is_ascii_whitespace()).unwrap_or(rest.len());
        let (raw_url, after) = rest.split_at(end);
        let mut url = raw_url;
        let descriptors;
        if url.ends_with(',') {
            url = url.trim_end_matches(',');
            descriptors = "";
            rest = after;
        } else {
            let stop = after.find(',').unwrap_or(after.len());
            descriptors = after.get(..stop).unwrap_or("");
            rest = after.get(stop..).unwrap_or("");
        }
        let mut cand = Candidate { url, width: None, density: 1.0 };
        for d in descriptors.split_ascii_whitespace() {
            let Some(split) = d.len().checked_sub(1).filter(|&i| d.is_char_boundary(i)) else {
                continue;
            };
            let (num, unit) = d.split_at(split);
            match (unit, num.parse::<f64>()) {
                ("w", Ok(v)) if v > 0.0 => cand.width = Some(v),
                ("x", Ok(v)) if v > 0.0 => cand.density = v,
                _ => {}
            }
        }
        if !url.is_empty() {
            out.push(cand);
        }
    }
    out
}

/// Largest candidate of a `srcset`. With density descriptors only and a usable `src`
/// (which counts as 1x), a candidate wins only when it is denser than 1x.
fn best_candidate(srcset: &str, has_src: bool) -> Option<&str> {
    let cands = parse_srcset(srcset);
    if cands.iter().any(|c| c.width.is_some()) {
        return cands
            .iter()
            .filter(|c| c.width.is_some())
            .max_by(|a, b| a.width.partial_cmp(&b.width).unwrap_or(std::cmp::Ordering::Equal))
            .map(|c| c.url);
    }
    let best =
        cands.iter().max_by(|a, b| a.density.partial_cmp(&b.density).unwrap_or(std::cmp::Ordering::Equal))?;
    if has_src && best.density <= 1.0 { None } else { Some(best.url) }
}

fn looks_like_image_url(v: &str) -> bool {
    let v = v.trim();
    if v.is_empty() || v.contains(char::is_whitespace) {
        return false;
    }
    let lower = v.to_ascii_lowercase();
    let path = lower.split(['?', '#']).next().unwrap_or("");
    [".jpg", ".jpeg", ".png", ".webp", ".gif", ".avif"].iter().any(|ext| path.ends_with(ext))
}

/// The source to show for an `img`: the largest `srcset` candidate, else `src`, else
/// a lazy-loading attribute when `src` is missing or a `data:` placeholder.
pub(crate) fn image_source(el: &Element) -> Option<&str> {
    let (mut src, mut srcset, mut lazy_set, mut lazy) = (None, None, None, None);
    for (k, v) in el.attrs() {
        let v = v.trim();
        if v.is_empty() {
            continue;
        }
        match k {
            "src" => src = Some(v),
            "srcset" => srcset = Some(v),
            "data-srcset" | "data-lazy-srcset" => lazy_set = lazy_set.or(Some(v)),
            "data-src" | "data-lazy-src" | "data-original" | "data-lazy" | "data-url" | "data-hi-res-src"
            | "data-full-src" => lazy = lazy.or(Some(v)),
            _ => {}
        }
    }
    let has_lazy = lazy.is_some() || lazy_set.is_some();
    let placeholder = match src {
        None => true,
        Some(s) => has_lazy && strip_prefix_ci(s, "data:").is_some(),
    };
    if let Some(best) = srcset.and_then(|s| best_candidate(s, !placeholder)) {
        return Some(best);
    }
    if placeholder {
        if let Some(best) = lazy_set.and_then(|s| best_candidate(s, false)) {
            return Some(best);
        }
        if lazy.is_some() {
            return lazy;
        }
        if src.is_none() {
            return el
                .attrs()
                .filter(|(k, _)| k.starts_with("data-"))
                .map(|(_, v)| v.trim())
                .find(|v| looks_like_image_url(v));
        }
    }
    src
}

/// A hash set with a fast keyed hasher (pages hold hundreds of links; SipHash showed up).
type FastSet<T> = HashSet<T, foldhash::fast::RandomState>;

/// Drops repeated items, keeping first occurrences in order (no copies of the strings).
fn dedup_in_order(items: &mut Vec<String>) {
    let keep: Vec<bool> = {
        let mut seen = FastSet::with_capacity_and_hasher(items.len(), Default::default());
        items.iter().map(|s| seen.insert(s.as_str())).collect()
    };
    let mut keep = keep.into_iter();
    items.retain(|_| keep.next().unwrap_or(true));
}

/// Every link of the page, absolute, de-duplicated, in document order.
pub(crate) fn page_links(html: &Html, base: &Url) -> Vec<String> {
    // Repeated hrefs (navigation, footers) are resolved once.
    let mut raw_seen: FastSet<&str> = FastSet::default();
    let mut out = Vec::new();
    for el in html.tree.values().filter_map(|n| n.as_element()) {
        if el.name() != "a" {
            continue;
        }
        let Some(href) = el.attr("href").map(str::trim) else {
            continue;
        };
        if href.is_empty()
            || href.starts_with('#')
            || strip_prefix_ci(href, "javascript:").is_some()
            || !raw_seen.insert(href)
        {
            continue;
        }
        if strip_prefix_ci(href, "mailto:").is_some() {
            out.push(href.to_string());
        } else if let Some(u) = resolve(base, href) {
            out.push(String::from(u));
        }
    }
    dedup_in_order(&mut out);
    out
}

/// Every image of the page, absolute, de-duplicated, `data:` URIs left out.
pub(crate) fn page_images(html: &Html, base: &Url) -> Vec<String> {
    let mut out: Vec<String> = html
        .tree
        .values()
        .filter_map(|n| n.as_element())
        .filter(|el| el.name() == "img")
        .filter_map(image_source)
        .filter(|src| strip_prefix_ci(src, "data:").is_none())
        .filter_map(|src| resolve(base, src))
        .map(String::from)
        .collect();
    dedup_in_order(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srcset_picks_widest_or_densest() {
        assert_eq!(best_candidate("a.jpg 300w, b.jpg 900w, c.jpg 600w", true), Some("b.jpg"));
        assert_eq!(best_candidate("a.jpg 1x, b.jpg 2x", true), Some("b.jpg"));
        assert_eq!(best_candidate("a.jpg 1x", true), None);
        assert_eq!(best_candidate("x,y.jpg 2x", true), Some("x,y.jpg"));
        assert_eq!(best_candidate("a.jpg 10é, b.jpg 2x", true), Some("b.jpg"));
    }

    #[test]
    fn single_slash_scheme_is_repaired() {
        let base = Url::parse("https://example.com/a/").expect("static URL");
        assert_eq!(resolve_str(&base, "http:/other.org/x"), "http://other.org/x");
    }
}
