//! Which discovered links a crawl follows (contract §14.3): web schemes only, no static
//! assets, the start URL's path scope unless `crawlEntireDomain`, `excludePaths` and
//! `includePaths` regexes on the path (or the full URL with `regexOnFullURL`), and other
//! hosts only with `allowSubdomains` (same registrable domain) or `allowExternalLinks`.

use regex::Regex;
use url::Url;

/// File extensions never crawled (assets, archives, media).
const SKIPPED_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "css", "js", "ico", "svg", "tiff", "zip", "exe", "dmg", "mp4", "mp3", "wav",
    "pptx", "xlsx", "avi", "flv", "woff", "ttf", "woff2", "webp", "inc", "gz", "tar", "rar", "7z", "iso",
    "bmp", "avif", "mov", "webm", "ogg", "m4a", "apk", "msi", "bin", "dll", "eot", "otf", "map",
];

/// Social and scheduling hosts not worth following as external links.
const SOCIAL_HOSTS: &[&str] = &[
    "facebook.com",
    "twitter.com",
    "x.com",
    "linkedin.com",
    "instagram.com",
    "pinterest.com",
    "github.com",
    "calendly.com",
    "discord.gg",
    "discord.com",
    "youtube.com",
    "tiktok.com",
];

/// Crawl scope options.
#[derive(Debug, Clone, Default)]
pub struct ScopeOptions {
    /// Regexes a URL must match one of (when non-empty).
    pub include_paths: Vec<String>,
    /// Regexes that exclude a URL.
    pub exclude_paths: Vec<String>,
    /// Match the regexes against the full URL instead of the path.
    pub regex_on_full_url: bool,
    /// Follow any internal link, not only those under the start path.
    pub crawl_entire_domain: bool,
    /// Follow links to other sites.
    pub allow_external_links: bool,
    /// Follow links to subdomains of the start URL's registrable domain.
    pub allow_subdomains: bool,
}

/// A regex that does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{field}[{index}]` is not a valid regular expression (`{pattern}`): {message}")]
pub struct InvalidPattern {
    /// `includePaths` or `excludePaths`.
    pub field: &'static str,
    /// Position in the list.
    pub index: usize,
    /// The pattern.
    pub pattern: String,
    /// The regex engine's message.
    pub message: String,
}

/// Why a link is not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// Not http(s).
    Scheme,
    /// A static asset or archive.
    Extension,
    /// Outside the start URL's path.
    OutsidePath,
    /// Matched an exclude pattern.
    Excluded,
    /// Matched no include pattern.
    NotIncluded,
    /// Another site (or a subdomain) without permission.
    External,
}

/// The compiled scope of one crawl.
#[derive(Debug, Clone)]
pub struct Scope {
    host: String,
    port: Option<u16>,
    site: String,
    path: PathScope,
    include: Vec<Regex>,
    exclude: Vec<Regex>,
    options: ScopeOptions,
}

#[derive(Debug, Clone)]
enum PathScope {
    /// Everything starting with this prefix.
    Prefix(String),
    /// This path or anything below `path/`.
    Under(String),
}

fn compile(list: &[String], field: &'static str) -> Result<Vec<Regex>, InvalidPattern> {
    list.iter()
        .enumerate()
        .map(|(index, pattern)| {
            Regex::new(pattern).map_err(|e| InvalidPattern {
                field,
                index,
                pattern: pattern.clone(),
                message: e.to_string().lines().last().unwrap_or_default().trim().to_owned(),
            })
        })
        .collect()
}

/// Validates the patterns alone (for request validation).
pub fn validate_patterns(options: &ScopeOptions) -> Result<(), InvalidPattern> {
    compile(&options.include_paths, "includePaths")?;
    compile(&options.exclude_paths, "excludePaths")?;
    Ok(())
}

/// The host without a leading `www.`.
pub fn bare_host(url: &Url) -> &str {
    let host = url.host_str().unwrap_or_default();
    host.strip_prefix("www.").unwrap_or(host)
}

/// The registrable domain of `host` (public suffix list), or the host itself.
pub fn registrable_domain(host: &str) -> String {
    match psl::domain(host.as_bytes()) {
        Some(d) => String::from_utf8_lossy(d.as_bytes()).into_owned(),
        None => host.to_owned(),
    }
}

impl Scope {
    /// The scope of a crawl starting at `start`.
    pub fn new(start: &Url, options: ScopeOptions) -> Result<Self, InvalidPattern> {
        let include = compile(&options.include_paths, "includePaths")?;
        let exclude = compile(&options.exclude_paths, "excludePaths")?;
        let host = bare_host(start).to_ascii_lowercase();
        let path = start.path();
        let last = path.rsplit('/').next().unwrap_or_default();
        let looks_like_file =
            last.rsplit_once('.').is_some_and(|(stem, ext)| !stem.is_empty() && ext.len() >= 2);
        let path = if path.ends_with('/') {
            PathScope::Prefix(path.to_owned())
        } else if looks_like_file {
            PathScope::Prefix(path[..path.len() - last.len()].to_owned())
        } else {
            PathScope::Under(path.to_owned())
        };
        Ok(Self {
            site: registrable_domain(&host),
            port: start.port_or_known_default(),
            host,
            path,
            include,
            exclude,
            options,
        })
    }

    /// Whether `url` is on the start URL's site (host without `www.`, same port).
    pub fn is_internal(&self, url: &Url) -> bool {
        bare_host(url).eq_ignore_ascii_case(&self.host) && url.port_or_known_default() == self.port
    }

    /// Decides whether `url` (already resolved and normalized) is followed.
    pub fn check(&self, url: &Url) -> Result<(), Rejection> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Rejection::Scheme);
        }
        if has_skipped_extension(url.path()) {
            return Err(Rejection::Extension);
        }
        let internal = self.is_internal(url);
        if internal {
            if !self.options.crawl_entire_domain && !self.in_path(url.path()) {
                return Err(Rejection::OutsidePath);
            }
        } else {
            let host = bare_host(url).to_ascii_lowercase();
            let subdomain = self.options.allow_subdomains && registrable_domain(&host) == self.site;
            let social = SOCIAL_HOSTS.iter().any(|s| host == *s || host.ends_with(&format!(".{s}")));
            if !(subdomain || (self.options.allow_external_links && !social)) {
                return Err(Rejection::External);
            }
        }
        self.check_patterns(url)
    }

    /// Only the include/exclude patterns (the start URL is checked this way).
    pub fn check_patterns(&self, url: &Url) -> Result<(), Rejection> {
        let subject = if self.options.regex_on_full_url { url.as_str() } else { url.path() };
        if self.exclude.iter().any(|re| re.is_match(subject)) {
            return Err(Rejection::Excluded);
        }
        if !self.include.is_empty() && !self.include.iter().any(|re| re.is_match(subject)) {
            return Err(Rejection::NotIncluded);
        }
        Ok(())
    }

    fn in_path(&self, path: &str) -> bool {
        match &self.path {
            PathScope::Prefix(prefix) => path.starts_with(prefix.as_str()),
            PathScope::Under(base) => {
                path == base || path.strip_prefix(base.as_str()).is_some_and(|rest| rest.starts_with('/'))
            }
        }
    }
}

fn has_skipped_extension(path: &str) -> bool {
    let last = path.rsplit('/').next().unwrap_or_default();
    match last.rsplit_once('.') {
        Some((_, ext)) => SKIPPED_EXTENSIONS.iter().any(|s| ext.eq_ignore_ascii_case(s)),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).expect("url")
    }

    fn scope(start: &str, options: ScopeOptions) -> Scope {
        Scope::new(&u(start), options).expect("scope")
    }

    #[test]
    fn path_scope_follows_the_start_url() {
        let s = scope("https://example.com/blog", ScopeOptions::default());
        assert!(s.check(&u("https://example.com/blog")).is_ok());
        assert!(s.check(&u("https://www.example.com/blog/post-1")).is_ok());
        assert_eq!(s.check(&u("https://example.com/blogroll")), Err(Rejection::OutsidePath));
        assert_eq!(s.check(&u("https://example.com/about")), Err(Rejection::OutsidePath));
        let s = scope("https://example.com/docs/index.html", ScopeOptions::default());
        assert!(s.check(&u("https://example.com/docs/intro")).is_ok());
        let s = scope("https://example.com/", ScopeOptions::default());
        assert!(s.check(&u("https://example.com/anything/at/all")).is_ok());
        let s = scope(
            "https://example.com/blog",
            ScopeOptions { crawl_entire_domain: true, ..Default::default() },
        );
        assert!(s.check(&u("https://example.com/about")).is_ok());
    }

    #[test]
    fn assets_and_other_schemes_are_skipped() {
        let s = scope("https://example.com/", ScopeOptions::default());
        assert_eq!(s.check(&u("https://example.com/logo.PNG")), Err(Rejection::Extension));
        assert_eq!(s.check(&u("mailto:a@example.com")), Err(Rejection::Scheme));
        assert!(s.check(&u("https://example.com/paper.pdf")).is_ok());
    }

    #[test]
    fn patterns_on_path_or_full_url() {
        let options = ScopeOptions {
            include_paths: vec!["^/blog/".into()],
            exclude_paths: vec!["draft".into()],
            ..Default::default()
        };
        let s = scope("https://example.com/", options.clone());
        assert!(s.check(&u("https://example.com/blog/a")).is_ok());
        assert_eq!(s.check(&u("https://example.com/news/a")), Err(Rejection::NotIncluded));
        assert_eq!(s.check(&u("https://example.com/blog/draft-1")), Err(Rejection::Excluded));
        let full = ScopeOptions {
            include_paths: vec![r"\?page=\d+$".into()],
            regex_on_full_url: true,
            ..Default::default()
        };
        let s = scope("https://example.com/", full);
        assert!(s.check(&u("https://example.com/list?page=2")).is_ok());
        assert_eq!(s.check(&u("https://example.com/list")), Err(Rejection::NotIncluded));
    }

    #[test]
    fn other_hosts_need_permission() {
        let s = scope("https://blog.example.co.uk/", ScopeOptions::default());
        assert_eq!(s.check(&u("https://shop.example.co.uk/")), Err(Rejection::External));
        let s = scope(
            "https://blog.example.co.uk/",
            ScopeOptions { allow_subdomains: true, ..Default::default() },
        );
        assert!(s.check(&u("https://shop.example.co.uk/x")).is_ok());
        assert_eq!(s.check(&u("https://other.co.uk/")), Err(Rejection::External));
        let s =
            scope("https://example.com/", ScopeOptions { allow_external_links: true, ..Default::default() });
        assert!(s.check(&u("https://elsewhere.org/page")).is_ok());
        assert_eq!(s.check(&u("https://twitter.com/someone")), Err(Rejection::External));
        let s = scope(
            "http://a.site.localhost:8080/",
            ScopeOptions { allow_subdomains: true, ..Default::default() },
        );
        assert!(s.check(&u("http://b.site.localhost:8080/")).is_ok());
    }

    #[test]
    fn ports_separate_sites() {
        let s = scope("http://127.0.0.1:8080/", ScopeOptions::default());
        assert_eq!(s.check(&u("http://127.0.0.1:9090/")), Err(Rejection::External));
    }

    #[test]
    fn invalid_patterns_are_named() {
        let err = validate_patterns(&ScopeOptions {
            exclude_paths: vec!["ok".into(), "(unclosed".into()],
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!((err.field, err.index), ("excludePaths", 1));
        assert!(err.to_string().contains("`excludePaths[1]`"));
    }
}
