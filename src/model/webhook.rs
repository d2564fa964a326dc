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
    /// An agent took a step (accepted in agent filters; agents here send none).
    Action,
    /// An agent job was cancelled.
    Cancelled,
}

impl EventKind {
    /// The filter word (`started`, `page`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Started => "started",
            Self::Page => "page",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Action => "action",
            Self::Cancelled => "cancelled",
        }
    }

    /// The events of crawls and batches.
    pub const JOBS: &[Self] = &[Self::Started, Self::Page, Self::Completed, Self::Failed];
    /// The events of extract jobs.
    pub const EXTRACT: &[Self] = &[Self::Started, Self::Completed, Self::Failed];
    /// The events of agent jobs.
    pub const AGENT: &[Self] = &[Self::Started, Self::Action, Self::Completed, Self::Failed, Self::Cancelled];

    /// Parses a filter entry among `allowed`: the short word or the full event name
    /// (`crawl.page`).
    pub fn parse_among(text: &str, allowed: &[Self]) -> Option<Self> {
        let word = text.rsplit('.').next().unwrap_or(text);
        allowed.iter().copied().find(|k| k.as_str() == word)
    }

    /// Parses a filter entry of a crawl or batch.
    pub fn parse(text: &str) -> Option<Self> {
        Self::parse_among(text, Self::JOBS)
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
