//! The error-code table: every error the API can answer maps to one [`Code`], which fixes
//! its HTTP status and the exact code string of the wire envelope (the strings are the ones
//! Firecrawl clients match on, written out rather than derived from variant names).

/// Implemented by every layer's error enum so the API can render any of them.
pub trait ErrorCode {
    /// The code (and so the HTTP status) of this error.
    fn code(&self) -> Code;
}

macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident => ($status:expr, $name:expr) ),+ $(,)?) => {
        /// A machine-readable error code with its HTTP status.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Code {
            $( $(#[$doc])* $variant, )+
        }

        impl Code {
            /// HTTP status answered for this code.
            pub fn status(self) -> u16 {
                match self { $( Code::$variant => $status, )+ }
            }

            /// The code string of the JSON envelope.
            pub fn as_str(self) -> &'static str {
                match self { $( Code::$variant => $name, )+ }
            }

            /// Every code, for documentation and tests.
            pub const ALL: &'static [Code] = &[ $( Code::$variant, )+ ];
        }
    };
}

codes! {
    /// The request failed validation; the message names the field.
    BadRequest => (400, "BAD_REQUEST"),
    /// The body is not valid JSON.
    InvalidJson => (400, "BAD_REQUEST_INVALID_JSON"),
    /// The option exists in the API but its capability is not available in this build.
    FeatureNotAvailable => (400, "FEATURE_NOT_AVAILABLE"),
    /// The target resolves to an address the security settings refuse.
    UrlBlocked => (400, "URL_BLOCKED"),
    /// A job id that is not a UUID.
    InvalidJobId => (400, "BAD_REQUEST"),
    /// Missing or unknown API key.
    Unauthorized => (401, "UNAUTHORIZED"),
    /// The team has too few credits left.
    PaymentRequired => (402, "INSUFFICIENT_CREDITS"),
    /// The team's request rate is exceeded.
    RateLimited => (429, "RATE_LIMITED"),
    /// The team lacks a permission the request needs.
    Forbidden => (403, "FORBIDDEN"),
    /// No such route or resource for this team.
    NotFound => (404, "NOT_FOUND"),
    /// `minAge` was set and the cache holds nothing matching.
    ScrapeNoCachedData => (404, "SCRAPE_NO_CACHED_DATA"),
    /// `lockdown` was set and the page is not cached.
    ScrapeLockdownCacheMiss => (404, "SCRAPE_LOCKDOWN_CACHE_MISS"),
    /// The route exists but not for this method.
    MethodNotAllowed => (405, "METHOD_NOT_ALLOWED"),
    /// The request conflicts with the resource's state (finished job, reused key).
    Conflict => (409, "CONFLICT"),
    /// The scrape did not finish within its timeout.
    ScrapeTimeout => (408, "SCRAPE_TIMEOUT"),
    /// A map did not finish within its timeout.
    MapTimeout => (408, "MAP_TIMEOUT"),
    /// A search's providers did not answer within its timeout.
    SearchTimeout => (408, "SEARCH_TIMEOUT"),
    /// The request body is larger than the server accepts.
    PayloadTooLarge => (413, "PAYLOAD_TOO_LARGE"),
    /// The target served a file type this build cannot convert.
    ScrapeUnsupportedFile => (415, "SCRAPE_UNSUPPORTED_FILE_ERROR"),
    /// A parse option that makes no sense for an uploaded file (actions, screenshots…).
    ParseUnsupportedOptions => (400, "PARSE_UNSUPPORTED_OPTIONS"),
    /// An upload whose type is not one of the supported documents.
    UnsupportedFileType => (400, "UNSUPPORTED_FILE_TYPE"),
    /// A document (office file, spreadsheet) is corrupt, encrypted or unpacks too large.
    DocumentUnreadable => (422, "SCRAPE_DOCUMENT_UNREADABLE"),
    /// The target's DNS name does not resolve (reported with HTTP 200, as Firecrawl does).
    ScrapeDnsResolution => (200, "SCRAPE_DNS_RESOLUTION_ERROR"),
    /// An internal failure; never caused by client input.
    Unknown => (500, "UNKNOWN_ERROR"),
    /// The target could not be reached or answered unusably.
    ScrapeSiteError => (502, "SCRAPE_SITE_ERROR"),
    /// The TLS handshake with the target failed verification.
    ScrapeSslError => (502, "SCRAPE_SSL_ERROR"),
    /// The server is shutting down or a dependency is unavailable.
    Unavailable => (503, "SERVICE_UNAVAILABLE"),
    /// The data directory's disk is (nearly) full: nothing new can be stored.
    StorageUnavailable => (503, "STORAGE_UNAVAILABLE"),
    /// A page action failed (no such element, script error); the message names the action.
    ScrapeActionError => (400, "SCRAPE_ACTION_ERROR"),
    /// The request needs a browser and this server has no Chromium.
    BrowserUnavailable => (503, "BROWSER_UNAVAILABLE"),
    /// The browser failed while doing the work.
    BrowserFailed => (502, "BROWSER_ERROR"),
    /// The scrape's page state cannot be recreated (zero data retention, or expired).
    ReplayUnavailable => (409, "REPLAY_CONTEXT_UNAVAILABLE"),
    /// The interact session of this scrape was already destroyed.
    SessionDestroyed => (410, "SESSION_DESTROYED"),
    /// The server's maximum of interact sessions is reached.
    SessionLimit => (429, "TOO_MANY_SESSIONS"),
    /// Interact with a `prompt` needs a language model, which this server does not have yet.
    AgentUnavailable => (503, "FEATURE_NOT_AVAILABLE"),
    /// The language-model server failed, timed out or answered unusably.
    LlmFailed => (502, "LLM_ERROR"),
    /// The node that owns the job is not a live member of the cluster now.
    NodeUnavailable => (503, "NODE_UNAVAILABLE"),
    /// The job's stored record could not be read by this build and is held in quarantine.
    RecordQuarantined => (500, "RECORD_QUARANTINED"),
    /// A crawl's page that landed (after redirects) outside the crawl's scope; only ever in
    /// a crawl's list of failed pages, never an answer's status.
    CrawlDenial => (400, "CRAWL_DENIAL"),
}

impl Code {
    /// The code whose string is `name`; the first of the table when several share it
    /// (their strings are what clients see), [`Code::Unknown`] for a string not in it.
    pub fn named(name: &str) -> Self {
        Self::ALL.iter().copied().find(|c| c.as_str() == name).unwrap_or(Self::Unknown)
    }
}

/// Written as its string, which is what clients and other nodes read.
impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Code {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(deserializer)?;
        Ok(Self::named(&name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_errors_are_never_server_errors() {
        for code in Code::ALL {
            let status = code.status();
            let server_side = matches!(
                code,
                Code::Unknown
                    | Code::ScrapeSiteError
                    | Code::ScrapeSslError
                    | Code::Unavailable
                    | Code::StorageUnavailable
                    | Code::BrowserUnavailable
                    | Code::BrowserFailed
                    | Code::AgentUnavailable
                    | Code::RecordQuarantined
                    | Code::NodeUnavailable
                    | Code::LlmFailed
            );
            assert_eq!(status >= 500, server_side, "{code:?} has status {status}");
        }
    }

    #[test]
    fn contract_code_strings() {
        assert_eq!(Code::ScrapeNoCachedData.as_str(), "SCRAPE_NO_CACHED_DATA");
        assert_eq!(Code::ScrapeLockdownCacheMiss.as_str(), "SCRAPE_LOCKDOWN_CACHE_MISS");
        assert_eq!(Code::InvalidJson.as_str(), "BAD_REQUEST_INVALID_JSON");
        assert_eq!(Code::ScrapeTimeout.status(), 408);
    }

    #[test]
    fn codes_are_written_and_read_as_their_strings() {
        assert_eq!(serde_json::to_string(&Code::ScrapeTimeout).expect("json"), "\"SCRAPE_TIMEOUT\"");
        for code in Code::ALL {
            let read: Code = serde_json::from_str(&serde_json::to_string(code).expect("json")).expect("read");
            assert_eq!(read.as_str(), code.as_str());
        }
        let unknown: Code = serde_json::from_str("\"A_CODE_OF_A_LATER_RELEASE\"").expect("read");
        assert_eq!(unknown, Code::Unknown);
    }
}
