//! Per-node text measurements, computed bottom-up in one pass over a subtree and
//! updated incrementally along the ancestor path when a node is removed.
//!
//! Lengths follow "trim, then collapse each whitespace run to one space", counted in
//! UTF-16 units, so thresholds behave the same on any script.

use super::dom::{Data, Dom, Id, NONE};
use super::tags::Tag;

/// Length summary of a string under "trim + collapse whitespace", composable by
/// concatenation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Seg {
    /// Length of the trimmed, collapsed text.
    pub len: u32,
    /// Starts with whitespace.
    pub lead: bool,
    /// Ends with whitespace.
    pub trail: bool,
    /// Has no non-whitespace character.
    pub empty: bool,
}

impl Seg {
    /// The empty string.
    pub(super) const EMPTY: Seg = Seg { len: 0, lead: false, trail: false, empty: true };
    /// A whitespace-only string.
    pub(super) const BLANK: Seg = Seg { len: 0, lead: true, trail: true, empty: true };

    /// Summary of `self` followed by `b`.
    pub(crate) fn join(self, b: Seg) -> Seg {
        if self.empty {
            Seg {
                len: b.len,
                lead: self.lead || b.lead,
                trail: b.trail || (b.empty && self.trail),
                empty: b.empty,
            }
        } else if b.empty {
            Seg { len: self.len, lead: self.lead, trail: self.trail || b.lead, empty: false }
        } else {
            Seg {
                len: self.len + b.len + u32::from(self.trail || b.lead),
                lead: self.lead,
                trail: b.trail,
                empty: false,
            }
        }
    }
}

/// Measurements of one text node, computed once when the tree is built.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TextInfo {
    pub seg: Seg,
    /// Untrimmed length.
    pub raw: u32,
    /// ASCII commas.
    pub commas: u32,
    /// Commas of any script.
    pub all_commas: u32,
}

/// JavaScript's `\s`, which the content thresholds were tuned with.
pub(crate) fn is_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

fn is_any_comma(c: char) -> bool {
    matches!(
        c,
        ',' | '\u{060C}'
            | '\u{FE50}'
            | '\u{FE10}'
            | '\u{FE11}'
            | '\u{2E41}'
            | '\u{2E34}'
            | '\u{2E32}'
            | '\u{FF0C}'
    )
}

impl TextInfo {
    /// Measures `text`.
    pub(crate) fn of(text: &str) -> TextInfo {
        if text.is_ascii() { Self::of_ascii(text.as_bytes()) } else { Self::of_unicode(text) }
    }

    /// Measures ASCII text with branch-free counting the compiler can vectorize: the
    /// collapsed length is the non-space bytes plus one space between each two words.
    fn of_ascii(bytes: &[u8]) -> TextInfo {
        let space = |b: u8| b == b' ' || b.wrapping_sub(b'\t') < 5;
        let (mut solid, mut words, mut commas) = (0u32, 0u32, 0u32);
        let mut after_space = true;
        for &b in bytes {
            let s = space(b);
            solid += u32::from(!s);
            words += u32::from(after_space & !s);
            commas += u32::from(b == b',');
            after_space = s;
        }
        let raw = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        let seg = if solid > 0 {
            Seg {
                len: solid + words - 1,
                lead: bytes.first().is_some_and(|&b| space(b)),
                trail: bytes.last().is_some_and(|&b| space(b)),
                empty: false,
            }
        } else if bytes.is_empty() {
            Seg::EMPTY
        } else {
            Seg::BLANK
        };
        TextInfo { seg, raw, commas, all_commas: commas }
    }

    /// Measures text that has non-ASCII characters, one character at a time.
    fn of_unicode(text: &str) -> TextInfo {
        let (mut len, mut raw, mut commas, mut all_commas) = (0u32, 0u32, 0u32, 0u32);
        let (mut lead, mut seen, mut pending) = (false, false, false);
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            // ASCII is the common case; other characters are decoded one by one.
            let (c, width) = if b < 0x80 {
                (b as char, 1)
            } else {
                match text.get(i..).and_then(|rest| rest.chars().next()) {
                    Some(c) => (c, c.len_utf8()),
                    None => break,
                }
            };
            i += width;
            let units = if width == 4 { 2 } else { 1 };
            raw += units;
            let space =
                if b < 0x80 { matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) } else { is_space(c) };
            if space {
                if seen {
                    pending = true;
                } else {
                    lead = true;
                }
                continue;
            }
            if pending {
                len += 1;
                pending = false;
            }
            len += units;
            seen = true;
            if b == b',' {
                commas += 1;
                all_commas += 1;
            } else if b >= 0x80 && is_any_comma(c) {
                all_commas += 1;
            }
        }
        let seg = if seen {
            Seg { len, lead, trail: pending, empty: false }
        } else if raw > 0 {
            Seg::BLANK
        } else {
            Seg::EMPTY
        };
        TextInfo { seg, raw, commas, all_commas }
    }
}

/// Measurements of a subtree. `seg`, `raw` and the comma counts cover the node's whole
/// text; the other counters cover descendants only (the node itself excluded).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stats {
    pub seg: Seg,
    pub raw: u32,
    pub commas: u32,
    pub all_commas: u32,
    /// Text length inside descendant links, in-page (`#x`) links weighted 0.3.
    pub link: f32,
    pub p: u32,
    pub img: u32,
    pub li: u32,
    pub input: u32,
    pub embed: u32,
    /// Summed text length of descendant headings.
    pub heading_len: u32,
    /// Summed text length of descendant text-bearing blocks (nested ones count again).
    pub textish_len: u32,
    /// Summed text length of descendant lists.
    pub list_len: u32,
    pub data_tables: u32,
    pub br_hr: u32,
    /// Has a descendant that makes a `div` a container rather than a paragraph.
    pub block: bool,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            seg: Seg::EMPTY,
            raw: 0,
            commas: 0,
            all_commas: 0,
            link: 0.0,
            p: 0,
            img: 0,
            li: 0,
            input: 0,
            embed: 0,
            heading_len: 0,
            textish_len: 0,
            list_len: 0,
            data_tables: 0,
            br_hr: 0,
            block: false,
        }
    }
}

impl Stats {
    /// Share of the text that sits inside links (0 when there is no text).
    pub(crate) fn link_density(&self) -> f64 {
        if self.seg.len == 0 { 0.0 } else { f64::from(self.link) / f64::from(self.seg.len) }
    }
}

/// Mark bit: a table that holds data rather than layout.
pub(crate) const MARK_DATA_TABLE: u8 = 1;

fn is_textish(tag: Tag) -> bool {
    matches!(tag, Tag::Span | Tag::Li | Tag::Td) || tag.is_div_to_p_block()
}

/// Stats of every node, indexed by node id.
#[derive(Default)]
pub(crate) struct Table {
    pub of: Vec<Stats>,
    /// Nodes whose stats are stale; a dirty node's ancestors are dirty too.
    dirty: Vec<bool>,
    order: Vec<Id>,
}

impl Table {
    /// Stats of `id` (default when never computed).
    pub(crate) fn get(&self, id: Id) -> Stats {
        self.of.get(id as usize).copied().unwrap_or_default()
    }

    /// Recomputes the whole subtree of `root`.
    pub(crate) fn compute(&mut self, dom: &Dom, root: Id) {
        self.compute_with::<true>(dom, root);
    }

    /// Recomputes only the text, comma, link and block measures of `root`'s subtree
    /// (enough for scoring; element counters are left stale).
    pub(crate) fn compute_light(&mut self, dom: &Dom, root: Id) {
        self.compute_with::<false>(dom, root);
    }

    fn compute_with<const FULL: bool>(&mut self, dom: &Dom, root: Id) {
        if self.of.len() < dom.nodes.len() {
            self.of.resize(dom.nodes.len(), Stats::default());
            self.dirty.resize(dom.nodes.len(), false);
        }
        self.order.clear();
        self.order.push(root);
        self.order.extend(dom.descendants(root));
        let order = std::mem::take(&mut self.order);
        // Reverse pre-order visits every child before its parent.
        for &id in order.iter().rev() {
            let s = self.fold::<FULL>(dom, id);
            if let Some(slot) = self.of.get_mut(id as usize) {
                *slot = s;
            }
            if let Some(d) = self.dirty.get_mut(id as usize) {
                *d = false;
            }
        }
        self.order = order;
    }

    /// Starts from a copy of `other` with nothing stale.
    pub(crate) fn reset_from(&mut self, other: &Table) {
        self.of.clone_from(&other.of);
        self.dirty.clear();
        self.dirty.resize(self.of.len(), false);
    }

    /// Makes room for nodes created since the last computation; the caller marks
    /// them with [`Table::mark_dirty`].
    pub(crate) fn grow(&mut self, len: usize) {
        if self.of.len() < len {
            self.of.resize(len, Stats::default());
            self.dirty.resize(len, false);
        }
    }

    /// Marks `parent` (which just lost a child) and its ancestors stale. Stops at the
    /// first stale ancestor, so cascades of removals cost linear time overall.
    pub(crate) fn mark_dirty(&mut self, dom: &Dom, mut parent: Id) {
        while let Some(d) = self.dirty.get_mut(parent as usize) {
            if *d {
                return;
            }
            *d = true;
            parent = dom.parent(parent);
        }
    }

    /// Brings the stats of `id` up to date after removals below it.
    pub(crate) fn ensure(&mut self, dom: &Dom, id: Id) {
        if !self.dirty.get(id as usize).copied().unwrap_or(false) {
            return;
        }
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.push(id);
        let mut i = 0;
        while let Some(&n) = order.get(i) {
            i += 1;
            for c in dom.children(n) {
                if self.dirty.get(c as usize).copied().unwrap_or(false) {
                    order.push(c);
                }
            }
        }
        // Parents precede children in `order`, so the reverse visits children first.
        for &n in order.iter().rev() {
            let s = self.fold::<true>(dom, n);
            if let Some(slot) = self.of.get_mut(n as usize) {
                *slot = s;
            }
            if let Some(d) = self.dirty.get_mut(n as usize) {
                *d = false;
            }
        }
        self.order = order;
    }

    fn fold<const FULL: bool>(&self, dom: &Dom, id: Id) -> Stats {
        let mut s = Stats::default();
        if let Data::Text(_, info) = &dom.n(id).data {
            s.seg = info.seg;
            s.raw = info.raw;
            s.commas = info.commas;
            s.all_commas = info.all_commas;
            return s;
        }
        let mut c = dom.n(id).first;
        while c != NONE {
            let node = dom.n(c);
            let tag = node.tag;
            let next = node.next;
            let Some(cs) = self.of.get(c as usize) else {
                c = next;
                continue;
            };
            s.seg = s.seg.join(cs.seg);
            s.raw += cs.raw;
            s.commas += cs.commas;
            s.all_commas += cs.all_commas;
            s.link += cs.link;
            s.br_hr += cs.br_hr + u32::from(matches!(tag, Tag::Br | Tag::Hr));
            s.block |= cs.block || tag.is_div_to_p_block();
            if tag == Tag::A {
                let in_page = dom.attr(c, "href").is_some_and(|h| h.len() > 1 && h.starts_with('#'));
                let weight = if in_page { 0.3 } else { 1.0 };
                s.link += cs.seg.len as f32 * weight;
            }
            if FULL {
                s.p += cs.p + u32::from(tag == Tag::P);
                s.img += cs.img + u32::from(tag == Tag::Img);
                s.li += cs.li + u32::from(tag == Tag::Li);
                s.input += cs.input + u32::from(tag == Tag::Input);
                s.embed += cs.embed + u32::from(matches!(tag, Tag::Object | Tag::Embed | Tag::Iframe));
                s.heading_len += cs.heading_len;
                s.textish_len += cs.textish_len;
                s.list_len += cs.list_len;
                s.data_tables += cs.data_tables;
                match tag {
                    Tag::Ul | Tag::Ol => s.list_len += cs.seg.len,
                    Tag::Table if node.mark & MARK_DATA_TABLE != 0 => s.data_tables += 1,
                    _ => {}
                }
                if tag.heading_level() > 0 {
                    s.heading_len += cs.seg.len;
                }
                if is_textish(tag) {
                    s.textish_len += cs.seg.len;
                }
            }
            c = next;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(s: &str) -> Seg {
        TextInfo::of(s).seg
    }

    #[test]
    fn joined_segments_match_whole_string() {
        let parts = ["  a  b", " ", "", "c ", "d", "  ", "e\n"];
        let whole: String = parts.concat();
        let joined = parts.iter().fold(Seg::EMPTY, |acc, p| acc.join(seg(p)));
        assert_eq!(joined.len, seg(&whole).len);
        assert_eq!(joined.len, "a b c d e".len() as u32);
    }

    #[test]
    fn ascii_fast_path_agrees_with_the_general_one() {
        let samples = [
            "",
            " ",
            "\t\n",
            "a",
            " a",
            "a ",
            "  a  b ,c,, d\r\n",
            "x\u{b}y\u{c}z",
            ",",
            "one two",
            "\n\n  lead and trail  \n",
            "a\x1fb",
        ];
        for s in samples {
            let (fast, slow) = (TextInfo::of_ascii(s.as_bytes()), TextInfo::of_unicode(s));
            assert_eq!(fast.seg, slow.seg, "{s:?}");
            assert_eq!(
                (fast.raw, fast.commas, fast.all_commas),
                (slow.raw, slow.commas, slow.all_commas),
                "{s:?}"
            );
        }
    }
}
