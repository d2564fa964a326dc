//! What a job asks of a site's actor, and how it ends: a page to fetch ([`FetchTask`],
//! [`FetchOutcome`]) or a document to read as it is, such as a sitemap
//! ([`DocumentOutcome`]). These cross between nodes too, when a site's actor lives on
//! another node than the job.

use serde::{Deserialize, Serialize};

use crate::model::{Code, Document, JobId, ScrapeOptions, TeamId};

/// One page to fetch for a job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FetchTask {
    /// The job asking.
    pub job: JobId,
    /// Its team.
    pub team: TeamId,
    /// Id given to this page's scrape.
    pub scrape_id: JobId,
    /// The URL.
    pub url: String,
    /// How to scrape it.
    pub options: ScrapeOptions,
    /// Check robots.txt first.
    pub respect_robots: bool,
    /// Agent to match robots.txt rules for, instead of ours.
    pub robots_agent: Option<String>,
    /// Return the page's links (crawls do, batches do not).
    pub discover: bool,
    /// How long the page waited for its team's concurrency limit, when it did (ms).
    pub queued_ms: Option<u64>,
}

/// How a fetch ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum FetchOutcome {
    /// The page, and its links when discovery was asked for.
    Page {
        /// The result document.
        document: Box<Document>,
        /// Absolute links of the page.
        links: Vec<String>,
    },
    /// The scrape failed.
    Failed {
        /// Error code.
        code: Code,
        /// Message.
        error: String,
    },
    /// robots.txt forbids the URL.
    Blocked,
    /// The job was cancelled before the page was done.
    Cancelled,
    /// The site's actor on this node let the site go to another node before the page
    /// started: send it again to the site's owner.
    Moved,
    /// A page from the node of its site, its document already in the stored form.
    Stored(Box<super::stored::StoredPage>),
    /// The site's actors on the node asked could not take the page (they are stopping, or
    /// starting again after a failure): not the page's own failure. A job sends such a
    /// page again when another node answered so; on the job's own node it fails, as every
    /// other job of the node does. Says why.
    NotTaken(String),
}

impl FetchOutcome {
    /// This outcome with a stored page read back into its document.
    pub fn parsed(self) -> Self {
        match self {
            Self::Stored(page) => match serde_json::from_slice(&page.document) {
                Ok(document) => Self::Page { document: Box::new(document), links: page.links.into_vec() },
                Err(e) => {
                    Self::Failed { code: crate::model::Code::Unknown, error: format!("unreadable page: {e}") }
                }
            },
            other => other,
        }
    }
}

/// How a document fetch ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum DocumentOutcome {
    /// The site answered (any status).
    Fetched {
        /// HTTP status.
        status: u16,
        /// Body bytes.
        body: Vec<u8>,
    },
    /// No answer (network, address policy, timeout).
    Failed(String),
    /// The job was cancelled before the document was read.
    Cancelled,
    /// The site's actor here let the site go to another node first: ask the site's owner.
    /// Never sent as it is: another node hears that the site moved.
    #[serde(skip)]
    Moved,
}
