//! A search query's words and operators (spec §4.7): "exact phrase", -term, site:, -site:,
//! filetype: and -filetype:, inurl:, allinurl:, intitle:, allintitle:, related:,
//! imagesize: (WIDTHxHEIGHT) and larger: (WIDTHxHEIGHT). Any operator but related:,
//! imagesize: and larger: can be negated with `-`. A word with a colon that names no
//! operator (`c++:`, `10:30`) is a plain word. A known operator without a value, or with a
//! value of the wrong shape, is an error naming it: the API answers 400 with it.

/// One constraint of a query, kept or negated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// A word of the page's text or title.
    Word(String),
    /// Words in this order.
    Phrase(String),
    /// The page's host is this one or under it; an optional path prefix follows the host.
    Site(String),
    /// The file type (`pdf`, `html`, `docx`…), without a dot.
    FileType(String),
    /// A word of the URL.
    InUrl(String),
    /// A word of the title.
    InTitle(String),
}

/// A parsed query.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// Constraints every result meets.
    pub must: Vec<Part>,
    /// Constraints no result meets.
    pub must_not: Vec<Part>,
    /// Pages like this URL or host (`related:`).
    pub related: Option<String>,
    /// Images of exactly this size (`imagesize:`).
    pub image_size: Option<(u32, u32)>,
    /// Images larger than this (`larger:`).
    pub larger_than: Option<(u32, u32)>,
}

/// Parses `input`. The error names the malformed operator and says what it needs.
pub fn parse(input: &str) -> Result<Query, String> {
    let mut query = Query::default();
    // After allinurl: / allintitle:, the remaining plain words go to the URL / title.
    let mut all_in: Option<fn(String) -> Part> = None;
    for token in tokens(input) {
        let Token { text, negated, quoted } = token;
        if quoted {
            if !text.trim().is_empty() {
                push(&mut query, negated, Part::Phrase(text));
            }
            continue;
        }
        let Some((name, value)) = operator(&text) else {
            let word = text.trim_matches(|c: char| !c.is_alphanumeric()).to_owned();
            if !word.is_empty() {
                let part = match all_in {
                    Some(make) => make(word),
                    None => Part::Word(word),
                };
                push(&mut query, negated, part);
            }
            continue;
        };
        let needs = |what: &str| format!("`{name}:` needs {what}");
        match name {
            "allinurl" | "allintitle" => {
                if negated {
                    return Err(format!("`{name}:` cannot be negated"));
                }
                all_in = Some(if name == "allinurl" { Part::InUrl } else { Part::InTitle });
                if !value.is_empty() {
                    let make = all_in.unwrap_or(Part::Word);
                    push(&mut query, false, make(value.to_owned()));
                }
            }
            "site" => {
                let site = value.trim_start_matches("https://").trim_start_matches("http://");
                let site = site.trim_end_matches('/').to_ascii_lowercase();
                // A port names no other site: `site:localhost:8080/docs` is localhost/docs.
                let site = match site.split_once('/') {
                    Some((host, path)) => format!("{}/{path}", without_port(host)),
                    None => without_port(&site).to_owned(),
                };
                if site.is_empty() || site.starts_with('/') || site.contains(char::is_whitespace) {
                    return Err(needs("a host, e.g. site:example.com"));
                }
                push(&mut query, negated, Part::Site(site));
            }
            "filetype" => {
                let kind = value.trim_start_matches('.').to_ascii_lowercase();
                if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphanumeric()) {
                    return Err(needs("a file extension, e.g. filetype:pdf"));
                }
                push(&mut query, negated, Part::FileType(kind));
            }
            "inurl" | "intitle" => {
                if value.is_empty() {
                    return Err(needs("a word, e.g. inurl:docs"));
                }
                let part = if name == "inurl" { Part::InUrl } else { Part::InTitle };
                push(&mut query, negated, part(value.to_owned()));
            }
            "related" => {
                if negated {
                    return Err("`related:` cannot be negated".to_owned());
                }
                if value.is_empty() {
                    return Err(needs("a URL or a host, e.g. related:example.com"));
                }
                query.related = Some(value.to_owned());
            }
            "imagesize" | "larger" => {
                if negated {
                    return Err(format!("`{name}:` cannot be negated"));
                }
                let size = dimensions(value).ok_or_else(|| needs("WIDTHxHEIGHT in pixels, e.g. 800x600"))?;
                if name == "imagesize" {
                    query.image_size = Some(size);
                } else {
                    query.larger_than = Some(size);
                }
            }
            _ => unreachable!("operator() names only known operators"),
        }
    }
    Ok(query)
}

fn push(query: &mut Query, negated: bool, part: Part) {
    if negated { query.must_not.push(part) } else { query.must.push(part) }
}

/// `name:value` when `text` starts with a known operator's name.
fn operator(text: &str) -> Option<(&str, &str)> {
    const NAMES: [&str; 9] =
        ["site", "filetype", "inurl", "allinurl", "intitle", "allintitle", "related", "imagesize", "larger"];
    let (name, value) = text.split_once(':')?;
    let name = NAMES.iter().find(|n| n.eq_ignore_ascii_case(name))?;
    Some((name, value))
}

/// `host` without a `:port` (an IPv6 address in brackets keeps its colons).
fn without_port(host: &str) -> &str {
    match host.rsplit_once(':') {
        Some((name, port))
            if !name.is_empty() && !name.ends_with(':') && port.chars().all(|c| c.is_ascii_digit()) =>
        {
            name
        }
        _ => host,
    }
}

/// `800x600` as (800, 600).
fn dimensions(value: &str) -> Option<(u32, u32)> {
    let (w, h) = value.to_ascii_lowercase().split_once('x').map(|(w, h)| (w.to_owned(), h.to_owned()))?;
    Some((w.parse().ok().filter(|w| *w > 0)?, h.parse().ok().filter(|h| *h > 0)?))
}

struct Token {
    text: String,
    negated: bool,
    quoted: bool,
}

/// Splits on white space, keeping "quoted text" together; `-` before a word or a quote
/// negates it; an operator's value may be quoted (`intitle:"two words"`).
fn tokens(input: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = input.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let negated = c == '-';
        if negated {
            chars.next();
        }
        let mut text = String::new();
        let mut quoted = false;
        if chars.peek() == Some(&'"') {
            chars.next();
            quoted = true;
            for c in chars.by_ref() {
                if c == '"' {
                    break;
                }
                text.push(c);
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                chars.next();
                if c == '"' && text.ends_with(':') {
                    // An operator's quoted value.
                    for c in chars.by_ref() {
                        if c == '"' {
                            break;
                        }
                        text.push(c);
                    }
                    break;
                }
                text.push(c);
            }
        }
        if !text.is_empty() || quoted {
            out.push(Token { text, negated, quoted });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<Part> {
        list.iter().map(|w| Part::Word((*w).to_owned())).collect()
    }

    #[test]
    fn words_phrases_and_negation() {
        let q = parse(r#"rust "async runtime" -tokio -"green threads""#).unwrap();
        assert_eq!(q.must, vec![Part::Word("rust".into()), Part::Phrase("async runtime".into())]);
        assert_eq!(q.must_not, vec![Part::Word("tokio".into()), Part::Phrase("green threads".into())]);
        assert_eq!(parse("c++: 10:30").unwrap().must, words(&["c", "10:30"]));
    }

    #[test]
    fn operators_with_their_values() {
        let q = parse(r#"site:Docs.Example.com/api/ -site:old.example.com filetype:.PDF -filetype:doc inurl:guide intitle:"getting started""#).unwrap();
        assert_eq!(
            q.must,
            vec![
                Part::Site("docs.example.com/api".into()),
                Part::FileType("pdf".into()),
                Part::InUrl("guide".into()),
                Part::InTitle("getting started".into()),
            ]
        );
        assert_eq!(q.must_not, vec![Part::Site("old.example.com".into()), Part::FileType("doc".into())]);
        assert_eq!(
            parse("site:localhost:8080/docs").unwrap().must,
            vec![Part::Site("localhost/docs".into())]
        );
        let q = parse("related:example.com imagesize:800x600 larger:640X480").unwrap();
        assert_eq!(
            (q.related.as_deref(), q.image_size, q.larger_than),
            (Some("example.com"), Some((800, 600)), Some((640, 480)))
        );
    }

    #[test]
    fn allinurl_and_allintitle_take_the_words_after_them() {
        let q = parse("crawler allinurl: docs api").unwrap();
        assert_eq!(
            q.must,
            vec![Part::Word("crawler".into()), Part::InUrl("docs".into()), Part::InUrl("api".into())]
        );
        let q = parse("allintitle:release notes").unwrap();
        assert_eq!(q.must, vec![Part::InTitle("release".into()), Part::InTitle("notes".into())]);
    }

    #[test]
    fn malformed_operators_are_named() {
        for (query, named) in [
            ("site:", "site:"),
            ("filetype:p.d.f", "filetype:"),
            ("inurl:", "inurl:"),
            ("related:", "related:"),
            ("imagesize:big", "imagesize:"),
            ("larger:0x10", "larger:"),
            ("-related:example.com", "related:"),
            ("-allinurl:x", "allinurl:"),
        ] {
            let err = parse(query).unwrap_err();
            assert!(err.contains(&format!("`{named}`")), "{query}: {err}");
        }
    }
}
