//! Element kinds as a small enum, so hot loops compare bytes instead of strings,
//! plus the tag categories the cleaner, the content filter and the Markdown writer share.

/// Kind of a node in the working tree. Unknown elements are `Other` and keep their
/// source name for serialization.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Tag {
    Document,
    Text,
    Other,
    A,
    Abbr,
    Address,
    Article,
    Aside,
    Audio,
    B,
    Base,
    Bdo,
    Blockquote,
    Body,
    Br,
    Button,
    Canvas,
    Caption,
    Center,
    Cite,
    Code,
    Col,
    Colgroup,
    Data,
    Datalist,
    Dd,
    Del,
    Details,
    Dfn,
    Div,
    Dl,
    Dt,
    Em,
    Embed,
    Fieldset,
    Figcaption,
    Figure,
    Font,
    Footer,
    Form,
    H1,
    H2,
    H3,
    H4,
    H5,
    H6,
    Head,
    Header,
    Hr,
    Html,
    I,
    Iframe,
    Img,
    Input,
    Ins,
    Kbd,
    Label,
    Li,
    Link,
    Main,
    Mark,
    Math,
    Meta,
    Meter,
    Nav,
    Noscript,
    Object,
    Ol,
    Option,
    Output,
    P,
    Picture,
    Pre,
    Progress,
    Q,
    Ruby,
    S,
    Samp,
    Script,
    Section,
    Select,
    Small,
    Source,
    Span,
    Strike,
    Strong,
    Style,
    Sub,
    Summary,
    Sup,
    Svg,
    Table,
    Tbody,
    Td,
    Template,
    Textarea,
    Tfoot,
    Th,
    Thead,
    Time,
    Title,
    Tr,
    Tt,
    U,
    Ul,
    Var,
    Video,
    Wbr,
}

impl Tag {
    /// Maps a (lower-case) HTML local name to its kind.
    pub(crate) fn from_name(name: &str) -> Tag {
        use Tag::*;
        match name {
            "a" => A,
            "abbr" => Abbr,
            "address" => Address,
            "article" => Article,
            "aside" => Aside,
            "audio" => Audio,
            "b" => B,
            "base" => Base,
            "bdo" => Bdo,
            "blockquote" => Blockquote,
            "body" => Body,
            "br" => Br,
            "button" => Button,
            "canvas" => Canvas,
            "caption" => Caption,
            "center" => Center,
            "cite" => Cite,
            "code" => Code,
            "col" => Col,
            "colgroup" => Colgroup,
            "data" => Data,
            "datalist" => Datalist,
            "dd" => Dd,
            "del" => Del,
            "details" => Details,
            "dfn" => Dfn,
            "div" => Div,
            "dl" => Dl,
            "dt" => Dt,
            "em" => Em,
            "embed" => Embed,
            "fieldset" => Fieldset,
            "figcaption" => Figcaption,
            "figure" => Figure,
            "font" => Font,
            "footer" => Footer,
            "form" => Form,
            "h1" => H1,
            "h2" => H2,
            "h3" => H3,
            "h4" => H4,
            "h5" => H5,
            "h6" => H6,
            "head" => Head,
            "header" => Header,
            "hr" => Hr,
            "html" => Html,
            "i" => I,
            "iframe" => Iframe,
            "img" | "image" => Img,
            "input" => Input,
            "ins" => Ins,
            "kbd" => Kbd,
            "label" => Label,
            "li" => Li,
            "link" => Link,
            "main" => Main,
            "mark" => Mark,
            "math" => Math,
            "meta" => Meta,
            "meter" => Meter,
            "nav" => Nav,
            "noscript" => Noscript,
            "object" => Object,
            "ol" => Ol,
            "option" => Option,
            "output" => Output,
            "p" => P,
            "picture" => Picture,
            "pre" | "listing" | "xmp" => Pre,
            "progress" => Progress,
            "q" => Q,
            "ruby" => Ruby,
            "s" => S,
            "samp" => Samp,
            "script" => Script,
            "section" => Section,
            "select" => Select,
            "small" => Small,
            "source" => Source,
            "span" => Span,
            "strike" => Strike,
            "strong" => Strong,
            "style" => Style,
            "sub" => Sub,
            "summary" => Summary,
            "sup" => Sup,
            "svg" => Svg,
            "table" => Table,
            "tbody" => Tbody,
            "td" => Td,
            "template" => Template,
            "textarea" => Textarea,
            "tfoot" => Tfoot,
            "th" => Th,
            "thead" => Thead,
            "time" => Time,
            "title" => Title,
            "tr" => Tr,
            "tt" => Tt,
            "u" => U,
            "ul" => Ul,
            "var" => Var,
            "video" => Video,
            "wbr" => Wbr,
            _ => Other,
        }
    }

    /// Canonical lower-case name, used when a node was renamed or created.
    pub(crate) fn name(self) -> &'static str {
        use Tag::*;
        match self {
            Document | Text | Other => "span",
            A => "a",
            Abbr => "abbr",
            Address => "address",
            Article => "article",
            Aside => "aside",
            Audio => "audio",
            B => "b",
            Base => "base",
            Bdo => "bdo",
            Blockquote => "blockquote",
            Body => "body",
            Br => "br",
            Button => "button",
            Canvas => "canvas",
            Caption => "caption",
            Center => "center",
            Cite => "cite",
            Code => "code",
            Col => "col",
            Colgroup => "colgroup",
            Data => "data",
            Datalist => "datalist",
            Dd => "dd",
            Del => "del",
            Details => "details",
            Dfn => "dfn",
            Div => "div",
            Dl => "dl",
            Dt => "dt",
            Em => "em",
            Embed => "embed",
            Fieldset => "fieldset",
            Figcaption => "figcaption",
            Figure => "figure",
            Font => "font",
            Footer => "footer",
            Form => "form",
            H1 => "h1",
            H2 => "h2",
            H3 => "h3",
            H4 => "h4",
            H5 => "h5",
            H6 => "h6",
            Head => "head",
            Header => "header",
            Hr => "hr",
            Html => "html",
            I => "i",
            Iframe => "iframe",
            Img => "img",
            Input => "input",
            Ins => "ins",
            Kbd => "kbd",
            Label => "label",
            Li => "li",
            Link => "link",
            Main => "main",
            Mark => "mark",
            Math => "math",
            Meta => "meta",
            Meter => "meter",
            Nav => "nav",
            Noscript => "noscript",
            Object => "object",
            Ol => "ol",
            Option => "option",
            Output => "output",
            P => "p",
            Picture => "picture",
            Pre => "pre",
            Progress => "progress",
            Q => "q",
            Ruby => "ruby",
            S => "s",
            Samp => "samp",
            Script => "script",
            Section => "section",
            Select => "select",
            Small => "small",
            Source => "source",
            Span => "span",
            Strike => "strike",
            Strong => "strong",
            Style => "style",
            Sub => "sub",
            Summary => "summary",
            Sup => "sup",
            Svg => "svg",
            Table => "table",
            Tbody => "tbody",
            Td => "td",
            Template => "template",
            Textarea => "textarea",
            Tfoot => "tfoot",
            Th => "th",
            Thead => "thead",
            Time => "time",
            Title => "title",
            Tr => "tr",
            Tt => "tt",
            U => "u",
            Ul => "ul",
            Var => "var",
            Video => "video",
            Wbr => "wbr",
        }
    }

    /// Heading level 1..=6, or 0.
    pub(crate) fn heading_level(self) -> u8 {
        match self {
            Tag::H1 => 1,
            Tag::H2 => 2,
            Tag::H3 => 3,
            Tag::H4 => 4,
            Tag::H5 => 5,
            Tag::H6 => 6,
            _ => 0,
        }
    }

    /// Subtrees that never carry readable content and are dropped while the tree is built.
    pub(crate) fn is_never_content(self) -> bool {
        matches!(
            self,
            Tag::Head
                | Tag::Script
                | Tag::Style
                | Tag::Noscript
                | Tag::Template
                | Tag::Meta
                | Tag::Link
                | Tag::Base
                | Tag::Title
                | Tag::Svg
        )
    }

    /// Phrasing content as the content filter understands it; canvas, iframe, svg
    /// and video are left out on purpose because they rarely belong inside a paragraph.
    pub(crate) fn is_phrasing(self) -> bool {
        use Tag::*;
        matches!(
            self,
            Abbr | Audio
                | B
                | Bdo
                | Br
                | Button
                | Cite
                | Code
                | Data
                | Datalist
                | Dfn
                | Em
                | Embed
                | I
                | Img
                | Input
                | Kbd
                | Label
                | Mark
                | Math
                | Meter
                | Noscript
                | Object
                | Output
                | Progress
                | Q
                | Ruby
                | Samp
                | Script
                | Select
                | Small
                | Span
                | Strong
                | Sub
                | Sup
                | Textarea
                | Time
                | Var
                | Wbr
        )
    }

    /// Elements whose presence means a `div` is a real container, not a paragraph.
    pub(crate) fn is_div_to_p_block(self) -> bool {
        use Tag::*;
        matches!(self, Blockquote | Dl | Div | Img | Ol | P | Pre | Table | Ul)
    }

    /// Elements that start a new block in rendered output.
    pub(crate) fn is_block(self) -> bool {
        use Tag::*;
        matches!(
            self,
            Address
                | Article
                | Aside
                | Blockquote
                | Body
                | Caption
                | Center
                | Dd
                | Details
                | Div
                | Dl
                | Dt
                | Fieldset
                | Figcaption
                | Figure
                | Footer
                | Form
                | H1
                | H2
                | H3
                | H4
                | H5
                | H6
                | Header
                | Hr
                | Html
                | Li
                | Main
                | Nav
                | Ol
                | P
                | Pre
                | Section
                | Summary
                | Table
                | Tbody
                | Td
                | Tfoot
                | Th
                | Thead
                | Tr
                | Ul
        )
    }

    /// Elements serialized without a closing tag.
    pub(crate) fn is_void(self) -> bool {
        use Tag::*;
        matches!(self, Base | Br | Col | Embed | Hr | Img | Input | Link | Meta | Source | Wbr)
    }
}
