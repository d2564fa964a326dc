//! A crawl's scope rules: the input's lines are the start URL, include and exclude
//! patterns (lines starting `+` and `-`), then URLs checked against the scope and turned
//! into frontier keys. The first byte sets the scope's switches.
#![no_main]

use ferrocrawl::crawl::keys::{KeyRules, key, normalize};
use ferrocrawl::crawl::scope::{Scope, ScopeOptions, validate_patterns};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&switches, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let mut lines = text.lines();
    let Some(start) = lines.next().and_then(|l| url::Url::parse(l).ok()) else { return };
    let mut options = ScopeOptions {
        regex_on_full_url: switches & 1 != 0,
        crawl_entire_domain: switches & 2 != 0,
        allow_external_links: switches & 4 != 0,
        allow_subdomains: switches & 8 != 0,
        ..ScopeOptions::default()
    };
    let mut urls = Vec::new();
    for line in lines {
        if let Some(p) = line.strip_prefix('+') {
            options.include_paths.push(p.to_owned());
        } else if let Some(p) = line.strip_prefix('-') {
            options.exclude_paths.push(p.to_owned());
        } else {
            urls.push(line.to_owned());
        }
    }
    if validate_patterns(&options).is_err() {
        return;
    }
    let Ok(scope) = Scope::new(&start, options) else { return };
    let rules = KeyRules { ignore_query: switches & 16 != 0, similar: switches & 32 != 0 };
    for u in urls {
        let Ok(url) = start.join(&u) else { continue };
        let normal = normalize(&url, rules);
        let _ = scope.check(&normal);
        let _ = scope.is_internal(&normal);
        let _ = key(&normal, rules);
    }
});
