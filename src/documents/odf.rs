//! OpenDocument text (ODT): `content.xml` read in order (headings with their outline
//! level, paragraphs, nested lists, tables, links, images by reference) and `meta.xml`
//! (title, author). List styles say which lists are numbered.

use std::collections::{HashMap, HashSet};

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use super::flow::{Block, Flow};
use super::ooxml::heading_level;
use super::zipped::Package;
use super::{Converted, DocError, DocKind, Limits, html};
use crate::xml::{attr, each_element, element_texts, entity};

/// Most spaces one `<text:s text:c=…>` may stand for.
const MAX_SPACES: usize = 64;

/// Converts an ODT file.
pub(crate) fn convert(bytes: &[u8], limits: &Limits) -> Result<Converted, DocError> {
    let mut pkg = Package::open(DocKind::Odt, bytes, limits)?;
    let content = pkg.required("content.xml")?;
    let mut numbered = numbered_styles(&content);
    let mut headings = heading_styles(&content);
    if let Some(styles) = pkg.text("styles.xml")? {
        numbered.extend(numbered_styles(&styles));
        headings.extend(heading_styles(&styles));
    }
    let (title, author) = properties(&mut pkg)?;
    let styles = Styles { numbered, headings };
    let flow = body(&content, &styles).map_err(|e| DocError::corrupt(DocKind::Odt, e))?;
    Ok(Converted { html: flow.finish(title.as_deref()), title, author, ..Converted::default() })
}

/// Names of list styles whose first level is numbered.
fn numbered_styles(xml: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut current: Option<String> = None;
    each_element(xml, |e| match e.local_name().as_ref() {
        "list-style" => current = attr(e, "name"),
        "list-level-style-number" => {
            if let Some(name) = current.take() {
                out.insert(name);
            }
        }
        "list-level-style-bullet" => current = None,
        _ => {}
    });
    out
}

/// What the document's styles say: numbered list styles, and paragraph styles that are
/// headings (by name or by parent, as office suites write `Heading 1` paragraphs).
struct Styles {
    numbered: HashSet<String>,
    headings: HashMap<String, u32>,
}

/// The heading level an ODF style name stands for (`Heading_20_2` is "Heading 2").
fn style_heading(name: &str) -> Option<u32> {
    heading_level(&name.replace("_20_", " "))
}

/// Paragraph styles that are headings, by their own name or their parent's.
fn heading_styles(xml: &str) -> HashMap<String, u32> {
    let mut out = HashMap::new();
    each_element(xml, |e| {
        if e.local_name().as_ref() == "style"
            && let Some(name) = attr(e, "name")
            && let Some(level) = style_heading(&name)
                .or_else(|| attr(e, "parent-style-name").as_deref().and_then(style_heading))
        {
            out.insert(name, level);
        }
    });
    out
}

/// An open list: its style (inherited by nested lists) and whether it is numbered.
struct List {
    style: Option<String>,
    ordered: bool,
}

fn body(xml: &str, styles: &Styles) -> Result<Flow, quick_xml::Error> {
    let mut reader = Reader::from_str(xml);
    let mut flow = Flow::default();
    let mut lists: Vec<List> = Vec::new();
    // Paragraph nesting: text inside a note or a frame inside a paragraph is read too.
    let mut blocks: Vec<Block> = Vec::new();
    let mut in_body = false;
    while !crate::process::cancel::requested() {
        match reader.read_event()? {
            Event::Start(e) => match e.local_name().as_ref() {
                "text" if !in_body => in_body = true,
                "h" => blocks.push(Block::Heading(level(&e))),
                "p" => {
                    let heading = attr(&e, "style-name")
                        .and_then(|s| styles.headings.get(&s).copied().or_else(|| style_heading(&s)));
                    blocks.push(match (heading, lists.last()) {
                        (Some(level), _) => Block::Heading(level),
                        (None, Some(list)) => Block::ListItem { depth: lists.len(), ordered: list.ordered },
                        (None, None) => Block::Paragraph,
                    });
                }
                "list" => {
                    let style = attr(&e, "style-name").or_else(|| lists.last().and_then(|l| l.style.clone()));
                    let ordered = style.as_ref().is_some_and(|s| styles.numbered.contains(s));
                    lists.push(List { style, ordered });
                }
                "a" => flow.start_link(attr(&e, "href").unwrap_or_default()),
                "table" => flow.start_table(),
                _ => inline(&e, &mut flow),
            },
            Event::Empty(e) => match e.local_name().as_ref() {
                "table-cell" | "covered-table-cell" => empty_cells(&e, &mut flow),
                _ => inline(&e, &mut flow),
            },
            Event::End(e) => match e.local_name().as_ref() {
                "h" | "p" => {
                    let block = blocks.pop().unwrap_or(Block::Paragraph);
                    flow.end_paragraph(block);
                }
                "list" => {
                    lists.pop();
                }
                "a" => flow.end_link(),
                "table-cell" => flow.end_cell(),
                "table-row" => flow.end_row(),
                "table" => flow.end_table(),
                _ => {}
            },
            Event::Text(t) if in_body && !blocks.is_empty() => flow.text(&t),
            Event::GeneralRef(r) if in_body && !blocks.is_empty() => flow.text(&entity(&r)),
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(flow)
}

/// Title and author from `meta.xml` (any OpenDocument file).
pub(super) fn properties(pkg: &mut Package<'_>) -> Result<(Option<String>, Option<String>), DocError> {
    Ok(match pkg.text("meta.xml")? {
        Some(meta) => {
            let t = element_texts(&meta, &["title", "initial-creator", "creator"]);
            (t[0].clone(), t[1].clone().or_else(|| t[2].clone()))
        }
        None => (None, None),
    })
}

/// The spaces a `<text:s text:c=…/>` stands for (bounded).
pub(super) fn spaces(e: &BytesStart<'_>) -> String {
    let n: usize = attr(e, "c").and_then(|v| v.parse().ok()).unwrap_or(1);
    " ".repeat(n.clamp(1, MAX_SPACES))
}

fn level(e: &BytesStart<'_>) -> u32 {
    attr(e, "outline-level").and_then(|v| v.parse().ok()).unwrap_or(1)
}

/// Inline elements: spaces, tabs, line breaks, images.
fn inline(e: &BytesStart<'_>, flow: &mut Flow) {
    match e.local_name().as_ref() {
        "s" => flow.text(&spaces(e)),
        "tab" => flow.text(" "),
        "line-break" => flow.raw("<br>"),
        "image" => {
            if let Some(href) = attr(e, "href") {
                flow.raw(&html::image(&href, ""));
            }
        }
        _ => {}
    }
}

/// An empty cell, repeated as `number-columns-repeated` says (bounded: spreadsheets
/// repeat empty cells to the sheet's edge).
fn empty_cells(e: &BytesStart<'_>, flow: &mut Flow) {
    let repeated: usize = attr(e, "number-columns-repeated").and_then(|v| v.parse().ok()).unwrap_or(1);
    for _ in 0..repeated.clamp(1, 64) {
        flow.end_cell();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::samples::{odt, to_markdown};

    #[test]
    fn headings_lists_tables_and_links() {
        let text = r#"<text:h text:outline-level="2">Results &amp; plans</text:h>
<text:p>See <text:a xlink:href="https://example.com/plan">the plan</text:a> for<text:s text:c="3"/>details.</text:p>
<text:list text:style-name="L2"><text:list-item><text:p>step one</text:p></text:list-item><text:list-item><text:p>step two</text:p></text:list-item></text:list>
<table:table><table:table-row><table:table-cell><text:p>City</text:p></table:table-cell><table:table-cell><text:p>Pop</text:p></table:table-cell></table:table-row>
<table:table-row><table:table-cell><text:p>Oslo</text:p></table:table-cell><table:table-cell><text:p>700000</text:p></table:table-cell></table:table-row></table:table>"#;
        let out = convert(&odt(text, "Plan", "Grace Hopper"), &Limits::default()).expect("odt");
        assert_eq!(out.title.as_deref(), Some("Plan"));
        assert_eq!(out.author.as_deref(), Some("Grace Hopper"));
        let md = to_markdown(&out.html);
        assert!(md.contains("## Results & plans"), "{md}");
        assert!(md.contains("See [the plan](https://example.com/plan) for"), "{md}");
        assert!(md.contains("1. step one\n2. step two"), "{md}");
        assert!(md.contains("| City | Pop |") && md.contains("| Oslo | 700000 |"), "{md}");
    }

    #[test]
    fn a_zip_bomb_stops_at_the_limit() {
        let big = format!("<text:p>{}</text:p>", "a".repeat(300_000));
        let bytes = odt(&big, "t", "a");
        let limits = Limits { max_unzipped_bytes: 100_000, ..Limits::default() };
        let err = convert(&bytes, &limits).expect_err("too large");
        assert!(matches!(err, DocError::TooLarge { kind: DocKind::Odt, .. }), "{err:?}");
    }
}
