//! Element-level drop rules applied while the working tree is built: hidden elements
//! and, when ad blocking is on, ad slots and cookie/consent banners.
//!
//! Ad rules look at whole class/id tokens and at their `-`/`_` separated parts, never
//! at raw substrings, so `header`, `download`, `shadow`, `badge` or `read` never match.

use scraper::node::Element;

use super::tags::Tag;

/// What the tree builder needs to know about an element, from one pass over its
/// attributes.
pub(crate) struct Inspection<'e> {
    /// Hidden by the `hidden` attribute, `aria-hidden="true"` or an inline
    /// `display:none` / `visibility:hidden` style.
    pub hidden: bool,
    /// Looks like an ad slot, an ad frame or a cookie/consent banner.
    pub ad: bool,
    pub class: &'e str,
    pub id: &'e str,
    pub role: &'e str,
    /// `aria-modal="true"`: a modal dialog.
    pub modal: bool,
}

/// Inspects `el` (ad rules only when `block_ads`).
pub(crate) fn inspect(el: &Element, tag: Tag, block_ads: bool) -> Inspection<'_> {
    let mut out = Inspection { hidden: false, ad: false, class: "", id: "", role: "", modal: false };
    let mut aria_hidden = false;
    for (name, value) in el.attrs() {
        match name {
            "class" => out.class = value,
            "id" => out.id = value,
            "hidden" => out.hidden = true,
            "role" => out.role = value,
            "aria-modal" => out.modal = value.trim().eq_ignore_ascii_case("true"),
            "aria-hidden" => aria_hidden = value.trim().eq_ignore_ascii_case("true"),
            "style" => out.hidden |= style_hides(value),
            "src" if block_ads && matches!(tag, Tag::Iframe | Tag::Img | Tag::Other) => {
                out.ad |= is_ad_host(value);
            }
            _ => out.ad |= block_ads && is_ad_attribute(name),
        }
    }
    // Math renderers hide the MathML and show a fallback image marked this way.
    out.hidden |= aria_hidden && !out.class.contains("fallback-image");
    if block_ads && !out.ad {
        out.ad = out.class.split_ascii_whitespace().any(token_is_ad) || token_is_ad(out.id.trim());
    }
    out
}

fn style_hides(style: &str) -> bool {
    style.split(';').any(|decl| {
        let Some((prop, value)) = decl.split_once(':') else {
            return false;
        };
        let value = value.trim();
        let value = value.strip_suffix("!important").map_or(value, str::trim_end);
        let prop = prop.trim();
        (prop.eq_ignore_ascii_case("display") && value.eq_ignore_ascii_case("none"))
            || (prop.eq_ignore_ascii_case("visibility") && value.eq_ignore_ascii_case("hidden"))
    })
}

/// Token parts that mark an ad or a sponsored widget on their own.
const AD_PARTS: &[&str] = &[
    "ad",
    "ads",
    "adv",
    "advert",
    "adverts",
    "advertisement",
    "advertisements",
    "advertising",
    "adsense",
    "adslot",
    "adunit",
    "adsbygoogle",
    "dfp",
    "sponsored",
    "taboola",
    "outbrain",
];

/// Token prefixes of consent-management and cookie banners.
const CONSENT_PREFIXES: &[&str] = &[
    "cookie",
    "onetrust-",
    "onetrust_",
    "cybotcookiebot",
    "gdpr",
    "consent",
    "qc-cmp",
    "cc-window",
    "cc-banner",
    "cmp-",
    "truste",
    "didomi",
];

/// Hosts that only serve ads.
const AD_HOSTS: &[&str] = &[
    "doubleclick.net",
    "googlesyndication.com",
    "googleadservices.com",
    "adservice.google.",
    "amazon-adsystem.com",
    "taboola.com",
    "outbrain.com",
    "adnxs.com",
    "criteo.com",
    "criteo.net",
    "moatads.com",
    "pubmatic.com",
    "rubiconproject.com",
    "openx.net",
];

fn starts_with_ci(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len()
        && s.as_bytes().get(..prefix.len()).is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// Is the host of an absolute or scheme-relative URL a known ad server?
fn is_ad_host(src: &str) -> bool {
    let Some(start) = src.find("//") else {
        return false;
    };
    let rest = src.get(start + 2..).unwrap_or("");
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.to_ascii_lowercase();
    AD_HOSTS.iter().any(|h| host.contains(h))
}

/// Does one class or id token name an ad or a consent banner?
pub(crate) fn token_is_ad(token: &str) -> bool {
    if token.len() < 2 {
        return false;
    }
    let first = token.as_bytes().first().map_or(0, u8::to_ascii_lowercase);
    if matches!(first, b'c' | b'o' | b'g' | b'q' | b't' | b'd')
        && CONSENT_PREFIXES.iter().any(|p| starts_with_ci(token, p))
    {
        return true;
    }
    token.split(['-', '_']).any(|part| {
        let first = part.as_bytes().first().map_or(0, u8::to_ascii_lowercase);
        matches!(first, b'a' | b'd' | b's' | b't' | b'o')
            && AD_PARTS.iter().any(|w| part.eq_ignore_ascii_case(w))
    })
}

fn is_ad_attribute(name: &str) -> bool {
    name == "data-ad"
        || name.starts_with("data-ad-")
        || name.starts_with("data-ad_")
        || name.starts_with("data-ads")
        || name.starts_with("data-adunit")
        || name.starts_with("data-adslot")
        || name == "data-google-query-id"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ad_tokens_are_whole_words() {
        for t in [
            "ad",
            "ads",
            "ad-slot",
            "top_ad",
            "adsbygoogle",
            "cookie-banner",
            "onetrust-banner-sdk",
            "CybotCookiebotDialog",
            "gdpr-notice",
            "qc-cmp2-container",
            "sponsored",
        ] {
            assert!(token_is_ad(t), "{t}");
        }
        for t in ["header", "download", "shadow", "badge", "read", "adjust", "head", "loader", "address"] {
            assert!(!token_is_ad(t), "{t}");
        }
    }

    #[test]
    fn inline_styles_hide() {
        assert!(style_hides("display:none"));
        assert!(style_hides("color:red; display : none !important"));
        assert!(style_hides("visibility:hidden"));
        assert!(!style_hides("display:block"));
    }
}
