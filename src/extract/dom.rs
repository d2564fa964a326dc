//! The working tree: a compact, cloneable arena built once from the parsed document.
//!
//! Nodes borrow their text and attributes from the `scraper` tree, so building and
//! cloning the arena copies no strings. Every later stage (cleaning, the content
//! filter, the Markdown writer, the HTML serializer) reads and rewires this arena
//! instead of re-parsing or re-serializing.

use std::collections::HashSet;

use ego_tree::NodeId;
use ego_tree::iter::Edge;
use scraper::node::Element;
use scraper::{Html, Node as SNode};

use super::chrome;
use super::patterns;
use super::prune;
use super::stats::{Seg, TextInfo};
use super::tags::Tag;

/// Index of a node in the arena.
pub(crate) type Id = u32;
/// Absent link.
pub(crate) const NONE: Id = u32::MAX;

/// What a node holds.
#[derive(Clone, Copy)]
pub(crate) enum Data<'a> {
    Document,
    Text(&'a str, TextInfo),
    Elem(&'a Element),
    /// Created by the pipeline (wrapper paragraphs, containers); has no attributes.
    New,
}

/// One node with its links.
#[derive(Clone)]
pub(crate) struct Node<'a> {
    pub parent: Id,
    pub first: Id,
    pub last: Id,
    pub prev: Id,
    pub next: Id,
    pub tag: Tag,
    /// Vocabulary flags of the `class` attribute (see `patterns`).
    pub class_flags: u8,
    /// Vocabulary flags of the `id` attribute.
    pub id_flags: u8,
    /// Scratch bits for one pass of the content filter.
    pub mark: u8,
    pub data: Data<'a>,
}

/// Which subtrees to leave out while building.
pub(crate) struct BuildOptions<'s> {
    pub block_ads: bool,
    pub exclude: &'s HashSet<NodeId>,
    pub include: &'s HashSet<NodeId>,
}

/// The arena. Node 0 is the document.
#[derive(Clone)]
pub(crate) struct Dom<'a> {
    pub nodes: Vec<Node<'a>>,
    /// The `body` element, if any survived.
    pub body: Id,
}

impl<'a> Dom<'a> {
    /// Builds the arena from `html`, dropping never-content tags, comments, hidden
    /// elements, ads (when asked) and excluded subtrees. Elements of `opts.include`
    /// that were kept are returned, with their source ids, in document order.
    pub(crate) fn build(html: &'a Html, opts: &BuildOptions) -> (Dom<'a>, Vec<(NodeId, Id)>) {
        let mut dom = Dom { nodes: Vec::with_capacity(html.tree.nodes().len() / 2 + 8), body: NONE };
        dom.push_node(Tag::Document, Data::Document);
        let mut included = Vec::new();
        // Open elements: source id, arena id, and whether an `article`/`main` is open at or
        // above it.
        let mut stack: Vec<(NodeId, Id, bool)> = Vec::with_capacity(64);
        let mut skip: Option<NodeId> = None;
        let mut ads: Vec<Id> = Vec::new();
        let mut chrome: Vec<(Id, chrome::Kind)> = Vec::new();
        for (step, edge) in html.tree.root().traverse().enumerate() {
            // A cancelled conversion stops here too (the tree is the largest input).
            if step % 8192 == 8191 && crate::process::cancel::requested() {
                break;
            }
            match edge {
                Edge::Open(node) => {
                    if skip.is_some() {
                        continue;
                    }
                    let (parent, in_article) = stack.last().map_or((0, false), |&(_, id, a)| (id, a));
                    match node.value() {
                        SNode::Document => stack.push((node.id(), 0, false)),
                        SNode::Text(t) => {
                            let text: &'a str = t;
                            let id = dom.push_node(Tag::Text, Data::Text(text, TextInfo::of(text)));
                            dom.append(parent, id);
                        }
                        SNode::Element(el) => {
                            let tag = Tag::from_name(el.name());
                            if tag.is_never_content() {
                                skip = Some(node.id());
                                continue;
                            }
                            let seen = prune::inspect(el, tag, opts.block_ads);
                            if seen.hidden || opts.exclude.contains(&node.id()) {
                                skip = Some(node.id());
                                continue;
                            }
                            let id = dom.push_node(tag, Data::Elem(el));
                            let flags = (patterns::scan(seen.class), patterns::scan(seen.id));
                            if let Some(n) = dom.nodes.get_mut(id as usize) {
                                (n.class_flags, n.id_flags) = flags;
                            }
                            dom.append(parent, id);
                            if seen.ad && !matches!(tag, Tag::Html | Tag::Body | Tag::Main) {
                                ads.push(id);
                            }
                            if let Some(kind) =
                                chrome::kind(tag, flags, seen.id, seen.role, seen.modal, in_article)
                            {
                                chrome.push((id, kind));
                            }
                            if tag == Tag::Body && dom.body == NONE {
                                dom.body = id;
                            }
                            if opts.include.contains(&node.id()) {
                                included.push((node.id(), id));
                            }
                            stack.push((
                                node.id(),
                                id,
                                in_article || matches!(tag, Tag::Article | Tag::Main),
                            ));
                        }
                        _ => {}
                    }
                }
                Edge::Close(node) => {
                    if skip == Some(node.id()) {
                        skip = None;
                    } else if stack.last().is_some_and(|&(sid, _, _)| sid == node.id()) {
                        stack.pop();
                    }
                }
            }
        }
        chrome::mark(&mut dom, &ads, &chrome);
        (dom, included)
    }

    /// Detaches the subtrees below `root` marked with any bit of `mask` (ad slots, consent
    /// banners, page chrome; see `chrome`).
    pub(crate) fn drop_marked(&mut self, root: Id, mask: u8) {
        let mut id = self.n(root).first;
        while id != NONE {
            if self.n(id).mark & mask == 0 {
                id = self.next_in(id, root);
                continue;
            }
            let next = self.next_skipping_children(id, root);
            self.detach(id);
            id = next;
        }
    }

    fn push_node(&mut self, tag: Tag, data: Data<'a>) -> Id {
        let id = self.nodes.len() as Id;
        self.nodes.push(Node {
            parent: NONE,
            first: NONE,
            last: NONE,
            prev: NONE,
            next: NONE,
            tag,
            class_flags: 0,
            id_flags: 0,
            mark: 0,
            data,
        });
        id
    }

    /// Creates a detached element with no attributes.
    pub(crate) fn create(&mut self, tag: Tag) -> Id {
        self.push_node(tag, Data::New)
    }

    #[inline]
    pub(crate) fn n(&self, id: Id) -> &Node<'a> {
        &self.nodes[id as usize]
    }

    #[inline]
    fn m(&mut self, id: Id) -> &mut Node<'a> {
        &mut self.nodes[id as usize]
    }

    /// The node, for changing its scratch bits.
    #[inline]
    pub(crate) fn n_mut(&mut self, id: Id) -> &mut Node<'a> {
        self.m(id)
    }

    #[inline]
    pub(crate) fn tag(&self, id: Id) -> Tag {
        self.n(id).tag
    }

    /// Renames an element (keeps attributes and children).
    pub(crate) fn set_tag(&mut self, id: Id, tag: Tag) {
        self.m(id).tag = tag;
    }

    #[inline]
    pub(crate) fn is_elem(&self, id: Id) -> bool {
        !matches!(self.n(id).tag, Tag::Text | Tag::Document)
    }

    pub(crate) fn parent(&self, id: Id) -> Id {
        self.n(id).parent
    }

    /// Text of a text node, or "".
    pub(crate) fn text(&self, id: Id) -> &'a str {
        match self.n(id).data {
            Data::Text(t, _) => t,
            _ => "",
        }
    }

    /// The source element, when the node came from the page.
    pub(crate) fn element(&self, id: Id) -> Option<&'a Element> {
        match self.n(id).data {
            Data::Elem(el) => Some(el),
            _ => None,
        }
    }

    /// Attribute value by (lower-case) name.
    pub(crate) fn attr(&self, id: Id, name: &str) -> Option<&'a str> {
        let el = self.element(id)?;
        el.attrs().find(|&(k, _)| k == name).map(|(_, v)| v)
    }

    /// `class` attribute, or "".
    pub(crate) fn class(&self, id: Id) -> &'a str {
        self.attr(id, "class").unwrap_or("")
    }

    /// Children, in order.
    pub(crate) fn children(&self, id: Id) -> Siblings<'_, 'a> {
        Siblings { dom: self, cur: self.n(id).first }
    }

    /// Element children, in order.
    pub(crate) fn elem_children(&self, id: Id) -> impl Iterator<Item = Id> + '_ {
        self.children(id).filter(|&c| self.is_elem(c))
    }

    pub(crate) fn first_elem_child(&self, id: Id) -> Id {
        self.elem_children(id).next().unwrap_or(NONE)
    }

    pub(crate) fn next_elem_sibling(&self, id: Id) -> Id {
        let mut cur = self.n(id).next;
        while cur != NONE && !self.is_elem(cur) {
            cur = self.n(cur).next;
        }
        cur
    }

    /// Next node in document order inside `root` (pre-order), or `NONE`.
    pub(crate) fn next_in(&self, id: Id, root: Id) -> Id {
        let node = self.n(id);
        if node.first != NONE {
            return node.first;
        }
        self.next_skipping_children(id, root)
    }

    /// Like [`Dom::next_in`] but does not enter `id`'s children.
    pub(crate) fn next_skipping_children(&self, mut id: Id, root: Id) -> Id {
        loop {
            if id == root {
                return NONE;
            }
            let node = self.n(id);
            if node.next != NONE {
                return node.next;
            }
            id = node.parent;
            if id == NONE {
                return NONE;
            }
        }
    }

    /// Descendants of `root` (excluding it) in document order.
    pub(crate) fn descendants(&self, root: Id) -> Descendants<'_, 'a> {
        let first = self.n(root).first;
        Descendants { dom: self, root, cur: first }
    }

    /// Unlinks `id` from its parent (the subtree stays intact).
    pub(crate) fn detach(&mut self, id: Id) {
        let (parent, prev, next) = {
            let n = self.n(id);
            (n.parent, n.prev, n.next)
        };
        if parent == NONE {
            return;
        }
        if prev != NONE {
            self.m(prev).next = next;
        } else {
            self.m(parent).first = next;
        }
        if next != NONE {
            self.m(next).prev = prev;
        } else {
            self.m(parent).last = prev;
        }
        let n = self.m(id);
        n.parent = NONE;
        n.prev = NONE;
        n.next = NONE;
    }

    /// Moves `child` to the end of `parent`'s children.
    pub(crate) fn append(&mut self, parent: Id, child: Id) {
        self.detach(child);
        let last = self.n(parent).last;
        {
            let c = self.m(child);
            c.parent = parent;
            c.prev = last;
        }
        if last != NONE {
            self.m(last).next = child;
        } else {
            self.m(parent).first = child;
        }
        self.m(parent).last = child;
    }

    /// Moves `child` right before `reference`.
    pub(crate) fn insert_before(&mut self, reference: Id, child: Id) {
        let (parent, prev) = {
            let r = self.n(reference);
            (r.parent, r.prev)
        };
        if parent == NONE || child == reference {
            return;
        }
        self.detach(child);
        {
            let c = self.m(child);
            c.parent = parent;
            c.prev = prev;
            c.next = reference;
        }
        self.m(reference).prev = child;
        if prev != NONE {
            self.m(prev).next = child;
        } else {
            self.m(parent).first = child;
        }
    }

    /// Puts `new` where `old` is and detaches `old`.
    pub(crate) fn replace(&mut self, old: Id, new: Id) {
        self.insert_before(old, new);
        self.detach(old);
    }

    /// Puts `child`, a descendant of `old`, where `old` is: the element is unwrapped, so
    /// the child also takes over its drop marks.
    pub(crate) fn hoist(&mut self, old: Id, child: Id) {
        let marks = self.n(old).mark & chrome::ALL;
        self.replace(old, child);
        self.m(child).mark |= marks;
    }

    /// Is `anc` a proper ancestor of `id`?
    pub(crate) fn is_ancestor(&self, anc: Id, mut id: Id) -> bool {
        loop {
            id = self.n(id).parent;
            if id == NONE {
                return false;
            }
            if id == anc {
                return true;
            }
        }
    }

    /// Appends the text content of `root` to `out`.
    pub(crate) fn text_content(&self, root: Id, out: &mut String) {
        if let Data::Text(t, _) = self.n(root).data {
            out.push_str(t);
            return;
        }
        for id in self.descendants(root) {
            if let Data::Text(t, _) = self.n(id).data {
                out.push_str(t);
            }
        }
    }

    /// Normalized length stats of a text node.
    pub(crate) fn text_info(&self, id: Id) -> Option<&TextInfo> {
        match &self.n(id).data {
            Data::Text(_, info) => Some(info),
            _ => None,
        }
    }

    /// Is this a whitespace-only text node or a `br`?
    pub(crate) fn is_whitespace(&self, id: Id) -> bool {
        match &self.n(id).data {
            Data::Text(_, info) => info.seg == Seg::BLANK || info.seg == Seg::EMPTY,
            _ => self.tag(id) == Tag::Br,
        }
    }
}

/// Iterator over a node's children.
pub(crate) struct Siblings<'d, 'a> {
    dom: &'d Dom<'a>,
    cur: Id,
}

impl Iterator for Siblings<'_, '_> {
    type Item = Id;
    fn next(&mut self) -> Option<Id> {
        if self.cur == NONE {
            return None;
        }
        let id = self.cur;
        self.cur = self.dom.n(id).next;
        Some(id)
    }
}

/// Pre-order iterator over a subtree (root excluded).
pub(crate) struct Descendants<'d, 'a> {
    dom: &'d Dom<'a>,
    root: Id,
    cur: Id,
}

impl Iterator for Descendants<'_, '_> {
    type Item = Id;
    fn next(&mut self) -> Option<Id> {
        if self.cur == NONE {
            return None;
        }
        let id = self.cur;
        self.cur = self.dom.next_in(id, self.root);
        Some(id)
    }
}
