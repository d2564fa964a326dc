//! Webhooks as a job stores them: where to send events, extra headers, the caller's
//! metadata echoed in every event, and which kinds of events are wanted.

use serde::{Deserialize, Serialize};

/// A kind of job event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventKind {
    /// The job was accepted.
    Started,
    /// A page finished (or failed).
    Page,
    /// The job finished (also after a cancel).
    Completed,
    /// The job failed as a whole.
    Failed,
}

impl EventKind {
    /// The filter word (`started`, `page`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Started => "started",
            Self::Page => "page",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }

    /// Parses a filter entry: the short word or the full event name (`crawl.page`).
    pub fn parse(text: &str) -> Option<Self> {
        let word = text.rsplit('.').next().unwrap_or(text);
        [Self::Started, Self::Page, Self::Completed, Self::Failed].into_iter().find(|k| k.as_str() == word)
    }
}

/// A job's webhook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct WebhookSpec {
    /// Receiver URL.
    pub url: String,
    /// Extra request headers.
    pub headers: Vec<(String, String)>,
    /// Echoed as `metadata` in every event.
    pub metadata: Vec<(String, String)>,
    /// Wanted kinds; empty means all.
    pub events: Vec<EventKind>,
}

impl WebhookSpec {
    /// Whether events of `kind` are sent.
    pub fn wants(&self, kind: EventKind) -> bool {
        self.events.is_empty() || self.events.contains(&kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_accept_short_and_full_names() {
        assert_eq!(EventKind::parse("page"), Some(EventKind::Page));
        assert_eq!(EventKind::parse("batch_scrape.completed"), Some(EventKind::Completed));
        assert_eq!(EventKind::parse("crawl.nothing"), None);
        let spec = WebhookSpec { events: vec![EventKind::Completed], ..Default::default() };
        assert!(spec.wants(EventKind::Completed) && !spec.wants(EventKind::Page));
        assert!(WebhookSpec::default().wants(EventKind::Page));
    }
}
