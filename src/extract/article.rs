//! Main-content detection, Readability-style: walk the tree dropping unlikely
//! boilerplate, score paragraphs into their ancestors (text length, commas, class/id
//! vocabulary, link density), pick the best candidate, merge related siblings, clean
//! the result (see `prep`), and retry with relaxed rules when too little text is left.
//! The heuristics, vocabulary and thresholds follow Mozilla Readability (Apache-2.0).

use super::dom::{Dom, Id, NONE};
use super::patterns::{BYLINE, MAYBE, NEGATIVE, POSITIVE, UNLIKELY};
use super::prep;
use super::stats::{self, is_space};
use super::tags::Tag;
use super::title::{normalize, similarity};

/// Drop unlikely candidates while walking.
pub(crate) const STRIP_UNLIKELY: u8 = 1;
/// Let class/id vocabulary change scores.
pub(crate) const WEIGHT_CLASSES: u8 = 2;
/// Remove suspicious blocks from the chosen content.
pub(crate) const CLEAN_CONDITIONALLY: u8 = 4;

/// Below this many characters the result is considered a miss and rules are relaxed.
const CHAR_THRESHOLD: u32 = 500;
const TOP_CANDIDATES: usize = 5;

/// Page facts the filter needs besides the tree.
pub(crate) struct Hints {
    /// Title the in-page title heading is compared with.
    pub title: String,
    /// The page names its author in metadata, so no in-page byline is removed.
    pub has_byline: bool,
}

/// Runs the filter on a copy of `base` and returns that copy with the id of a
/// detached container holding the main content. `None` when no text was found.
pub(crate) fn main_content<'a>(base: &Dom<'a>, hints: &Hints) -> Option<(Dom<'a>, Id)> {
    let mut pre = stats::Table::default();
    let mut flags = STRIP_UNLIKELY | WEIGHT_CLASSES | CLEAN_CONDITIONALLY;
    let mut attempts: Vec<(Dom<'a>, Id, u32)> = Vec::new();
    let mut st = stats::Table::default();
    loop {
        if crate::process::cancel::requested() {
            return None;
        }
        // Preparation is deterministic, so every attempt gets the same node ids and
        // the first attempt's measurements of the untouched tree stay valid.
        let mut work = base.clone();
        prep::prepare_document(&mut work);
        if attempts.is_empty() {
            pre.compute_light(&work, 0);
        }
        let grabbed = Grab { dom: &mut work, pre: &pre, st: &mut st, flags, hints }.run();
        if let Some((article, len)) = grabbed {
            if len >= CHAR_THRESHOLD {
                return Some((work, article));
            }
            attempts.push((work, article, len));
        }
        if flags & STRIP_UNLIKELY != 0 {
            flags &= !STRIP_UNLIKELY;
        } else if flags & WEIGHT_CLASSES != 0 {
            flags &= !WEIGHT_CLASSES;
        } else if flags & CLEAN_CONDITIONALLY != 0 {
            flags &= !CLEAN_CONDITIONALLY;
        } else {
            break;
        }
    }
    // The page's own declaration of its main content competes with the attempts.
    if let Some(declared) = declared_content(base, &mut st) {
        attempts.push(declared);
    }
    // Longest attempt wins; the first one on ties.
    let mut best: Option<(Dom<'a>, Id, u32)> = None;
    for attempt in attempts {
        if best.as_ref().is_none_or(|b| attempt.2 > b.2) {
            best = Some(attempt);
        }
    }
    best.filter(|b| b.2 > 0).map(|(d, id, _)| (d, id))
}

/// The element the markup declares as the main content (`itemprop=articleBody`,
/// `role=main`, `<main>`, or the only `<article>`), cleaned like a found article.
fn declared_content<'a>(base: &Dom<'a>, st: &mut stats::Table) -> Option<(Dom<'a>, Id, u32)> {
    let mut by_rank: [Id; 4] = [NONE; 4];
    let mut articles = 0;
    for id in base.descendants(0) {
        let rank = match base.tag(id) {
            Tag::Text => continue,
            Tag::Main => 2,
            Tag::Article => {
                articles += 1;
                3
            }
            _ if base
                .attr(id, "itemprop")
                .is_some_and(|v| v.split_ascii_whitespace().any(|t| t == "articleBody")) =>
            {
                0
            }
            _ if base.attr(id, "role") == Some("main") => 1,
            _ => continue,
        };
        if by_rank[rank] == NONE {
            by_rank[rank] = id;
        }
    }
    if articles > 1 {
        by_rank[3] = NONE;
    }
    let chosen = by_rank.into_iter().find(|&id| id != NONE)?;
    let mut dom = base.clone();
    let article = dom.create(Tag::Div);
    dom.append(article, chosen);
    prep::prep_article(&mut dom, st, article, WEIGHT_CLASSES | CLEAN_CONDITIONALLY);
    st.compute_light(&dom, article);
    let len = st.get(article).seg.len;
    Some((dom, article, len))
}

/// Class/id weight of an element: ±25 for each of class and id.
pub(crate) fn class_weight(dom: &Dom, id: Id, flags: u8) -> i32 {
    if flags & WEIGHT_CLASSES == 0 {
        return 0;
    }
    let n = dom.n(id);
    let one = |f: u8| -> i32 {
        let mut w = 0;
        if f & NEGATIVE != 0 {
            w -= 25;
        }
        if f & POSITIVE != 0 {
            w += 25;
        }
        w
    };
    one(n.class_flags) + one(n.id_flags)
}

/// Is there an ancestor with `tag` within `max_depth + 1` levels (`None`: any depth)
/// that also passes `filter`?
pub(crate) fn has_ancestor(
    dom: &Dom,
    id: Id,
    tag: Tag,
    max_depth: Option<usize>,
    filter: impl Fn(Id) -> bool,
) -> bool {
    let mut cur = dom.parent(id);
    let mut depth = 0;
    while cur != NONE {
        if max_depth.is_some_and(|m| depth > m) {
            return false;
        }
        if dom.tag(cur) == tag && filter(cur) {
            return true;
        }
        cur = dom.parent(cur);
        depth += 1;
    }
    false
}

const UNLIKELY_ROLES: &[&str] =
    &["menu", "menubar", "complementary", "navigation", "alert", "alertdialog", "dialog"];

struct Grab<'g, 'a> {
    dom: &'g mut Dom<'a>,
    /// Stats of the prepared, untouched tree.
    pre: &'g stats::Table,
    /// Stats of the tree being edited, kept current lazily (stale paths are marked).
    st: &'g mut stats::Table,
    flags: u8,
    hints: &'g Hints,
}

impl Grab<'_, '_> {
    /// Depth-first over elements only, optionally skipping the children of `id`.
    fn next_node(&self, id: Id, skip_children: bool) -> Id {
        let dom = &*self.dom;
        if !skip_children {
            let first = dom.first_elem_child(id);
            if first != NONE {
                return first;
            }
        }
        let mut cur = id;
        loop {
            let next = dom.next_elem_sibling(cur);
            if next != NONE {
                return next;
            }
            cur = dom.parent(cur);
            if cur == NONE {
                return NONE;
            }
        }
    }

    fn remove_and_next(&mut self, id: Id) -> Id {
        let next = self.next_node(id, true);
        let parent = self.dom.parent(id);
        self.dom.detach(id);
        self.st.mark_dirty(self.dom, parent);
        next
    }

    fn text_of(&self, id: Id) -> String {
        let mut s = String::new();
        self.dom.text_content(id, &mut s);
        s
    }

    fn is_byline(&self, id: Id) -> bool {
        let dom = &*self.dom;
        let n = dom.n(id);
        let hinted = dom.attr(id, "rel") == Some("author")
            || dom.attr(id, "itemprop").is_some_and(|v| v.contains("author"))
            || (n.class_flags | n.id_flags) & BYLINE != 0;
        if !hinted {
            return false;
        }
        let text = self.text_of(id);
        let units = text.trim_matches(is_space).encode_utf16().count();
        units > 0 && units < 100
    }

    fn duplicates_title(&self, id: Id) -> bool {
        if !matches!(self.dom.tag(id), Tag::H1 | Tag::H2) {
            return false;
        }
        let text = self.text_of(id);
        similarity(&self.hints.title, text.trim_matches(is_space)) > 0.75
    }

    fn without_content(&mut self, id: Id) -> bool {
        self.st.ensure(self.dom, id);
        let s = self.st.get(id);
        if !s.seg.empty {
            return false;
        }
        let children = self.dom.elem_children(id).count() as u32;
        children == 0 || children == s.br_hr
    }

    /// Wraps runs of phrasing children of a `div` into paragraphs; true if any was made.
    fn wrap_phrasing(&mut self, div: Id) -> bool {
        let mut made = false;
        let mut p = NONE;
        let mut child = self.dom.n(div).first;
        while child != NONE {
            // Taken first: the child may move into a wrapper below.
            let next = self.dom.n(child).next;
            if prep::is_phrasing(self.dom, child) {
                if p != NONE {
                    self.dom.append(p, child);
                } else if !self.dom.is_whitespace(child) {
                    p = self.dom.create(Tag::P);
                    made = true;
                    self.dom.replace(child, p);
                    self.dom.append(p, child);
                    self.st.grow(self.dom.nodes.len());
                    self.st.mark_dirty(self.dom, p);
                }
            } else if p != NONE {
                prep::trim_trailing_whitespace(self.dom, p);
                p = NONE;
            }
            child = next;
        }
        made
    }

    /// First pass: prune and collect the elements whose text gets scored.
    fn walk(&mut self) -> Vec<Id> {
        let mut to_score = Vec::new();
        let mut byline_done = self.hints.has_byline;
        let mut title_done = false;
        let strip = self.flags & STRIP_UNLIKELY != 0;
        let mut node = self.dom.first_elem_child(0);
        while node != NONE {
            let dom = &*self.dom;
            let tag = dom.tag(node);
            let flags = dom.n(node).class_flags | dom.n(node).id_flags;
            if dom.attr(node, "aria-modal") == Some("true") && dom.attr(node, "role") == Some("dialog") {
                node = self.remove_and_next(node);
                continue;
            }
            if !byline_done && self.is_byline(node) {
                byline_done = true;
                node = self.remove_and_next(node);
                continue;
            }
            if !title_done && self.duplicates_title(node) {
                title_done = true;
                node = self.remove_and_next(node);
                continue;
            }
            if strip {
                let unlikely = flags & UNLIKELY != 0
                    && flags & MAYBE == 0
                    && tag != Tag::Body
                    && tag != Tag::A
                    && !has_ancestor(dom, node, Tag::Table, Some(3), |_| true)
                    && !has_ancestor(dom, node, Tag::Code, Some(3), |_| true);
                let role = dom.attr(node, "role").unwrap_or("");
                if unlikely || UNLIKELY_ROLES.contains(&role) {
                    node = self.remove_and_next(node);
                    continue;
                }
            }
            let maybe_empty = matches!(tag, Tag::Div | Tag::Section | Tag::Header) || tag.heading_level() > 0;
            if maybe_empty && self.without_content(node) {
                node = self.remove_and_next(node);
                continue;
            }
            if matches!(tag, Tag::Section | Tag::P | Tag::Td | Tag::Pre) || tag.heading_level() > 1 {
                to_score.push(node);
            }
            if tag == Tag::Div {
                let wrapped = self.wrap_phrasing(node);
                self.st.ensure(self.dom, node);
                let single_p = prep::single_child_tag(self.dom, node, Tag::P);
                if single_p != NONE && self.st.get(node).link_density() < 0.25 {
                    let parent = self.dom.parent(node);
                    self.dom.hoist(node, single_p);
                    self.st.mark_dirty(self.dom, parent);
                    node = single_p;
                    to_score.push(node);
                } else if !wrapped && !self.st.get(node).block {
                    self.dom.set_tag(node, Tag::P);
                    to_score.push(node);
                }
            }
            node = self.next_node(node, false);
        }
        to_score
    }

    fn initial_score(&self, id: Id) -> f64 {
        let base = match self.dom.tag(id) {
            Tag::Div => 5.0,
            Tag::Pre | Tag::Td | Tag::Blockquote => 3.0,
            Tag::Address | Tag::Ol | Tag::Ul | Tag::Dl | Tag::Dd | Tag::Dt | Tag::Li | Tag::Form => -3.0,
            Tag::H1 | Tag::H2 | Tag::H3 | Tag::H4 | Tag::H5 | Tag::H6 | Tag::Th => -5.0,
            _ => 0.0,
        };
        base + f64::from(class_weight(self.dom, id, self.flags))
    }

    fn run(mut self) -> Option<(Id, u32)> {
        let body = self.dom.body;
        if body == NONE {
            return None;
        }
        self.st.reset_from(self.pre);
        let to_score = self.walk();
        // Only the paths above the walk's edits are stale.
        self.st.ensure(self.dom, 0);
        let st = &*self.st;

        let mut score = vec![f64::NAN; self.dom.nodes.len() + 2];
        let mut candidates: Vec<Id> = Vec::new();
        for &el in &to_score {
            let parent = self.dom.parent(el);
            if parent == NONE || !self.dom.is_elem(parent) {
                continue;
            }
            let s = st.get(el);
            if s.seg.len < 25 {
                continue;
            }
            let points = 2.0 + f64::from(s.all_commas) + f64::from((s.seg.len / 100).min(3));
            let mut anc = parent;
            for level in 0..5u32 {
                if anc == NONE || !self.dom.is_elem(anc) {
                    break;
                }
                let up = self.dom.parent(anc);
                if up != NONE && self.dom.is_elem(up) {
                    if score[anc as usize].is_nan() {
                        score[anc as usize] = self.initial_score(anc);
                        candidates.push(anc);
                    }
                    let divider = match level {
                        0 => 1.0,
                        1 => 2.0,
                        l => f64::from(l) * 3.0,
                    };
                    score[anc as usize] += points / divider;
                }
                anc = up;
            }
        }

        let mut top: Vec<Id> = Vec::with_capacity(TOP_CANDIDATES + 1);
        for &c in &candidates {
            let s = score[c as usize] * (1.0 - st.get(c).link_density());
            score[c as usize] = s;
            if let Some(pos) =
                (0..TOP_CANDIDATES).find(|&t| top.get(t).is_none_or(|&o| s > score[o as usize]))
            {
                top.insert(pos, c);
                top.truncate(TOP_CANDIDATES);
            }
        }

        let mut best = top.first().copied().unwrap_or(NONE);
        if best == NONE || self.dom.tag(best) == Tag::Body {
            let div = self.dom.create(Tag::Div);
            let children: Vec<Id> = self.dom.children(body).collect();
            for c in children {
                self.dom.append(div, c);
            }
            self.dom.append(body, div);
            score.resize(self.dom.nodes.len() + 1, f64::NAN);
            score[div as usize] = self.initial_score(div);
            best = div;
        } else {
            best = self.refine(best, &top, &mut score);
        }

        let article = self.gather_siblings(best, &score);
        prep::prep_article(self.dom, self.st, article, self.flags);
        self.st.compute_light(self.dom, article);
        Some((article, self.st.get(article).seg.len))
    }

    /// Moves the top candidate up the tree when its ancestors hold the competing
    /// candidates or score better.
    fn refine(&self, mut best: Id, top: &[Id], score: &mut [f64]) -> Id {
        let dom = &*self.dom;
        let stop = |id: Id| id == NONE || !dom.is_elem(id) || matches!(dom.tag(id), Tag::Body | Tag::Html);
        let best_score = score[best as usize];
        let alternatives: Vec<Id> =
            top.iter().skip(1).copied().filter(|&c| score[c as usize] / best_score >= 0.75).collect();
        if alternatives.len() >= 3 {
            // How many alternatives sit below each node, counted in one climb each.
            let mut holding = vec![0u8; dom.nodes.len()];
            for &a in &alternatives {
                let mut up = dom.parent(a);
                while up != NONE {
                    if let Some(h) = holding.get_mut(up as usize) {
                        *h = h.saturating_add(1);
                    }
                    up = dom.parent(up);
                }
            }
            let mut p = dom.parent(best);
            while !stop(p) {
                if holding.get(p as usize).copied().unwrap_or(0) >= 3 {
                    best = p;
                    break;
                }
                p = dom.parent(p);
            }
        }
        if score[best as usize].is_nan() {
            score[best as usize] = self.initial_score(best);
        }
        let mut p = dom.parent(best);
        let mut last = score[best as usize];
        let threshold = last / 3.0;
        while !stop(p) {
            let ps = score[p as usize];
            if ps.is_nan() {
                p = dom.parent(p);
                continue;
            }
            if ps < threshold {
                break;
            }
            if ps > last {
                best = p;
                break;
            }
            last = ps;
            p = dom.parent(p);
        }
        let mut p = dom.parent(best);
        while !stop(p) && dom.elem_children(p).count() == 1 {
            best = p;
            p = dom.parent(best);
        }
        if score[best as usize].is_nan() {
            score[best as usize] = self.initial_score(best);
        }
        best
    }

    /// Collects the top candidate and the siblings that look like part of the same
    /// article into a new container.
    fn gather_siblings(&mut self, best: Id, score: &[f64]) -> Id {
        let article = self.dom.create(Tag::Div);
        let best_score = score.get(best as usize).copied().unwrap_or(0.0);
        let threshold = (best_score * 0.2).max(10.0);
        let parent = self.dom.parent(best);
        if parent == NONE {
            self.dom.append(article, best);
            return article;
        }
        let best_class = self.dom.class(best);
        let siblings: Vec<Id> = self.dom.elem_children(parent).collect();
        for sib in siblings {
            // Page chrome next to the article is never part of it.
            if sib != best && matches!(self.dom.tag(sib), Tag::Nav | Tag::Aside | Tag::Footer) {
                continue;
            }
            let append = sib == best || {
                let bonus = if !best_class.is_empty() && self.dom.class(sib) == best_class {
                    best_score * 0.2
                } else {
                    0.0
                };
                let s = score.get(sib as usize).copied().unwrap_or(f64::NAN);
                if !s.is_nan() && s + bonus >= threshold {
                    true
                } else if self.dom.tag(sib) == Tag::P {
                    let ss = self.st.get(sib);
                    let density = ss.link_density();
                    let len = ss.seg.len;
                    if len > 80 && density < 0.25 {
                        true
                    } else if len < 80 && len > 0 && density == 0.0 {
                        let text = normalize(&self.text_of(sib));
                        text.contains(". ") || text.ends_with('.')
                    } else {
                        false
                    }
                } else {
                    false
                }
            };
            if append {
                if !matches!(self.dom.tag(sib), Tag::Div | Tag::Article | Tag::Section | Tag::P) {
                    self.dom.set_tag(sib, Tag::Div);
                }
                self.dom.append(article, sib);
            }
        }
        article
    }
}
