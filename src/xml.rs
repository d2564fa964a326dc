//! Small helpers over quick-xml shared by the sitemap reader and the document converters:
//! entity references as text, and attributes looked up by local name.

use quick_xml::events::{BytesRef, BytesStart};

/// The text of an entity or character reference (`&amp;`, `&#233;`); unknown entities are
/// kept as written.
pub(crate) fn entity(r: &BytesRef<'_>) -> String {
    if let Ok(Some(c)) = r.resolve_char_ref() {
        return c.to_string();
    }
    match r.as_ref() {
        "amp" => "&".into(),
        "lt" => "<".into(),
        "gt" => ">".into(),
        "quot" => "\"".into(),
        "apos" => "'".into(),
        other => format!("&{other};"),
    }
}

/// The unescaped value of the attribute whose local name (prefix ignored) is `local`.
pub(crate) fn attr(e: &BytesStart<'_>, local: &str) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == local)
        .and_then(|a| a.normalized_value(quick_xml::XmlVersion::Implicit1_0).ok().map(|v| v.into_owned()))
}
