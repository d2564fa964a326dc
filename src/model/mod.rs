//! Shared types with no dependency on the rest of the crate: identifiers, the validated
//! scrape options every layer passes around, the result document as the wire shows it,
//! and the error-code table that fixes each error's HTTP status and code string.

pub mod actions;
pub mod code;
pub mod crawl;
pub mod document;
pub mod ids;
pub mod options;
pub mod time;
pub mod webhook;

pub use actions::{Action, PaperFormat, Profile, ScreenshotSpec};
pub use code::{Code, ErrorCode};
pub use crawl::{CrawlOptions, JobKind, JobStatus, MapOptions, SitemapMode};
pub use document::{ActionResults, CacheState, ChangeTracking, Document, Engine, Metadata, ProxyUsed};
pub use ids::{JobId, TeamId};
pub use options::{
    ChangeTrackingSpec, Formats, JsonSpec, Location, PdfParser, ProxyMode, QuerySpec, ScrapeOptions,
};
pub use webhook::{EventKind, WebhookSpec};
