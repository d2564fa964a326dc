//! Rich Text Format: a small reader of our own (the crates found lose paragraph breaks).
//! It keeps paragraphs, line breaks, tables (`\trowd … \cell … \row`), hyperlink fields,
//! headings (an outline level, or a paragraph style the stylesheet calls "heading N"), list
//! items (a paragraph with a `\listtext`/`\pntext` marker), Unicode (`\u`) and code-page
//! (`\'hh`) characters, and the title and author of `\info`; fonts, colours, pictures,
//! headers and footers are skipped.

use std::collections::HashMap;

use encoding_rs::{Encoding, WINDOWS_1252};

use super::flow::{Block, Flow};
use super::{Converted, DocError, DocKind};

/// Deepest group nesting accepted.
const MAX_DEPTH: usize = 4096;

/// Destinations whose text is not part of the document.
const SKIPPED: [&str; 22] = [
    "fonttbl",
    "colortbl",
    "listtable",
    "listoverridetable",
    "pict",
    "object",
    "themedata",
    "colorschememapping",
    "datastore",
    "latentstyles",
    "rsidtbl",
    "generator",
    "xmlnstbl",
    "header",
    "footer",
    "headerl",
    "headerr",
    "headerf",
    "footerl",
    "footerr",
    "footerf",
    "bkmkstart",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dest {
    Text,
    Skip,
    /// Inside `\info`: only its title and author are read.
    Info,
    Title,
    Author,
    FieldInstruction,
    /// The stylesheet: each group in it defines one style.
    Styles,
    /// One style definition: its number, outline level and name are read.
    Style,
    /// A list item's marker (bullet or number), shown by readers that ignore list tables.
    ListText,
}

/// A style definition being read.
#[derive(Debug, Default)]
struct StyleEntry {
    number: Option<i64>,
    level: Option<u32>,
    name: String,
}

#[derive(Debug, Clone, Copy)]
struct Group {
    dest: Dest,
    /// Characters to skip after `\u`.
    uc: usize,
    /// This group is a field result shown as a link.
    link: bool,
}

struct State {
    flow: Flow,
    stack: Vec<Group>,
    cur: Group,
    encoding: &'static Encoding,
    pending: Vec<u8>,
    skip_chars: usize,
    in_table_para: bool,
    heading: Option<u32>,
    /// Heading level of each paragraph style that is a heading.
    styles: HashMap<i64, u32>,
    style: StyleEntry,
    /// List level (`\ilvl`) of the current paragraph, from 0.
    list_level: usize,
    /// The current paragraph's list marker, once its `\listtext` closed.
    list: Option<Block>,
    marker: String,
    title: String,
    author: String,
    instruction: String,
}

/// Converts an RTF file.
pub(crate) fn convert(bytes: &[u8]) -> Result<Converted, DocError> {
    if !bytes.starts_with(b"{\\rtf") {
        return Err(DocError::corrupt(DocKind::Rtf, "it does not start with {\\rtf"));
    }
    let mut st = State {
        flow: Flow::default(),
        stack: Vec::new(),
        cur: Group { dest: Dest::Text, uc: 1, link: false },
        encoding: WINDOWS_1252,
        pending: Vec::new(),
        skip_chars: 0,
        in_table_para: false,
        heading: None,
        styles: HashMap::new(),
        style: StyleEntry::default(),
        list_level: 0,
        list: None,
        marker: String::new(),
        title: String::new(),
        author: String::new(),
        instruction: String::new(),
    };
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => {
                st.flush();
                if st.stack.len() >= MAX_DEPTH {
                    return Err(DocError::corrupt(DocKind::Rtf, "groups are nested too deeply"));
                }
                st.stack.push(st.cur);
                st.cur.link = false;
                if st.cur.dest == Dest::Styles {
                    st.cur.dest = Dest::Style;
                    st.style = StyleEntry::default();
                }
                i += 1;
            }
            b'}' => {
                st.flush();
                if st.cur.link {
                    st.flow.end_link();
                }
                let Some(parent) = st.stack.pop() else {
                    break;
                };
                let closed = std::mem::replace(&mut st.cur, parent).dest;
                if closed == Dest::Style && parent.dest == Dest::Styles {
                    st.define_style();
                } else if closed == Dest::ListText && parent.dest != Dest::ListText {
                    st.list = Some(list_item(&st.marker, st.list_level));
                }
                i += 1;
            }
            b'\\' => i = st.control(bytes, i + 1),
            b'\r' | b'\n' => i += 1,
            b => {
                st.byte(b);
                i += 1;
            }
        }
    }
    st.flush();
    let title = Some(st.title.trim().to_owned()).filter(|t| !t.is_empty());
    let author = Some(st.author.trim().to_owned()).filter(|t| !t.is_empty());
    Ok(Converted { html: st.flow.finish(title.as_deref()), title, author, ..Converted::default() })
}

impl State {
    /// A text byte of the current code page.
    fn byte(&mut self, b: u8) {
        if self.skip_chars > 0 {
            self.skip_chars -= 1;
            return;
        }
        self.pending.push(b);
    }

    /// Text in the current destination.
    fn text(&mut self, s: &str) {
        match self.cur.dest {
            Dest::Text => self.flow.text(s),
            Dest::Title => self.title.push_str(s),
            Dest::Author => self.author.push_str(s),
            Dest::FieldInstruction => self.instruction.push_str(s),
            Dest::Style => self.style.name.push_str(s),
            Dest::ListText => self.marker.push_str(s),
            Dest::Skip | Dest::Info | Dest::Styles => {}
        }
    }

    /// Decodes the bytes gathered so far.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let bytes = std::mem::take(&mut self.pending);
        let (text, _, _) = self.encoding.decode(&bytes);
        self.text(&text);
    }

    /// Reads the control word or symbol after a backslash at `i`; returns the next index.
    fn control(&mut self, bytes: &[u8], i: usize) -> usize {
        let Some(&c) = bytes.get(i) else {
            return i;
        };
        if !c.is_ascii_alphabetic() {
            return self.symbol(bytes, i);
        }
        let start = i;
        let mut j = i;
        while j < bytes.len() && bytes[j].is_ascii_alphabetic() && j - start < 32 {
            j += 1;
        }
        let word = std::str::from_utf8(&bytes[start..j]).unwrap_or("");
        let num_start = j;
        if bytes.get(j) == Some(&b'-') {
            j += 1;
        }
        while j < bytes.len() && bytes[j].is_ascii_digit() && j - num_start < 11 {
            j += 1;
        }
        let param: Option<i64> = std::str::from_utf8(&bytes[num_start..j]).ok().and_then(|s| s.parse().ok());
        if bytes.get(j) == Some(&b' ') {
            j += 1;
        }
        self.word(word, param);
        j
    }

    fn symbol(&mut self, bytes: &[u8], i: usize) -> usize {
        match bytes[i] {
            b'\'' => {
                let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
                if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    self.byte(b);
                }
                i + 3
            }
            b'*' => {
                self.cur.dest = Dest::Skip;
                i + 1
            }
            b'~' => {
                self.byte(b' ');
                i + 1
            }
            b'_' => {
                self.byte(b'-');
                i + 1
            }
            b'\r' | b'\n' => {
                self.word("par", None);
                i + 1
            }
            b'\\' | b'{' | b'}' => {
                self.byte(bytes[i]);
                i + 1
            }
            _ => i + 1,
        }
    }

    fn word(&mut self, word: &str, param: Option<i64>) {
        self.flush();
        match word {
            "par" | "sect" | "page" if self.cur.dest == Dest::Text => self.paragraph(),
            "line" if self.cur.dest == Dest::Text => self.flow.raw("<br>"),
            "tab" => self.text(" "),
            "emdash" => self.text("—"),
            "endash" => self.text("–"),
            "bullet" => self.text("•"),
            "lquote" | "rquote" => self.text("'"),
            "ldblquote" | "rdblquote" => self.text("\""),
            "u" => {
                if let Some(n) = param {
                    let code = if n < 0 { n + 65536 } else { n };
                    if let Some(c) = u32::try_from(code).ok().and_then(char::from_u32) {
                        self.text(&c.to_string());
                    }
                    self.skip_chars = self.cur.uc;
                }
            }
            "uc" => self.cur.uc = param.and_then(|n| usize::try_from(n).ok()).unwrap_or(1).min(8),
            "ansicpg" => {
                let label = format!("windows-{}", param.unwrap_or(1252));
                self.encoding = Encoding::for_label(label.as_bytes()).unwrap_or(WINDOWS_1252);
            }
            "pard" if self.cur.dest == Dest::Text => {
                self.in_table_para = false;
                self.heading = None;
                self.list_level = 0;
            }
            "intbl" => self.in_table_para = true,
            "outlinelevel" => {
                let level = param.and_then(|n| u32::try_from(n + 1).ok()).filter(|&l| (1..=9).contains(&l));
                match self.cur.dest {
                    Dest::Style => self.style.level = level,
                    _ => self.heading = level,
                }
            }
            "s" => match self.cur.dest {
                Dest::Style => self.style.number = param,
                Dest::Text => self.heading = param.and_then(|n| self.styles.get(&n)).copied(),
                _ => {}
            },
            "stylesheet" => self.cur.dest = Dest::Styles,
            "listtext" | "pntext" => {
                self.marker.clear();
                self.cur.dest = Dest::ListText;
            }
            "ilvl" => self.list_level = param.and_then(|n| usize::try_from(n).ok()).unwrap_or(0).min(8),
            "trowd" if !self.flow.in_table() => self.flow.start_table(),
            "cell" => {
                self.flow.end_paragraph(Block::Paragraph);
                self.flow.end_cell();
            }
            "row" => self.flow.end_row(),
            "info" => self.cur.dest = Dest::Info,
            "title" if self.cur.dest == Dest::Info => self.cur.dest = Dest::Title,
            "author" if self.cur.dest == Dest::Info => self.cur.dest = Dest::Author,
            "fldinst" => {
                self.instruction.clear();
                self.cur.dest = Dest::FieldInstruction;
            }
            "fldrslt" => {
                if let Some(url) = hyperlink(&self.instruction) {
                    self.flow.start_link(url);
                    self.cur.link = true;
                }
                self.cur.dest = Dest::Text;
            }
            w if SKIPPED.contains(&w) => self.cur.dest = Dest::Skip,
            _ => {}
        }
    }

    fn paragraph(&mut self) {
        if !self.in_table_para && self.flow.in_table() {
            self.flow.end_table();
        }
        let block = match (self.heading, self.list.take()) {
            (Some(level), _) => Block::Heading(level),
            (None, Some(item)) => item,
            (None, None) => Block::Paragraph,
        };
        self.flow.end_paragraph(block);
    }

    /// Records the style just read when it is a heading: by its outline level, or by a
    /// name such as "heading 2" (what Word and LibreOffice call their heading styles).
    fn define_style(&mut self) {
        let entry = std::mem::take(&mut self.style);
        let Some(number) = entry.number else {
            return;
        };
        let name = entry.name.trim().trim_end_matches(';').trim().to_ascii_lowercase();
        let named = name
            .strip_prefix("heading")
            .and_then(|n| n.trim().parse::<u32>().ok())
            .filter(|l| (1..=9).contains(l));
        if let Some(level) = entry.level.or(named) {
            self.styles.insert(number, level);
        }
    }
}

/// The list item a marker stands for: numbered when it holds a digit or is a short
/// letter sequence ending in `.` or `)` ("a.", "iv)"), bulleted otherwise.
fn list_item(marker: &str, level: usize) -> Block {
    let marker = marker.trim();
    let lettered = marker
        .strip_suffix(['.', ')'])
        .is_some_and(|m| (1..=4).contains(&m.len()) && m.chars().all(|c| c.is_ascii_alphabetic()));
    let ordered = marker.chars().any(|c| c.is_ascii_digit()) || lettered;
    Block::ListItem { depth: level + 1, ordered }
}

/// The URL of a `HYPERLINK "…"` field instruction.
fn hyperlink(instruction: &str) -> Option<String> {
    let rest = instruction.trim().strip_prefix("HYPERLINK")?.trim();
    let url = rest.strip_prefix('"').and_then(|r| r.split('"').next()).unwrap_or(rest.split(' ').next()?);
    (!url.is_empty()).then(|| url.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::samples::to_markdown;

    #[test]
    fn paragraphs_tables_links_and_characters() {
        let rtf = br#"{\rtf1\ansi\ansicpg1252{\fonttbl{\f0 Arial;}}{\info{\title Field notes}{\author Mary Somerville}}
{\pard\outlinelevel0 Findings\par}
\pard Caf\'e9 prices rose\line by \u8364? 3.\par
See {\field{\*\fldinst HYPERLINK "https://example.com/notes"}{\fldrslt the notes}} here.\par
\trowd\cellx1000\cellx2000\pard\intbl Item\cell Price\cell\row
\trowd\cellx1000\cellx2000\pard\intbl Tea\cell 2\cell\row
\pard After the table.\par}"#;
        let out = convert(rtf).expect("rtf");
        assert_eq!(out.title.as_deref(), Some("Field notes"));
        assert_eq!(out.author.as_deref(), Some("Mary Somerville"));
        let md = to_markdown(&out.html);
        assert!(md.contains("# Findings"), "{md}");
        assert!(md.contains("Café prices rose") && md.contains("by € 3."), "{md}");
        assert!(md.contains("See [the notes](https://example.com/notes) here."), "{md}");
        assert!(md.contains("| Item | Price |") && md.contains("| Tea | 2 |"), "{md}");
        assert!(md.contains("After the table."), "{md}");
        assert!(!md.contains("Arial"), "{md}");
    }

    #[test]
    fn stylesheet_headings_and_list_markers() {
        let rtf = br#"{\rtf1\ansi{\stylesheet{\s0 Normal;}{\s1\sbasedon0\fs48\b Heading 1;}{\s2\outlinelevel1 Sub;}{\s5 Body Text;}}
\pard\plain\s1\fs48 Seed report\par
\pard\plain\s5 Germination was good.\par
\pard\plain\s2 Notes\par
\pard\ls1\ilvl0{\listtext\pard\plain \u8226\'95\tab}kale sprouted first\par
\pard\ls1\ilvl1{\listtext\pard\plain o\tab}early\par
\pard\ls2\ilvl0{\listtext\pard\plain 1.\tab}water\par
\pard\ls2\ilvl0{\listtext\pard\plain 2.\tab}wait\par
\pard After.\par}"#;
        let md = to_markdown(&convert(rtf).expect("rtf").html);
        assert!(md.contains("# Seed report\n\nGermination was good.\n\n## Notes"), "{md}");
        assert!(md.contains("- kale sprouted first\n  - early"), "{md}");
        assert!(md.contains("1. water\n2. wait") && md.contains("After."), "{md}");
        assert!(!md.contains('•') && !md.contains("Body Text"), "{md}");
    }

    #[test]
    fn hostile_input_is_refused_or_read() {
        assert!(convert(b"not rtf").is_err());
        let deep = format!("{{\\rtf1 {}", "{".repeat(MAX_DEPTH + 10));
        assert!(matches!(convert(deep.as_bytes()), Err(DocError::Corrupt { .. })));
        assert!(convert(b"{\\rtf1 \\u-3 \\'zz \\").is_ok());
    }
}
