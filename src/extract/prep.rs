//! Tree clean-ups around main-content detection: turning `<br><br>` runs into
//! paragraphs before scoring, and cleaning the chosen content afterwards (forms,
//! embeds, share bars, negative headings, link farms, empty blocks, layout tables).

use super::article::{CLEAN_CONDITIONALLY, class_weight, has_ancestor};
use super::dom::{Dom, Id, NONE};
use super::patterns::SHARE;
use super::stats::{self, MARK_DATA_TABLE};
use super::tags::Tag;
use super::title::normalize;

/// Removes trailing whitespace text and `br` children of `id`.
pub(crate) fn trim_trailing_whitespace(dom: &mut Dom, id: Id) {
    loop {
        let last = dom.n(id).last;
        if last == NONE || !dom.is_whitespace(last) {
            return;
        }
        dom.detach(last);
    }
}

/// The only element child of `id` when it has tag `tag` and no text beside it.
pub(crate) fn single_child_tag(dom: &Dom, id: Id, tag: Tag) -> Id {
    let mut found = NONE;
    for c in dom.children(id) {
        match dom.tag(c) {
            Tag::Text => {
                if dom.text_info(c).is_some_and(|i| !i.seg.empty) {
                    return NONE;
                }
            }
            t => {
                if found != NONE || t != tag {
                    return NONE;
                }
                found = c;
            }
        }
    }
    found
}

/// Next sibling starting at `id` that is an element or non-blank text.
fn skip_blank(dom: &Dom, mut id: Id) -> Id {
    while id != NONE && dom.tag(id) == Tag::Text && dom.is_whitespace(id) {
        id = dom.n(id).next;
    }
    id
}

/// Is `id` phrasing content? Links and edits count only when everything inside does.
pub(crate) fn is_phrasing(dom: &Dom, id: Id) -> bool {
    phrasing_at(dom, id, 0)
}

fn phrasing_at(dom: &Dom, id: Id, depth: u32) -> bool {
    let tag = dom.tag(id);
    tag == Tag::Text
        || tag.is_phrasing()
        || (matches!(tag, Tag::A | Tag::Del | Tag::Ins)
            && depth < 64
            && dom.children(id).all(|c| phrasing_at(dom, c, depth + 1)))
}

/// How far up a data table is looked for; real pages nest far less.
const MAX_TABLE_DEPTH: usize = 512;

/// Turns chains of two or more `<br>` into paragraph breaks and `font` into `span`.
pub(crate) fn prepare_document(dom: &mut Dom) {
    let brs: Vec<Id> = dom.descendants(0).filter(|&id| dom.tag(id) == Tag::Br).collect();
    for br in brs {
        if dom.parent(br) == NONE {
            continue;
        }
        let mut replaced = false;
        let mut next = skip_blank(dom, dom.n(br).next);
        while next != NONE && dom.tag(next) == Tag::Br {
            replaced = true;
            let after = dom.n(next).next;
            dom.detach(next);
            next = skip_blank(dom, after);
        }
        if !replaced {
            continue;
        }
        let p = dom.create(Tag::P);
        dom.replace(br, p);
        let mut next = dom.n(p).next;
        while next != NONE {
            if dom.tag(next) == Tag::Br {
                let following = skip_blank(dom, dom.n(next).next);
                if following != NONE && dom.tag(following) == Tag::Br {
                    break;
                }
            }
            if !is_phrasing(dom, next) {
                break;
            }
            let sibling = dom.n(next).next;
            dom.append(p, next);
            next = sibling;
        }
        trim_trailing_whitespace(dom, p);
        let parent = dom.parent(p);
        if parent != NONE && dom.tag(parent) == Tag::P {
            dom.set_tag(parent, Tag::Div);
        }
    }
    for i in 0..dom.nodes.len() as Id {
        if dom.tag(i) == Tag::Font {
            dom.set_tag(i, Tag::Span);
        }
    }
}

/// The tags [`prep_article`]'s steps look for, in the order of [`Found`]'s lists (`h1`
/// and `h2` share one: a step takes both, in document order).
const FOUND: [Tag; 18] = [
    Tag::Table,
    Tag::Form,
    Tag::Fieldset,
    Tag::Object,
    Tag::Embed,
    Tag::Footer,
    Tag::Link,
    Tag::Aside,
    Tag::Iframe,
    Tag::Input,
    Tag::Textarea,
    Tag::Select,
    Tag::Button,
    Tag::H1,
    Tag::Ul,
    Tag::Div,
    Tag::P,
    Tag::Br,
];

/// The content's elements of each tag [`prep_article`] cleans, found in one walk before
/// the first step, in document order. A step takes those still under the content's root
/// and still of their tag (earlier steps remove subtrees and rename headings), which is
/// what a walk of its own at that point would find: no step before the last one adds a
/// node or moves one.
struct Found {
    root: Id,
    lists: [Vec<Id>; FOUND.len()],
}

impl Found {
    fn walk(dom: &Dom, root: Id) -> Self {
        let mut lists: [Vec<Id>; FOUND.len()] = Default::default();
        for id in dom.descendants(root) {
            if let Some(list) = Self::list(dom.tag(id)).and_then(|i| lists.get_mut(i)) {
                list.push(id);
            }
        }
        Found { root, lists }
    }

    fn list(tag: Tag) -> Option<usize> {
        let tag = if tag == Tag::H2 { Tag::H1 } else { tag };
        FOUND.iter().position(|&t| t == tag)
    }

    /// The elements still in the content whose tag `wanted` accepts, in document order,
    /// from the list of `tag`.
    fn of(&self, dom: &Dom, tag: Tag, wanted: impl Fn(Tag) -> bool) -> Vec<Id> {
        let list = Self::list(tag).and_then(|i| self.lists.get(i)).map_or(&[][..], Vec::as_slice);
        list.iter().copied().filter(|&id| wanted(dom.tag(id)) && self.holds(dom, id)).collect()
    }

    /// The elements of `tag` still in the content, in document order.
    fn tagged(&self, dom: &Dom, tag: Tag) -> Vec<Id> {
        self.of(dom, tag, |t| t == tag)
    }

    /// Whether `id` is still under the root (no removed subtree between them).
    fn holds(&self, dom: &Dom, id: Id) -> bool {
        let mut cur = dom.parent(id);
        while cur != NONE {
            if cur == self.root {
                return true;
            }
            cur = dom.parent(cur);
        }
        false
    }
}

fn leading_int(s: &str) -> u32 {
    let s = s.trim_start();
    let digits: &str = s.find(|c: char| !c.is_ascii_digit()).map_or(s, |end| s.get(..end).unwrap_or(""));
    digits.parse().unwrap_or(0)
}

/// Flags tables that hold data (headers, captions, many cells) rather than layout.
fn mark_data_tables(dom: &mut Dom, found: &Found) {
    for table in found.tagged(dom, Tag::Table) {
        let is_data = {
            let d = &*dom;
            if d.attr(table, "role") == Some("presentation") || d.attr(table, "datatable") == Some("0") {
                false
            } else if d.attr(table, "summary").is_some_and(|s| !s.is_empty()) {
                true
            } else if let Some(caption) = d.descendants(table).find(|&i| d.tag(i) == Tag::Caption)
                && d.n(caption).first != NONE
            {
                true
            } else if d
                .descendants(table)
                .any(|i| matches!(d.tag(i), Tag::Col | Tag::Colgroup | Tag::Tfoot | Tag::Thead | Tag::Th))
            {
                true
            } else if d.descendants(table).any(|i| d.tag(i) == Tag::Table) {
                false
            } else {
                let (mut rows, mut columns) = (0u32, 0u32);
                for tr in d.descendants(table).filter(|&i| d.tag(i) == Tag::Tr) {
                    rows = rows.saturating_add(d.attr(tr, "rowspan").map_or(0, leading_int).max(1));
                    let cols = d
                        .descendants(tr)
                        .filter(|&i| d.tag(i) == Tag::Td)
                        .map(|td| d.attr(td, "colspan").map_or(0, leading_int).max(1))
                        .fold(0u32, u32::saturating_add);
                    columns = columns.max(cols);
                }
                if columns == 1 || rows == 1 {
                    false
                } else if rows >= 10 || columns > 4 {
                    true
                } else {
                    rows.saturating_mul(columns) > 10
                }
            }
        };
        if is_data {
            dom.nodes[table as usize].mark |= MARK_DATA_TABLE;
        }
    }
}

fn is_data_table(dom: &Dom, id: Id) -> bool {
    dom.n(id).mark & MARK_DATA_TABLE != 0
}

/// Does `s` point at an embeddable video host?
pub(crate) fn is_video_url(s: &str) -> bool {
    const HOSTS: &[&str] = &[
        "dailymotion.com",
        "youtube.com",
        "youtube-nocookie.com",
        "player.vimeo.com",
        "v.qq.com",
        "archive.org",
        "upload.wikimedia.org",
        "player.twitch.tv",
    ];
    let lower = s.to_ascii_lowercase();
    lower.match_indices("//").any(|(i, _)| {
        let rest = lower.get(i + 2..).unwrap_or("");
        let rest = rest.strip_prefix("www.").unwrap_or(rest);
        HOSTS.iter().any(|h| rest.starts_with(h))
    })
}

fn has_video(dom: &Dom, id: Id) -> bool {
    let own = dom.element(id).is_some_and(|el| el.attrs().any(|(_, v)| is_video_url(v)));
    own || (dom.tag(id) == Tag::Object
        && dom.descendants(id).any(|d| {
            dom.element(d).is_some_and(|el| el.attrs().any(|(_, v)| is_video_url(v)))
                || is_video_url(dom.text(d))
        }))
}

/// Removes every `tag` element under `root` (video embeds survive).
fn clean(dom: &mut Dom, found: &Found, tag: Tag) {
    let embed = matches!(tag, Tag::Object | Tag::Embed | Tag::Iframe);
    for id in found.tagged(dom, tag).into_iter().rev() {
        if embed && has_video(dom, id) {
            continue;
        }
        dom.detach(id);
    }
}

fn is_suspicious_word(text: &str) -> bool {
    const AD_WORDS: &[&str] = &[
        "ad",
        "advertising",
        "advertisement",
        "pub",
        "publicité",
        "werb",
        "werbung",
        "广告",
        "реклама",
        "anuncio",
    ];
    const LOADING_WORDS: &[&str] = &["loading", "正在加载", "загрузка", "chargement", "cargando"];
    let lower = text.to_lowercase();
    if AD_WORDS.contains(&lower.as_str()) {
        return true;
    }
    let stem = lower.strip_suffix('…').or_else(|| lower.strip_suffix("...")).unwrap_or(&lower);
    LOADING_WORDS.contains(&stem) || LOADING_WORDS.contains(&lower.as_str())
}

/// Text of a subtree known to hold little text, giving up (empty) on long chains
/// of wrappers so that deep nesting stays linear.
fn short_text(dom: &Dom, id: Id) -> String {
    let mut text = String::new();
    for d in dom.descendants(id).take(256) {
        text.push_str(dom.text(d));
    }
    text
}

/// Should a `tag` block be removed from the content as clutter?
fn is_clutter(dom: &Dom, st: &stats::Table, id: Id, tag: Tag, flags: u8) -> bool {
    let s = st.get(id);
    let len = s.seg.len;
    let ratio = |part: u32| -> f64 { if len == 0 { 0.0 } else { f64::from(part) / f64::from(len) } };
    let mut is_list = matches!(tag, Tag::Ul | Tag::Ol);
    if !is_list {
        is_list = if len == 0 { s.list_len > 0 } else { ratio(s.list_len) > 0.9 };
    }
    if tag == Tag::Table && is_data_table(dom, id) {
        return false;
    }
    if has_ancestor(dom, id, Tag::Table, Some(MAX_TABLE_DEPTH), |t| is_data_table(dom, t))
        || has_ancestor(dom, id, Tag::Code, Some(3), |_| true)
        || s.data_tables > 0
    {
        return false;
    }
    let weight = class_weight(dom, id, flags);
    if weight < 0 {
        return true;
    }
    if s.commas >= 10 {
        return false;
    }
    let p = f64::from(s.p);
    let img = s.img;
    let li = i64::from(s.li) - 100;
    let heading_density = ratio(s.heading_len);
    let mut embeds = 0;
    if s.embed > 0 {
        for e in dom.descendants(id) {
            if matches!(dom.tag(e), Tag::Object | Tag::Embed | Tag::Iframe) {
                if has_video(dom, e) {
                    return false;
                }
                embeds += 1;
            }
        }
    }
    if len <= 20 && len > 0 && is_suspicious_word(&normalize(&short_text(dom, id))) {
        return true;
    }
    let density = s.link_density();
    let text_density = ratio(s.textish_len);
    let in_figure = has_ancestor(dom, id, Tag::Figure, Some(3), |_| true);
    let remove = (!in_figure && img > 1 && p / f64::from(img) < 0.5)
        || (!is_list && li > i64::from(s.p))
        || f64::from(s.input) > (p / 3.0).floor()
        || (!is_list
            && !in_figure
            && heading_density < 0.9
            && len < 25
            && (img == 0 || img > 2)
            && density > 0.0)
        || (!is_list && weight < 25 && density > 0.2)
        || (weight >= 25 && density > 0.5)
        || (embeds == 1 && len < 75)
        || embeds > 1
        || (img == 0 && text_density == 0.0);
    if is_list && remove {
        // A plain list of images (one per item) is content.
        if dom.elem_children(id).any(|c| dom.elem_children(c).count() > 1) {
            return remove;
        }
        if img == s.li {
            return false;
        }
    }
    remove
}

/// Removes `tag` blocks that look like clutter, innermost first, keeping the stats of
/// their ancestors current so each decision sees earlier removals.
fn clean_conditionally(dom: &mut Dom, st: &mut stats::Table, found: &Found, tag: Tag, flags: u8) {
    if flags & CLEAN_CONDITIONALLY == 0 {
        return;
    }
    for id in found.tagged(dom, tag).into_iter().rev() {
        let parent = dom.parent(id);
        if parent == NONE {
            continue;
        }
        st.ensure(dom, id);
        if is_clutter(dom, st, id, tag, flags) {
            dom.detach(id);
            st.mark_dirty(dom, parent);
        }
    }
}

/// Removes small share bars below each top-level block of the content.
fn clean_share_bars(dom: &mut Dom, st: &stats::Table, root: Id) {
    let tops: Vec<Id> = dom.elem_children(root).collect();
    for top in tops {
        let mut cur = dom.next_in(top, top);
        while cur != NONE {
            let n = dom.n(cur);
            let is_elem = dom.is_elem(cur);
            if is_elem && (n.class_flags | n.id_flags) & SHARE != 0 && st.get(cur).raw < 500 {
                let next = dom.next_skipping_children(cur, top);
                dom.detach(cur);
                cur = next;
            } else {
                cur = dom.next_in(cur, top);
            }
        }
    }
}

/// Cleans the chosen content in place.
pub(crate) fn prep_article(dom: &mut Dom, st: &mut stats::Table, root: Id, flags: u8) {
    let found = Found::walk(dom, root);
    mark_data_tables(dom, &found);
    st.compute(dom, root);
    clean_conditionally(dom, st, &found, Tag::Form, flags);
    clean_conditionally(dom, st, &found, Tag::Fieldset, flags);
    for tag in [Tag::Object, Tag::Embed, Tag::Footer, Tag::Link, Tag::Aside] {
        clean(dom, &found, tag);
    }
    st.compute(dom, root);
    clean_share_bars(dom, st, root);
    for tag in [Tag::Iframe, Tag::Input, Tag::Textarea, Tag::Select, Tag::Button] {
        clean(dom, &found, tag);
    }
    for h in found.of(dom, Tag::H1, |t| matches!(t, Tag::H1 | Tag::H2)).into_iter().rev() {
        if class_weight(dom, h, flags) < 0 {
            dom.detach(h);
        }
    }
    st.compute(dom, root);
    for tag in [Tag::Table, Tag::Ul, Tag::Div] {
        clean_conditionally(dom, st, &found, tag, flags);
    }
    for h in found.tagged(dom, Tag::H1) {
        dom.set_tag(h, Tag::H2);
    }
    for p in found.tagged(dom, Tag::P).into_iter().rev() {
        st.ensure(dom, p);
        let s = st.get(p);
        if s.img == 0 && s.embed == 0 && s.seg.empty {
            dom.detach(p);
        }
    }
    for br in found.tagged(dom, Tag::Br) {
        let next = skip_blank(dom, dom.n(br).next);
        if next != NONE && dom.tag(next) == Tag::P {
            dom.detach(br);
        }
    }
    for table in found.tagged(dom, Tag::Table) {
        unwrap_single_cell(dom, table);
    }
}

/// Replaces a table with one cell by that cell, as a paragraph or a div.
fn unwrap_single_cell(dom: &mut Dom, table: Id) {
    if dom.parent(table) == NONE {
        return;
    }
    let tbody = single_child_tag(dom, table, Tag::Tbody);
    let body = if tbody != NONE { tbody } else { table };
    let row = single_child_tag(dom, body, Tag::Tr);
    if row == NONE {
        return;
    }
    let cell = single_child_tag(dom, row, Tag::Td);
    if cell == NONE {
        return;
    }
    let phrasing = dom.children(cell).all(|c| is_phrasing(dom, c));
    dom.set_tag(cell, if phrasing { Tag::P } else { Tag::Div });
    dom.hoist(table, cell);
}
