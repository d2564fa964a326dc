//! Word documents (DOCX, Office Open XML): `word/document.xml` read in order with the
//! styles (which paragraphs are headings), numbering (bulleted or numbered lists),
//! relationships (link and image targets) and core properties (title, author).

use std::collections::HashMap;

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use super::flow::{Block, Flow};
use super::zipped::Package;
use super::{Converted, DocError, DocKind, Limits, html};
use crate::xml::{attr, each_element, element_texts, entity};

/// Converts a DOCX file.
pub(crate) fn convert(bytes: &[u8], limits: &Limits) -> Result<Converted, DocError> {
    let mut pkg = Package::open(DocKind::Docx, bytes, limits)?;
    let document = pkg.required("word/document.xml")?;
    let rels = pkg.text("word/_rels/document.xml.rels")?.map(|x| relationships(&x)).unwrap_or_default();
    let styles = pkg.text("word/styles.xml")?.map(|x| heading_styles(&x)).unwrap_or_default();
    let numbering = pkg.text("word/numbering.xml")?.map(|x| ordered_lists(&x)).unwrap_or_default();
    let (title, author) = pkg.text("docProps/core.xml")?.map(|x| core_properties(&x)).unwrap_or_default();
    let context = Context { rels, styles, numbering };
    let flow = body(&document, &context).map_err(|e| DocError::corrupt(DocKind::Docx, e))?;
    Ok(Converted { html: flow.finish(title.as_deref()), title, author, ..Converted::default() })
}

struct Context {
    /// Relationship id → target.
    rels: HashMap<String, String>,
    /// Style id → heading level.
    styles: HashMap<String, u32>,
    /// (numId, level) → numbered.
    numbering: HashMap<(String, u32), bool>,
}

/// The paragraph properties seen so far.
#[derive(Default)]
struct Para {
    style: Option<String>,
    num_id: Option<String>,
    level: u32,
}

fn body(xml: &str, cx: &Context) -> Result<Flow, quick_xml::Error> {
    let mut reader = Reader::from_str(xml);
    let mut flow = Flow::default();
    let mut para = Para::default();
    let mut in_text = false;
    let mut alt = String::new();
    while !crate::process::cancel::requested() {
        match reader.read_event()? {
            Event::Start(e) => match e.local_name().as_ref() {
                "p" => para = Para::default(),
                "t" => in_text = true,
                "hyperlink" => flow.start_link(link_target(&e, cx)),
                "tbl" => flow.start_table(),
                _ => element(&e, cx, &mut flow, &mut para, &mut alt),
            },
            Event::Empty(e) => element(&e, cx, &mut flow, &mut para, &mut alt),
            Event::End(e) => match e.local_name().as_ref() {
                "t" => in_text = false,
                "p" => flow.end_paragraph(block(&para, cx)),
                "hyperlink" => flow.end_link(),
                "tc" => flow.end_cell(),
                "tr" => flow.end_row(),
                "tbl" => flow.end_table(),
                _ => {}
            },
            Event::Text(t) if in_text => flow.text(&t),
            Event::GeneralRef(r) if in_text => flow.text(&entity(&r)),
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(flow)
}

/// Empty elements and the starts that carry properties.
fn element(e: &BytesStart<'_>, cx: &Context, flow: &mut Flow, para: &mut Para, alt: &mut String) {
    match e.local_name().as_ref() {
        "pStyle" => para.style = attr(e, "val"),
        "numId" => para.num_id = attr(e, "val"),
        "ilvl" => para.level = attr(e, "val").and_then(|v| v.parse().ok()).unwrap_or(0),
        "tab" => flow.text(" "),
        "br" | "cr" => flow.raw("<br>"),
        "docPr" => *alt = attr(e, "descr").or_else(|| attr(e, "title")).unwrap_or_default(),
        "blip" => {
            if let Some(target) = attr(e, "embed").and_then(|id| cx.rels.get(&id)) {
                flow.raw(&html::image(target, alt));
            }
        }
        _ => {}
    }
}

fn link_target(e: &BytesStart<'_>, cx: &Context) -> String {
    if let Some(target) = attr(e, "id").and_then(|id| cx.rels.get(&id)) {
        return target.clone();
    }
    attr(e, "anchor").map(|a| format!("#{a}")).unwrap_or_default()
}

fn block(para: &Para, cx: &Context) -> Block {
    if let Some(level) =
        para.style.as_ref().and_then(|s| cx.styles.get(s).copied().or_else(|| heading_level(s)))
    {
        return Block::Heading(level);
    }
    match &para.num_id {
        Some(id) if id != "0" => Block::ListItem {
            depth: para.level as usize + 1,
            ordered: cx.numbering.get(&(id.clone(), para.level)).copied().unwrap_or(false),
        },
        _ => Block::Paragraph,
    }
}

/// The heading level a style name or id stands for: "Title" is 1, "heading 2" is 2.
pub(crate) fn heading_level(name: &str) -> Option<u32> {
    let lower = name.to_ascii_lowercase();
    if lower == "title" {
        return Some(1);
    }
    let rest = lower.strip_prefix("heading")?.trim();
    rest.parse::<u32>().ok().filter(|n| (1..=9).contains(n)).map(|n| n.min(6))
}

fn relationships(xml: &str) -> HashMap<String, String> {
    let mut map = HashMap::new();
    each_element(xml, |e| {
        if e.local_name().as_ref() == "Relationship"
            && let (Some(id), Some(target)) = (attr(e, "Id"), attr(e, "Target"))
        {
            map.insert(id, target);
        }
    });
    map
}

fn heading_styles(xml: &str) -> HashMap<String, u32> {
    let mut map = HashMap::new();
    let mut current: Option<String> = None;
    each_element(xml, |e| match e.local_name().as_ref() {
        "style" => current = attr(e, "styleId"),
        "name" => {
            if let (Some(id), Some(level)) =
                (current.take(), attr(e, "val").as_deref().and_then(heading_level))
            {
                map.insert(id, level);
            }
        }
        _ => {}
    });
    map
}

fn ordered_lists(xml: &str) -> HashMap<(String, u32), bool> {
    // abstractNumId → level → numbered; then numId → abstractNumId.
    let mut abstract_levels: HashMap<String, HashMap<u32, bool>> = HashMap::new();
    let mut nums: Vec<(String, String)> = Vec::new();
    let (mut abs, mut level, mut num) = (None::<String>, 0u32, None::<String>);
    each_element(xml, |e| match e.local_name().as_ref() {
        "abstractNum" => abs = attr(e, "abstractNumId"),
        "lvl" => level = attr(e, "ilvl").and_then(|v| v.parse().ok()).unwrap_or(0),
        "numFmt" => {
            if let (Some(a), Some(fmt)) = (abs.as_ref(), attr(e, "val")) {
                abstract_levels.entry(a.clone()).or_default().insert(level, fmt != "bullet" && fmt != "none");
            }
        }
        "num" => num = attr(e, "numId"),
        "abstractNumId" => {
            if let (Some(n), Some(a)) = (num.take(), attr(e, "val")) {
                nums.push((n, a));
            }
        }
        _ => {}
    });
    let mut map = HashMap::new();
    for (num, abs) in nums {
        for (level, ordered) in abstract_levels.get(&abs).into_iter().flatten() {
            map.insert((num.clone(), *level), *ordered);
        }
    }
    map
}

/// `dc:title` and `dc:creator` of a core-properties part.
pub(crate) fn core_properties(xml: &str) -> (Option<String>, Option<String>) {
    let texts = element_texts(xml, &["title", "creator"]);
    (texts.first().cloned().flatten(), texts.get(1).cloned().flatten())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::samples::{docx, to_markdown};

    #[test]
    fn headings_lists_tables_links_and_images() {
        let body = r#"
<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Quarterly report</w:t></w:r></w:p>
<w:p><w:r><w:t xml:space="preserve">Sales grew, see </w:t></w:r><w:hyperlink r:id="rId9"><w:r><w:t>the site</w:t></w:r></w:hyperlink><w:r><w:t>.</w:t></w:r></w:p>
<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>first point</w:t></w:r></w:p>
<w:p><w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>nested point</w:t></w:r></w:p>
<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Region</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Total</w:t></w:r></w:p></w:tc></w:tr>
<w:tr><w:tc><w:p><w:r><w:t>North &amp; East</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>42</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
<w:p><w:r><w:drawing><wp:docPr id="1" descr="Logo"/><a:blip r:embed="rId5"/></w:drawing></w:r></w:p>"#;
        let out = convert(&docx(body, "Annual Report", "Ada Lovelace"), &Limits::default()).expect("docx");
        assert_eq!(out.title.as_deref(), Some("Annual Report"));
        assert_eq!(out.author.as_deref(), Some("Ada Lovelace"));
        let md = to_markdown(&out.html);
        assert!(md.contains("# Quarterly report"), "{md}");
        assert!(md.contains("Sales grew, see [the site](https://example.com/sales)."), "{md}");
        assert!(
            md.contains("- first point\n    - nested point")
                || md.contains("- first point\n  - nested point"),
            "{md}"
        );
        assert!(md.contains("| Region | Total |"), "{md}");
        assert!(md.contains("| North & East | 42 |"), "{md}");
        assert!(md.contains("![Logo](") && md.contains("media/image1.png)"), "{md}");
    }

    #[test]
    fn broken_containers_are_corrupt() {
        let err = convert(b"PK\x03\x04 not really a zip", &Limits::default()).expect_err("corrupt");
        assert!(matches!(err, DocError::Corrupt { kind: DocKind::Docx, .. }), "{err:?}");
    }
}
