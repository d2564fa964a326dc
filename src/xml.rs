//! Small helpers over quick-xml shared by the sitemap reader and the document converters:
//! entity references as text, attributes looked up by local name, a walk over elements, and
//! the text of named elements.

use quick_xml::Reader;
use quick_xml::events::{BytesRef, BytesStart, Event};

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

/// The text of the first element with each local name in `names`.
pub(crate) fn element_texts(xml: &str, names: &[&str]) -> Vec<Option<String>> {
    let mut found: Vec<Option<String>> = vec![None; names.len()];
    let mut reader = Reader::from_str(xml);
    let mut current: Option<usize> = None;
    let mut buf = String::new();
    while let Ok(event) = reader.read_event() {
        match event {
            Event::Start(e) => {
                current =
                    names.iter().position(|n| *n == e.local_name().as_ref()).filter(|&i| found[i].is_none());
                buf.clear();
            }
            Event::Text(t) if current.is_some() => buf.push_str(&t),
            Event::GeneralRef(r) if current.is_some() => buf.push_str(&entity(&r)),
            Event::End(_) => {
                if let Some(i) = current.take() {
                    let text = buf.trim();
                    found[i] = (!text.is_empty()).then(|| text.to_owned());
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    found
}

/// Calls `f` for every start and empty element of `xml` (stops at the first error).
pub(crate) fn each_element(xml: &str, mut f: impl FnMut(&BytesStart<'_>)) {
    let mut reader = Reader::from_str(xml);
    while let Ok(event) = reader.read_event() {
        match event {
            Event::Start(e) | Event::Empty(e) => f(&e),
            Event::Eof => break,
            _ => {}
        }
    }
}
