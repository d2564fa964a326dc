//! Writes the document benchmark set into a folder: a 100-page PDF, a two-column PDF, a DOCX
//! with tables and an XLSX with several sheets, all built in memory with deterministic text.
//!
//! `cargo run --release --example document_samples -- OUT_DIR`

use std::path::PathBuf;

use ferrocrawl::documents::samples::{self, PdfText};

const WORDS: &[&str] = &[
    "garden", "water", "soil", "compost", "seed", "harvest", "autumn", "spring", "rain", "root", "leaf",
    "bean", "tomato", "onion", "carrot", "shade", "sun", "frost", "bed", "path", "fence", "worm", "bee",
    "flower", "hedge", "pond", "stone", "clay", "sand", "mulch", "weed", "prune", "plant", "grow", "dig",
];

/// A deterministic sentence of `n` words, the `seed`-th of its kind.
fn sentence(seed: usize, n: usize) -> String {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(12_345);
    let words: Vec<&str> = (0..n)
        .map(|_| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            WORDS[(state >> 33) % WORDS.len()]
        })
        .collect();
    format!("{}.", words.join(" "))
}

fn text(x: f32, y: f32, size: f32, text: String) -> PdfText {
    PdfText { x, y, size, text }
}

/// 100 pages: a heading and 40 lines of body text each.
fn book() -> Vec<u8> {
    let pages: Vec<Vec<PdfText>> = (0..100)
        .map(|p| {
            let mut page = vec![text(72.0, 740.0, 18.0, format!("Chapter {}", p + 1))];
            for line in 0..40 {
                page.push(text(72.0, 710.0 - 15.0 * line as f32, 10.0, sentence(p * 100 + line, 11)));
            }
            page
        })
        .collect();
    samples::pdf(&pages, "A garden year", "ferrocrawl samples")
}

/// 10 pages of two columns, 45 lines each.
fn two_columns() -> Vec<u8> {
    let pages: Vec<Vec<PdfText>> = (0..10)
        .map(|p| {
            let mut page = Vec::new();
            for line in 0..45 {
                let y = 740.0 - 14.0 * line as f32;
                page.push(text(54.0, y, 9.0, sentence(p * 1000 + line, 6)));
                page.push(text(320.0, y, 9.0, sentence(p * 1000 + 500 + line, 6)));
            }
            page
        })
        .collect();
    samples::pdf(&pages, "Two columns", "ferrocrawl samples")
}

fn docx() -> Vec<u8> {
    let mut body = String::new();
    for t in 0..20 {
        body.push_str(&format!(
            r#"<w:p><w:pPr><w:pStyle w:val="Heading2"/></w:pPr><w:r><w:t>Table {t}</w:t></w:r></w:p>"#
        ));
        body.push_str("<w:tbl>");
        for r in 0..10 {
            body.push_str("<w:tr>");
            for c in 0..4 {
                let cell = if r == 0 { format!("Column {c}") } else { sentence(t * 100 + r * 10 + c, 2) };
                body.push_str(&format!("<w:tc><w:p><w:r><w:t>{cell}</w:t></w:r></w:p></w:tc>"));
            }
            body.push_str("</w:tr>");
        }
        body.push_str("</w:tbl>");
    }
    samples::docx(&body, "Tables", "ferrocrawl samples")
}

fn xlsx() -> Vec<u8> {
    let sheets: Vec<(String, Vec<Vec<String>>)> = (0..5)
        .map(|s| {
            let rows = (0..200)
                .map(|r| {
                    if r == 0 {
                        vec!["Crop".into(), "Bed".into(), "Kilograms".into()]
                    } else {
                        vec![sentence(s * 1000 + r, 1), format!("B{r}"), format!("{}", (r * 7 + s) % 97)]
                    }
                })
                .collect();
            (format!("Year {}", 2020 + s), rows)
        })
        .collect();
    let borrowed: Vec<(&str, Vec<Vec<&str>>)> = sheets
        .iter()
        .map(|(name, rows)| {
            (name.as_str(), rows.iter().map(|r| r.iter().map(String::as_str).collect()).collect())
        })
        .collect();
    samples::xlsx(&borrowed)
}

fn main() -> std::io::Result<()> {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "document-samples".into()));
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("book-100-pages.pdf"), book())?;
    std::fs::write(out.join("two-columns.pdf"), two_columns())?;
    std::fs::write(out.join("tables.docx"), docx())?;
    std::fs::write(out.join("sheets.xlsx"), xlsx())?;
    println!("wrote the samples to {}", out.display());
    Ok(())
}
