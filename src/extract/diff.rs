//! Comparing two Markdown versions of a page for change tracking: whether the content
//! changed (ignoring whitespace-only differences) and a unified diff of the lines.

use similar::TextDiff;

/// How the current Markdown relates to the previous one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Comparison {
    /// Same text, up to whitespace.
    Same,
    /// Different text; the unified diff from previous to current.
    Changed {
        /// `--- previous` / `+++ current` unified diff with three lines of context.
        diff: String,
    },
}

/// Compares `previous` with `current`.
pub fn compare(previous: &str, current: &str) -> Comparison {
    if squash(previous).eq(squash(current)) {
        return Comparison::Same;
    }
    let diff = TextDiff::from_lines(previous, current)
        .unified_diff()
        .context_radius(3)
        .header("previous", "current")
        .to_string();
    Comparison::Changed { diff }
}

/// The text's words in order, whitespace runs ignored.
fn squash(text: &str) -> impl Iterator<Item = &str> {
    text.split_whitespace()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_only_edits_are_the_same() {
        assert_eq!(compare("# Title\n\nSome  text.\n", "# Title\nSome text.\n\n"), Comparison::Same);
    }

    #[test]
    fn changes_come_with_a_unified_diff() {
        let Comparison::Changed { diff } = compare("a\nb\nc\n", "a\nB\nc\n") else {
            panic!("expected a change");
        };
        assert!(diff.starts_with("--- previous\n+++ current\n"), "{diff}");
        assert!(diff.contains("-b\n") && diff.contains("+B\n"), "{diff}");
    }

    #[test]
    fn reordering_is_a_change() {
        assert!(matches!(compare("one\ntwo\n", "two\none\n"), Comparison::Changed { .. }));
    }
}
