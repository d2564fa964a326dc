//! Frozen definitions of records as earlier releases wrote them, one module per version,
//! so this build can still decode what every release wrote (see `codec`; formats of
//! commits between releases are not kept). Nothing here may change: these are the exact
//! field lists, in order, of the records of that version. Converting to today's types goes
//! through JSON, which matches fields by name and fills fields added since with their
//! defaults.

/// Version 1 (schema version 1, release 0.1.0): `JobRecord` held `CrawlOptions` as
/// positional postcard.
pub(super) mod v1 {
    #![allow(dead_code, missing_docs, missing_debug_implementations, unreachable_pub)]

    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize)]
    pub enum JobKind {
        Crawl,
        Batch,
    }

    #[derive(Serialize, Deserialize)]
    pub enum JobStatus {
        Scraping,
        Completed,
        Failed,
        Cancelled,
    }

    #[derive(Serialize, Deserialize)]
    pub struct JobRecord {
        pub kind: JobKind,
        pub team: String,
        pub url: String,
        pub options: CrawlOptions,
        pub status: JobStatus,
        pub created_ms: u64,
        pub expires_ms: u64,
        pub finished_ms: Option<u64>,
        pub error: Option<String>,
    }

    #[derive(Serialize, Deserialize)]
    pub enum SitemapMode {
        Skip,
        Include,
        Only,
    }

    #[derive(Serialize, Deserialize)]
    pub struct CrawlOptions {
        pub include_paths: Vec<String>,
        pub exclude_paths: Vec<String>,
        pub max_discovery_depth: Option<u32>,
        pub sitemap: SitemapMode,
        pub ignore_query_parameters: bool,
        pub deduplicate_similar_urls: bool,
        pub regex_on_full_url: bool,
        pub limit: u64,
        pub crawl_entire_domain: bool,
        pub allow_external_links: bool,
        pub allow_subdomains: bool,
        pub ignore_robots_txt: bool,
        pub robots_user_agent: Option<String>,
        pub delay_ms: Option<u64>,
        pub max_concurrency: Option<u32>,
        pub scrape: ScrapeOptions,
        pub webhook: Option<WebhookSpec>,
    }

    #[derive(Serialize, Deserialize)]
    pub enum ProxyMode {
        Basic,
        Enhanced,
        Auto,
    }

    #[derive(Serialize, Deserialize)]
    pub struct Location {
        pub country: Option<String>,
        pub languages: Vec<String>,
    }

    #[derive(Serialize, Deserialize)]
    pub struct ChangeTrackingSpec {
        pub git_diff: bool,
        pub tag: Option<String>,
    }

    #[derive(Serialize, Deserialize)]
    pub struct ScreenshotSpec {
        pub full_page: bool,
        pub quality: Option<u8>,
        pub viewport: Option<(u32, u32)>,
    }

    #[derive(Serialize, Deserialize)]
    pub struct Formats {
        pub markdown: bool,
        pub html: bool,
        pub raw_html: bool,
        pub raw_base64: bool,
        pub links: bool,
        pub images: bool,
        pub change_tracking: Option<ChangeTrackingSpec>,
        pub attributes: Vec<(String, String)>,
        pub screenshot: Option<ScreenshotSpec>,
        pub branding: bool,
    }

    #[derive(Serialize, Deserialize)]
    pub struct PdfParser {
        pub enabled: bool,
        pub max_pages: Option<u32>,
    }

    #[derive(Serialize, Deserialize)]
    pub enum PaperFormat {
        A0,
        A1,
        A2,
        A3,
        A4,
        A5,
        A6,
        Letter,
        Legal,
        Tabloid,
        Ledger,
    }

    #[derive(Serialize, Deserialize)]
    pub enum Action {
        Sleep { ms: u64 },
        WaitFor { selector: String },
        Click { selector: String, all: bool },
        Write { text: String },
        Press { key: String },
        Scroll { up: bool, selector: Option<String> },
        Screenshot(ScreenshotSpec),
        Scrape,
        ExecuteJavascript { script: String },
        Pdf { format: PaperFormat, landscape: bool, scale_pct: u16 },
    }

    #[derive(Serialize, Deserialize)]
    pub struct Profile {
        pub name: String,
        pub save_changes: bool,
    }

    #[derive(Serialize, Deserialize)]
    pub struct ScrapeOptions {
        pub formats: Formats,
        pub only_main_content: bool,
        pub include_tags: Vec<String>,
        pub exclude_tags: Vec<String>,
        pub headers: Vec<(String, String)>,
        pub timeout_ms: u64,
        pub mobile: bool,
        pub skip_tls_verification: bool,
        pub location: Option<Location>,
        pub remove_base64_images: bool,
        pub block_ads: bool,
        pub proxy: ProxyMode,
        pub max_age_ms: u64,
        pub min_age_ms: Option<u64>,
        pub store_in_cache: bool,
        pub lockdown: bool,
        pub zero_data_retention: bool,
        pub pdf: PdfParser,
        pub wait_for_ms: u64,
        pub actions: Vec<Action>,
        pub profile: Option<Profile>,
    }

    #[derive(Serialize, Deserialize)]
    pub enum EventKind {
        Started,
        Page,
        Completed,
        Failed,
    }

    #[derive(Serialize, Deserialize)]
    pub struct WebhookSpec {
        pub url: String,
        pub headers: Vec<(String, String)>,
        pub metadata: Vec<(String, String)>,
        pub events: Vec<EventKind>,
    }
}

/// Converts a frozen record to today's type by field names (through JSON).
pub(super) fn convert<Old: serde::Serialize, New: serde::de::DeserializeOwned>(
    old: &Old,
) -> Result<New, serde_json::Error> {
    serde_json::from_value(serde_json::to_value(old)?)
}
