//! URL identity during a crawl (contract §14.4): which URLs count as "the same page".
//! Fragments are dropped (except SPA routes such as `#/page`), queries optionally, and
//! with `deduplicateSimilarURLs` the www/non-www host, http/https scheme, trailing slash
//! and `index.html`/`index.php` variants all collapse into one key.

use url::Url;

/// How URLs are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRules {
    /// Drop the query string.
    pub ignore_query: bool,
    /// Collapse www, scheme, trailing-slash and index-file variants.
    pub similar: bool,
}

/// The URL to fetch: fragment removed unless it is an SPA route, query removed if asked.
pub fn normalize(url: &Url, rules: KeyRules) -> Url {
    let mut url = url.clone();
    let keep_fragment =
        url.fragment().is_some_and(|f| (f.starts_with('/') || f.starts_with("!/")) && f.len() > 1);
    if !keep_fragment {
        url.set_fragment(None);
    }
    if rules.ignore_query {
        url.set_query(None);
    }
    url
}

/// The identity of `url` under `rules` (used for the seen-set).
pub fn key(url: &Url, rules: KeyRules) -> String {
    let url = normalize(url, rules);
    if !rules.similar {
        return url.to_string();
    }
    let host = url.host_str().unwrap_or_default();
    let host = host.strip_prefix("www.").unwrap_or(host);
    let mut path = url.path().to_owned();
    for index in ["/index.html", "/index.htm", "/index.php"] {
        if let Some(stripped) = path.strip_suffix(index) {
            path = format!("{stripped}/");
            break;
        }
    }
    if path.len() > 1 {
        while path.ends_with('/') && path.len() > 1 {
            path.pop();
        }
    }
    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
    let mut out = format!("{host}{port}{path}");
    if let Some(q) = url.query() {
        out.push('?');
        out.push_str(q);
    }
    if let Some(f) = url.fragment() {
        out.push('#');
        out.push_str(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).expect("url")
    }

    const SIMILAR: KeyRules = KeyRules { ignore_query: false, similar: true };
    const EXACT: KeyRules = KeyRules { ignore_query: false, similar: false };

    #[test]
    fn similar_variants_collapse() {
        let base = key(&u("http://example.com/a"), SIMILAR);
        for v in
            ["https://www.example.com/a/", "https://example.com/a/index.html", "http://example.com/a#top"]
        {
            assert_eq!(key(&u(v), SIMILAR), base, "{v}");
        }
        assert_eq!(
            key(&u("https://example.com/"), SIMILAR),
            key(&u("http://www.example.com/index.php"), SIMILAR)
        );
        assert_ne!(key(&u("http://example.com/a"), SIMILAR), key(&u("http://example.com/b"), SIMILAR));
        assert_ne!(key(&u("http://example.com/a?x=1"), SIMILAR), base);
        assert_ne!(key(&u("http://example.com:8080/a"), SIMILAR), base);
    }

    #[test]
    fn exact_mode_keeps_variants_apart() {
        assert_ne!(key(&u("http://example.com/a"), EXACT), key(&u("http://example.com/a/"), EXACT));
        assert_eq!(key(&u("http://example.com/a#x"), EXACT), key(&u("http://example.com/a"), EXACT));
    }

    #[test]
    fn queries_and_spa_fragments() {
        let rules = KeyRules { ignore_query: true, similar: true };
        assert_eq!(key(&u("http://e.com/p?page=2"), rules), key(&u("http://e.com/p"), rules));
        assert_ne!(key(&u("http://e.com/#/inbox"), SIMILAR), key(&u("http://e.com/#/sent"), SIMILAR));
        assert_eq!(normalize(&u("http://e.com/#/inbox"), SIMILAR).as_str(), "http://e.com/#/inbox");
        assert_eq!(normalize(&u("http://e.com/a#section"), SIMILAR).as_str(), "http://e.com/a");
    }
}
