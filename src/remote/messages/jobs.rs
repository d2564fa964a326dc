//! The `Jobs` channel: what nodes ask each other about sites (a page fetched through the
//! actor of a site another node owns, its sitemaps, a turn of its pace, letting it go, its
//! cached pages) and about jobs (a job lives on the node that accepted it: reading,
//! cancelling or listing it from another node is a request too).
//!
//! Both enums are positional (postcard): a variant's place is its number on the wire, so
//! variants are only ever added at the end, and one no peer sends any more keeps its place.

use serde::{Deserialize, Serialize};

use crate::actors::NodeCounts;
use crate::actors::fetch::{DocumentOutcome, FetchTask};
use crate::actors::stored::StoredPage;
use crate::model::{Code, JobId, JobKind};
use crate::store::CachedPage;
use crate::store::jobs::{Counters, ErrorEntry, JobRecord};

/// What one node asks another.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Request {
    /// How much the node holds.
    Counts,
    /// Fetch a page of a site this node owns (through its site actor).
    Fetch(Box<FetchTask>),
    /// A job was cancelled: the site actors drop its pages.
    CancelJob(JobId),
    /// The sitemaps robots.txt names, of a site this node owns (its origin).
    Sitemaps(String),
    /// Read a document as-is (a sitemap) through the actor of a site this node owns.
    Document {
        /// The job asking.
        job: JobId,
        /// The document.
        url: String,
    },
    /// A job of the team with a page of its documents.
    Page {
        /// The team.
        team: String,
        /// The job.
        id: JobId,
        /// Crawl or batch.
        kind: JobKind,
        /// Documents to skip, at most, and bytes at most.
        paging: (u64, usize, usize),
    },
    /// A job's failed pages.
    Errors {
        /// The team.
        team: String,
        /// The job.
        id: JobId,
        /// Crawl or batch.
        kind: JobKind,
    },
    /// Cancel a job.
    Cancel {
        /// The team.
        team: String,
        /// The job.
        id: JobId,
        /// Crawl or batch.
        kind: JobKind,
    },
    /// The team's running jobs of a kind on that node.
    Active {
        /// The team.
        team: String,
        /// Crawl or batch.
        kind: JobKind,
    },
    /// Let a site (its origin) go: the asking node's actor of it is about to start. Answered
    /// once this node's actor of the site has no request running and has stopped.
    Release(String),
    /// A turn of the pace of a site this node owns, without a place among its requests in
    /// flight. No node of a version this one speaks sends it (it keeps its place on the
    /// wire); answered with a failure.
    Turn(String),
    /// A turn of the pace of a site this node owns, for a request to this URL (a redirect
    /// hop the asking node sends there), with a place among the site's requests in flight,
    /// held for the asking node until it sends [`Request::Return`]. Answered `Lent(id)`, or
    /// `Done` when this node has no actor of the site.
    TurnHeld(String),
    /// The hop that lent place `id` has its answer: the place is free again.
    Return(u64),
    /// [`Request::Fetch`], the page holding one of its team's concurrency slots on this
    /// node while its request is out.
    FetchAdmitted(Box<FetchTask>),
    /// The hop that lent turn `id` has its request written: the turn counts as taken now,
    /// and the site's own requests need not wait for the hop's answer. The place stays lent
    /// until [`Request::Return`].
    Written(u64),
    /// Forget the member of this name, gone for good. Answered `Done` (also when this node
    /// does not know it), or `Failed` when this node counts it as live.
    Forget(String),
    /// The page cached under this key, of a site this node owns. Answered `CachedPage`.
    Cached([u8; 32]),
    /// Cache this page under this key, of a site this node owns. Answered `Done`.
    Cache {
        /// The cache key.
        key: [u8; 32],
        /// The page.
        page: Box<CachedPage>,
    },
}

/// The answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Response {
    /// See [`Request::Counts`].
    Counts(NodeCounts),
    /// See [`Request::Fetch`]: the outcome as JSON (a result document is a JSON shape, with
    /// fields left out when empty, which a positional encoding cannot carry).
    Fetched(#[serde(with = "serde_bytes")] Vec<u8>),
    /// See [`Request::Sitemaps`].
    Sitemaps(Vec<String>),
    /// See [`Request::Document`].
    Document(DocumentOutcome),
    /// See [`Request::Page`].
    Page {
        /// The job.
        job: Box<JobRecord>,
        /// Its counts.
        counts: Counters,
        /// Documents (JSON).
        documents: Vec<serde_bytes::ByteBuf>,
    },
    /// See [`Request::Errors`].
    Errors {
        /// Pages that failed.
        failed: Vec<ErrorEntry>,
        /// URLs robots.txt kept the job from.
        robots_blocked: Vec<String>,
    },
    /// Done.
    Done,
    /// See [`Request::Active`].
    Active(Vec<(JobId, JobRecord)>),
    /// The request failed there.
    Failed {
        /// HTTP status.
        status: u16,
        /// Error code.
        code: String,
        /// Message.
        message: String,
    },
    /// See [`Request::Fetch`], when the outcome is a page: its document in the stored form,
    /// which the job's node stores as it is.
    Stored(Box<StoredPage>),
    /// See [`Request::TurnHeld`]: the turn is had, and the place lent is `id`.
    Lent(u64),
    /// See [`Request::Cached`].
    CachedPage(Option<Box<CachedPage>>),
    /// See [`Request::Fetch`]: this node's site actors could not take the page (they are
    /// stopping, or starting again after a failure); the asker sends it again once the
    /// members change (`Feature::NotTakenAnswered`). Says why.
    NotTaken(String),
}

/// The code of [`Response::moved`].
const SITE_MOVED: &str = "SITE_MOVED";

impl Response {
    /// The answer to a request for a site's sitemaps or documents when this node's actor of
    /// the site let it go to another node first: the asker asks the site's owner.
    pub fn moved() -> Self {
        Self::Failed {
            status: 421,
            code: SITE_MOVED.into(),
            message: "the site moved to another node".into(),
        }
    }

    /// Whether this is [`Response::moved`].
    pub fn is_moved(&self) -> bool {
        matches!(self, Self::Failed { code, .. } if code == SITE_MOVED)
    }

    /// `error` as the answer: its status, code and message.
    pub fn failed(error: &(impl crate::model::ErrorCode + std::fmt::Display)) -> Self {
        let code: Code = error.code();
        Self::Failed { status: code.status(), code: code.as_str().to_owned(), message: error.to_string() }
    }
}
