//! Whether the content a page shows is a stand-in for content that JavaScript would put
//! there: (nearly) no text, or a short "Loading..." / "Please wait" notice. The scrape
//! pipeline renders such pages in the browser when they carry scripts; the raw-HTML shell
//! check (`scrape::engine::js_shell`) misses them when a server-rendered header, menu and
//! banner surround an empty application root.

use super::dom::{Dom, Id, NONE};
use super::tags::Tag;

/// Below this many visible characters the content is nearly empty.
const NEARLY_EMPTY: usize = 40;
/// Content this short may be a loading notice.
const NOTICE_MAX: usize = 200;
/// Words of loading notices and of pages that need JavaScript (lower case).
const NOTICES: &[&str] = &[
    "loading",
    "please wait",
    "one moment",
    "enable javascript",
    "javascript is required",
    "requires javascript",
    "javascript to run this app",
];

/// Whether the text of `root` in `dom`, outside the subtrees marked with `skip`, is nearly
/// empty or a loading notice. Reads at most [`NOTICE_MAX`] characters.
pub(crate) fn is_placeholder(dom: &Dom, root: Id, skip: u8) -> bool {
    let mut text = String::new();
    let mut id = dom.n(root).first;
    while id != NONE && text.len() <= NOTICE_MAX {
        if dom.n(id).mark & skip != 0 {
            id = dom.next_skipping_children(id, root);
            continue;
        }
        match dom.tag(id) {
            Tag::Text => {
                for word in dom.text(id).split_whitespace() {
                    text.push_str(word);
                    text.push(' ');
                }
            }
            // An image is content a script did not have to make.
            Tag::Img => return false,
            _ => {}
        }
        id = dom.next_in(id, root);
    }
    let visible = text.chars().filter(|c| !c.is_whitespace()).count();
    if visible < NEARLY_EMPTY {
        return true;
    }
    if text.len() > NOTICE_MAX {
        return false;
    }
    let lower = text.to_lowercase();
    NOTICES.iter().any(|notice| lower.contains(notice))
}
