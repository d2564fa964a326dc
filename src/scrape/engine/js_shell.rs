//! Whether an HTML page fetched over HTTP looks built by JavaScript, so that rendering it in
//! the browser would show content the HTML does not hold: almost no text next to scripts,
//! an empty application root, or a "please enable JavaScript" notice.

/// Below this much visible text (non-space characters) a page with scripts is a shell.
const NEARLY_EMPTY: usize = 200;
/// Pages with an empty app root or a JavaScript notice count as shells below this.
const THIN: usize = 1500;

/// Application roots that a JavaScript framework fills in.
const APP_ROOTS: [&str; 5] = ["root", "app", "__next", "__nuxt", "svelte"];
/// Notices shown to visitors without JavaScript.
const NOTICES: [&str; 4] =
    ["enable javascript", "javascript is required", "requires javascript", "turn on javascript"];
/// Elements whose content is never visible text, with their closing tags.
const HIDDEN: [(&str, &str); 4] =
    [("script", "</script"), ("style", "</style"), ("noscript", "</noscript"), ("template", "</template")];

/// Whether `body` (served as `content_type`) looks rendered by JavaScript.
///
/// Runs on every page fetched over HTTP, so it works on the bytes as received and stops as
/// soon as the answer is known: most pages have more than `THIN` characters of text, and
/// counting stops there.
pub fn looks_js_rendered(content_type: Option<&str>, body: &[u8]) -> bool {
    if !content_type.is_none_or(|t| t.to_ascii_lowercase().contains("html")) {
        return false;
    }
    if !has_scripts(body) {
        return false;
    }
    let html = &body[..body.len().min(2 << 20)];
    let text = visible_text_len(html, THIN);
    if text < NEARLY_EMPTY {
        return true;
    }
    if text >= THIN {
        return false;
    }
    let html = String::from_utf8_lossy(html).to_ascii_lowercase();
    NOTICES.iter().any(|n| html.contains(n)) || has_empty_root(&compact(&html))
}

/// Whether an HTML body carries a script (inline or linked) anywhere in its first 2 MiB.
pub fn has_scripts(body: &[u8]) -> bool {
    find_ci(&body[..body.len().min(2 << 20)], b"<script").is_some()
}

/// Position of `needle` (ASCII, lowercase, starting with `<`) in `hay`, ignoring ASCII case.
fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(lt) = hay[from..].iter().position(|&b| b == b'<') {
        let at = from + lt;
        if starts_with_ci(&hay[at..], needle) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

fn starts_with_ci(hay: &[u8], prefix: &[u8]) -> bool {
    hay.len() >= prefix.len() && hay[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// Whether `compact_html` holds an empty `<div id=…>` application root.
fn has_empty_root(compact_html: &str) -> bool {
    APP_ROOTS.iter().any(|id| {
        [format!("<div id=\"{id}\"></div>"), format!("<div id='{id}'></div>"), format!("<div id={id}></div>")]
            .iter()
            .any(|pattern| compact_html.contains(pattern.as_str()))
    })
}

/// `html` without whitespace between tags.
fn compact(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut after_tag = false;
    for c in html.chars() {
        if after_tag && c.is_whitespace() {
            continue;
        }
        after_tag = c == '>';
        out.push(c);
    }
    out
}

/// Characters (not bytes) of `text` that are not ASCII whitespace.
fn visible_chars(text: &[u8]) -> usize {
    text.iter().filter(|b| !b.is_ascii_whitespace() && (*b & 0xC0) != 0x80).count()
}

/// Non-space characters outside tags, scripts, styles and noscript blocks, counted up to
/// `cap` (a count at `cap` or above means "at least `cap`").
fn visible_text_len(html: &[u8], cap: usize) -> usize {
    let mut count = 0;
    let mut rest = html;
    while let Some(lt) = rest.iter().position(|&b| b == b'<') {
        count += visible_chars(&rest[..lt]);
        if count >= cap {
            return count;
        }
        rest = &rest[lt..];
        let close = HIDDEN
            .iter()
            .find(|(open, _)| starts_with_ci(&rest[1..], open.as_bytes()))
            .map(|(_, close)| *close);
        let end =
            close.map_or(0, |close| find_ci(rest, close.as_bytes()).map_or(rest.len(), |i| i + close.len()));
        rest = &rest[end..];
        match rest.iter().position(|&b| b == b'>') {
            Some(gt) => rest = &rest[gt + 1..],
            None => break,
        }
    }
    count + visible_chars(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shells_and_real_pages() {
        let shell = b"<html><body><div id=\"root\"></div><script src=/app.js></script></body></html>";
        assert!(looks_js_rendered(Some("text/html"), shell));
        let notice = format!(
            "<html><body><noscript>You need to enable JavaScript to run this app.</noscript><div id=app>\n</div>{}<script>x()</script></body></html>",
            "<p>short intro text here</p>".repeat(12)
        );
        assert!(looks_js_rendered(Some("text/html"), notice.as_bytes()));
        let article = format!(
            "<html><body><article>{}</article><script>track()</script></body></html>",
            "Real words. ".repeat(100)
        );
        assert!(!looks_js_rendered(Some("text/html"), article.as_bytes()));
        assert!(!looks_js_rendered(Some("text/html"), b"<html><body>tiny static page</body></html>"));
        assert!(!looks_js_rendered(Some("application/pdf"), shell));
    }

    #[test]
    fn counting_stops_at_the_cap() {
        let html = "<p>word</p>".repeat(1000);
        assert_eq!(visible_text_len(html.as_bytes(), usize::MAX), 4000);
        assert_eq!(visible_text_len(html.as_bytes(), 10), 12);
        assert_eq!(visible_text_len("<p>é è</p>".as_bytes(), usize::MAX), 2);
    }

    #[test]
    fn text_inside_scripts_does_not_count() {
        let html = format!("<html><body><script>{}</script></body></html>", "var a = 1;".repeat(500));
        assert!(visible_text_len(html.as_bytes(), usize::MAX) < 5);
        let upper = "<SCRIPT>var a = 1; var b = 2;</SCRIPT><P>hi</P>";
        assert_eq!(visible_text_len(upper.as_bytes(), usize::MAX), 2);
    }
}
