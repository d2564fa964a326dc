//! Whether an HTML page fetched over HTTP looks built by JavaScript, so that rendering it in
//! the browser would show content the HTML does not hold: almost no text next to scripts,
//! an empty application root, or a "please enable JavaScript" notice.

/// Below this much visible text (non-space characters) a page with scripts is a shell.
const NEARLY_EMPTY: usize = 200;
/// Pages with an empty app root or a JavaScript notice count as shells below this.
const THIN: usize = 1500;

/// Whether `body` (served as `content_type`) looks rendered by JavaScript.
pub fn looks_js_rendered(content_type: Option<&str>, body: &[u8]) -> bool {
    if !content_type.is_none_or(|t| t.to_ascii_lowercase().contains("html")) {
        return false;
    }
    let html = String::from_utf8_lossy(&body[..body.len().min(2 << 20)]).to_ascii_lowercase();
    if !html.contains("<script") {
        return false;
    }
    let text = visible_text_len(&html);
    if text < NEARLY_EMPTY {
        return true;
    }
    let empty_root = ["root", "app", "__next", "__nuxt", "svelte"].iter().any(|id| {
        [format!("<div id=\"{id}\"></div>"), format!("<div id='{id}'></div>"), format!("<div id={id}></div>")]
            .iter()
            .any(|pattern| compact(&html).contains(pattern.as_str()))
    });
    let notice = ["enable javascript", "javascript is required", "requires javascript", "turn on javascript"]
        .iter()
        .any(|n| html.contains(n));
    text < THIN && (empty_root || notice)
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

/// Non-space characters outside tags, scripts, styles and noscript blocks.
fn visible_text_len(html: &str) -> usize {
    let mut count = 0;
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        count += rest[..lt].chars().filter(|c| !c.is_whitespace()).count();
        rest = &rest[lt..];
        let skip_to = ["script", "style", "noscript", "template"]
            .iter()
            .find(|t| rest[1..].starts_with(**t))
            .map(|t| format!("</{t}"));
        let end = match skip_to {
            Some(close) => rest.find(close.as_str()).map_or(rest.len(), |i| i + close.len()),
            None => 0,
        };
        rest = &rest[end..];
        match rest.find('>') {
            Some(gt) => rest = &rest[gt + 1..],
            None => break,
        }
    }
    count + rest.chars().filter(|c| !c.is_whitespace()).count()
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
    fn text_inside_scripts_does_not_count() {
        let html = format!("<html><body><script>{}</script></body></html>", "var a = 1;".repeat(500));
        assert!(visible_text_len(&html.to_ascii_lowercase()) < 5);
    }
}
