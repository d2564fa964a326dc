//! Documents on the fixture site: office files and spreadsheets built in memory, served with
//! their own media type or as `application/octet-stream` (so the server must look at the
//! bytes), plus a corrupt file and a zip bomb. Files written by an office suite (a `.doc`,
//! an `.xls`, an `.ods`, an `.rtf` and an `.odt` LibreOffice made from a small HTML page and CSV file) are kept in
//! `tests/fixtures/documents`.

use ferrocrawl::documents::samples::{self, PdfText};

const DOCX: &str = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const OCTETS: &str = "application/octet-stream";

/// The body of a Word report with a heading, a link, a list and a table.
const REPORT: &str = r#"<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Harvest report</w:t></w:r></w:p>
<w:p><w:r><w:t xml:space="preserve">Yields are up; see </w:t></w:r><w:hyperlink r:id="rId9"><w:r><w:t>the sales page</w:t></w:r></w:hyperlink></w:p>
<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="2"/></w:numPr></w:pPr><w:r><w:t>pick the beans</w:t></w:r></w:p>
<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="2"/></w:numPr></w:pPr><w:r><w:t>dry the seeds</w:t></w:r></w:p>
<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Crop</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Kilograms</w:t></w:r></w:p></w:tc></w:tr>
<w:tr><w:tc><w:p><w:r><w:t>Beans</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>120</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"#;

fn text(x: f32, y: f32, size: f32, text: &str) -> PdfText {
    PdfText { x, y, size, text: text.to_owned() }
}

/// A three-page guide: a title and a heading on the first page, a paragraph on each page,
/// a bulleted list and a table (text set in aligned columns) on the second.
fn guide() -> Vec<u8> {
    let pages: Vec<Vec<PdfText>> = (1..=3)
        .map(|n| {
            let mut page = Vec::new();
            if n == 1 {
                page.push(text(72.0, 720.0, 22.0, "Composting guide"));
                page.push(text(72.0, 680.0, 15.0, "Getting started"));
            }
            page.push(text(72.0, 640.0, 11.0, &format!("Turn the heap every week, page {n} says.")));
            if n == 2 {
                page.push(text(72.0, 610.0, 11.0, "\u{2022} greens: grass and peelings"));
                page.push(text(72.0, 596.0, 11.0, "\u{2022} browns: leaves and card"));
                for (r, row) in [["Month", "Heap", "Temperature"], ["May", "A", "55"], ["June", "B", "61"]]
                    .iter()
                    .enumerate()
                {
                    for (c, cell) in row.iter().enumerate() {
                        page.push(text(72.0 + 140.0 * c as f32, 560.0 - 16.0 * r as f32, 11.0, cell));
                    }
                }
            }
            page
        })
        .collect();
    samples::pdf(&pages, "Composting", "Rachel Carson")
}

/// The content type and body of a document fixture at `path`, if there is one.
pub fn page(path: &str) -> Option<(&'static str, Vec<u8>)> {
    Some(match path {
        "/docs/library" => (
            "text/html",
            br#"<html><head><title>Library</title></head><body><main><h1>Library</h1><p>Our garden files:</p>
<ul><li><a href="report.docx">Harvest report</a></li><li><a href="guide.pdf">Composting guide</a></li><li><a href="yields.ods">Yields</a></li></ul></main></body></html>"#
                .to_vec(),
        ),
        "/docs/report.docx" => (DOCX, samples::docx(REPORT, "Harvest 2026", "Ada Lovelace")),
        "/docs/download" => (OCTETS, samples::docx(REPORT, "Harvest 2026", "Ada Lovelace")),
        "/docs/plan.odt" => (
            OCTETS,
            samples::odt(
                r#"<text:h text:outline-level="1">Garden plan</text:h><text:p>Sow carrots in April.</text:p>"#,
                "Plan",
                "Grace Hopper",
            ),
        ),
        "/docs/yields.xlsx" => (
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            samples::xlsx(&[
                ("2025", vec![vec!["Crop", "Kg"], vec!["Beans", "100"]]),
                ("2026", vec![vec!["Crop", "Kg"], vec!["Beans", "120"], vec!["Peas", "80"]]),
            ]),
        ),
        "/docs/letter.rtf" => (
            "application/rtf",
            br#"{\rtf1\ansi{\info{\title Letter}}\pard Dear neighbour,\par\pard The fence is fixed.\par}"#
                .to_vec(),
        ),
        "/docs/report-office.odt" => (
            "application/vnd.oasis.opendocument.text",
            include_bytes!("../fixtures/documents/report.odt").to_vec(),
        ),
        "/docs/report.doc" => {
            ("application/msword", include_bytes!("../fixtures/documents/report.doc").to_vec())
        }
        "/docs/yields-old" => (OCTETS, include_bytes!("../fixtures/documents/yields.xls").to_vec()),
        "/docs/report.rtf" => {
            ("application/rtf", include_bytes!("../fixtures/documents/report.rtf").to_vec())
        }
        "/docs/yields.ods" => (OCTETS, include_bytes!("../fixtures/documents/yields.ods").to_vec()),
        "/docs/guide.pdf" => ("application/pdf", guide()),
        "/docs/scan" => (OCTETS, samples::pdf(&[Vec::new(), Vec::new()], "Scan", "")),
        "/docs/locked.pdf" => ("application/pdf", samples::encrypted_pdf()),
        "/docs/broken.docx" => (DOCX, b"PK\x03\x04 this zip ends here".to_vec()),
        "/docs/bomb.odt" => {
            let filler = format!("<text:p>{}</text:p>", "0".repeat(4 << 20));
            (OCTETS, samples::odt(&filler, "Bomb", "nobody"))
        }
        _ => return None,
    })
}
