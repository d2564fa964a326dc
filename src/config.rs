//! Settings: the embedded `config/default.toml`, an optional file, `FERROCRAWL_*` environment
//! variables and command-line overrides, merged in that order (later wins) and validated
//! once at start-up. Unknown keys anywhere are an error, so a typo never goes unnoticed.

mod llm;
pub use llm::LlmSettings;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Toml};
use serde::{Deserialize, Serialize};

/// The embedded single-node defaults.
pub const DEFAULT_TOML: &str = include_str!("../config/default.toml");

/// Prefix of environment variables that set configuration keys.
pub const ENV_PREFIX: &str = "FERROCRAWL_";

/// Everything configurable.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// HTTP front door.
    pub server: ServerSettings,
    /// Persistence.
    pub storage: StorageSettings,
    /// Outbound address policy.
    pub security: SecuritySettings,
    /// Page fetching.
    pub scrape: ScrapeSettings,
    /// Crawls and batches.
    pub crawl: CrawlSettings,
    /// Clean-up of expired data.
    pub janitor: JanitorSettings,
    /// Webhook delivery.
    pub webhooks: WebhookSettings,
    /// Default team limits.
    pub limits: LimitSettings,
    /// Proxies.
    pub proxy: ProxySettings,
    /// The Chromium engine and interact sessions.
    pub browser: BrowserSettings,
    /// Documents (office files, spreadsheets).
    pub documents: DocumentSettings,
    /// Logging.
    pub log: LogSettings,
    /// `GET /metrics`.
    #[serde(default)]
    pub metrics: MetricsSettings,
    /// `POST /v2/search`: the local index and the providers.
    #[serde(default)]
    pub search: SearchSettings,
    /// The language-model server (off unless `base_url` is set).
    #[serde(default)]
    pub llm: LlmSettings,
    /// Joining other nodes into one service (off unless `listen` is set).
    pub cluster: ClusterSettings,
    /// Plan flags per team name.
    #[serde(default)]
    pub teams: BTreeMap<String, TeamSettings>,
}

/// `[cluster]`
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSettings {
    /// This node's name, unique in the cluster (defaults to the listen address).
    pub node_name: String,
    /// Address (`host:port`) the cluster port binds to; empty runs the node alone.
    pub listen: String,
    /// Address other nodes use to reach this one; empty means `listen`.
    pub advertise: String,
    /// Nodes to join at start (`host:port`); one is enough, the others are met through it.
    pub seeds: Vec<String>,
    /// The shared secret (cookie) nodes authenticate each other with.
    pub secret: String,
    /// A file holding the secret instead.
    pub secret_file: String,
    /// How often each node checks that its peers answer (ms).
    pub heartbeat_ms: u64,
    /// A peer that has not answered for this long is out of the cluster (ms).
    pub down_after_ms: u64,
    /// Only the side of a split cluster that holds more than half of the members that may
    /// be running fetches (the other waits until it sees a majority again); false lets
    /// each side fetch the sites it places on its own members.
    #[serde(default = "keep_majority")]
    pub keep_majority: bool,
    /// Largest message a node accepts from another (bytes).
    pub max_message_bytes: u64,
    /// This node's certificate chain (PEM): with `tls_key` and `tls_ca`, nodes talk over
    /// TLS and accept only peers whose certificate `tls_ca` signed.
    #[serde(default)]
    pub tls_cert: String,
    /// This node's private key (PEM).
    #[serde(default)]
    pub tls_key: String,
    /// The certificates (PEM) peers' certificates must chain to.
    #[serde(default)]
    pub tls_ca: String,
}

impl std::fmt::Debug for ClusterSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterSettings")
            .field("node_name", &self.node_name)
            .field("listen", &self.listen)
            .field("advertise", &self.advertise)
            .field("seeds", &self.seeds)
            .field("secret", &(!self.secret.is_empty()).then_some("<set>"))
            .field("secret_file", &self.secret_file)
            .field("heartbeat_ms", &self.heartbeat_ms)
            .field("down_after_ms", &self.down_after_ms)
            .field("keep_majority", &self.keep_majority)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("tls_cert", &self.tls_cert)
            .field("tls_key", &self.tls_key)
            .field("tls_ca", &self.tls_ca)
            .finish()
    }
}

/// `cluster.keep_majority` when a settings layer leaves it out.
fn keep_majority() -> bool {
    true
}

impl ClusterSettings {
    /// Whether this node joins a cluster.
    pub fn enabled(&self) -> bool {
        !self.listen.trim().is_empty()
    }

    /// The shared secret, read from `secret_file` when that is set.
    pub fn cookie(&self) -> Result<String, ConfigError> {
        let invalid = |reason: String| ConfigError::Invalid { key: "cluster.secret", reason };
        let secret = if self.secret_file.trim().is_empty() {
            self.secret.clone()
        } else {
            std::fs::read_to_string(self.secret_file.trim())
                .map_err(|e| invalid(format!("cannot read cluster.secret_file: {e}")))?
        };
        let secret = secret.trim().to_owned();
        if secret.len() < 16 {
            return Err(invalid(
                "a cluster needs a secret of at least 16 characters (secret or secret_file)".into(),
            ));
        }
        Ok(secret)
    }

    /// This node's name.
    pub fn name(&self) -> String {
        match self.node_name.trim() {
            "" => self.reachable_at(),
            name => name.to_owned(),
        }
    }

    /// Whether nodes talk over TLS (all three files are set).
    pub fn tls(&self) -> bool {
        !self.tls_cert.trim().is_empty()
    }

    /// The address peers connect to.
    pub fn reachable_at(&self) -> String {
        match self.advertise.trim() {
            "" => self.listen.trim().to_owned(),
            addr => addr.to_owned(),
        }
    }
}

/// `[server]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    /// Listen address.
    pub host: String,
    /// Listen port.
    pub port: u16,
    /// Externally reachable base URL; empty means "from the request".
    pub public_url: String,
    /// Worker threads; 0 = one per core.
    pub workers: usize,
    /// Largest JSON request body.
    pub max_request_bytes: usize,
    /// At a stop (SIGTERM, Ctrl-C), the longest wait for running requests to finish, in
    /// seconds; those still running then are cut off.
    pub shutdown_grace_secs: u64,
}

/// `[storage]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageSettings {
    /// Data directory.
    pub data_dir: PathBuf,
    /// Lifetime of stored scrape results, seconds.
    pub result_ttl_secs: u64,
    /// sled's page cache, MiB.
    pub cache_mb: u64,
    /// Free space the data directory's disk keeps, MiB: below it nothing new is stored
    /// (`store::space`). 0 turns the check off.
    pub min_free_mb: u64,
    /// The store lives only as long as one command (a command-line crawl without
    /// `--data`): it is written but never synced, and deleted when closed. Not a file setting.
    #[serde(skip)]
    pub scratch: bool,
}

impl StorageSettings {
    /// sled's page cache in bytes.
    pub fn cache_bytes(&self) -> u64 {
        self.cache_mb.saturating_mul(1 << 20)
    }

    /// The free-space floor in bytes.
    pub fn min_free_bytes(&self) -> u64 {
        self.min_free_mb.saturating_mul(1 << 20)
    }
}

/// `[documents]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocumentSettings {
    /// Most MiB unpacked from one zip-based document.
    pub max_unzipped_mb: u64,
    /// Most sheets converted per workbook.
    pub max_sheets: usize,
    /// Most rows converted per sheet.
    pub max_rows: usize,
    /// Most pages converted per PDF.
    pub max_pdf_pages: usize,
}

/// `[security]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecuritySettings {
    /// Allow private and loopback targets.
    pub allow_private_targets: bool,
    /// Exact host names or addresses exempt from the private-address rule.
    pub allowed_private_hosts: Vec<String>,
}

/// `[scrape]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScrapeSettings {
    /// Desktop User-Agent.
    pub user_agent: String,
    /// Mobile User-Agent.
    pub mobile_user_agent: String,
    /// Largest response body read from a target.
    pub max_body_bytes: usize,
    /// Redirect hops followed.
    pub max_redirects: usize,
}

/// `[crawl]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrawlSettings {
    /// Fetches in flight per job by default (0: the team's concurrency limit).
    pub max_concurrency: u32,
    /// Fetches in flight per site.
    pub domain_concurrency: u32,
    /// Smallest pause between requests to one site (ms).
    pub domain_min_interval_ms: u64,
    /// Kept on top of a site's interval, when it has one, as each request leaves (ms):
    /// room for the moments between handing a request to the HTTP client and the site
    /// reading it, which a busy machine stretches.
    #[serde(default = "default_interval_margin_ms")]
    pub domain_interval_margin_ms: u64,
    /// Token matched against robots.txt.
    pub robots_agent: String,
    /// Lifetime of jobs (s).
    pub job_ttl_secs: u64,
    /// Attempts per page on 429/503.
    pub max_attempts: u32,
    /// Idle lifetime of a site actor (s).
    pub domain_idle_secs: u64,
}

/// `crawl.domain_interval_margin_ms` where a settings file predates it.
fn default_interval_margin_ms() -> u64 {
    3
}

/// `[browser]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserSettings {
    /// Chromium executable; empty: Debian's `chromium-headless-shell` when installed, else
    /// `chromium` on the PATH.
    pub executable: String,
    /// Chromium processes in the pool.
    pub pool_size: usize,
    /// Pages open at once per process.
    pub tabs_per_browser: usize,
    /// Time allowed for Chromium to start (ms).
    pub launch_timeout_ms: u64,
    /// Longest smart wait for network idle and a quiet DOM (ms).
    pub smart_wait_max_ms: u64,
    /// Render pages whose HTML looks built by JavaScript in the browser.
    pub auto_render: bool,
    /// Interact sessions open at once on this server.
    pub max_sessions: usize,
    /// Idle time after which an interact session closes (s).
    pub session_idle_secs: u64,
    /// Longest life of an interact session, in seconds.
    pub session_max_secs: u64,
    /// Languages interact `code` may use on this server (`node` runs in the page; `python`
    /// and `bash` run in a sandbox); each team may use those its entry allows.
    pub code_languages: Vec<String>,
    /// This program, run inside the sandbox (tests set it: their server runs in the test
    /// program); unset: the running program.
    #[serde(skip)]
    pub sandbox_exe: Option<std::path::PathBuf>,
}

/// `[janitor]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JanitorSettings {
    /// Sweep period (s).
    pub interval_secs: u64,
    /// Age after which cached pages are deleted (s).
    pub cache_retention_secs: u64,
}

/// `[webhooks]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookSettings {
    /// Per-attempt timeout (ms).
    pub timeout_ms: u64,
    /// Retry window (s).
    pub retry_window_secs: u64,
    /// Longest pause between attempts (s).
    pub max_backoff_secs: u64,
    /// Outbox polling period (ms).
    pub poll_ms: u64,
}

/// `[limits]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitSettings {
    /// Pages in flight per team.
    pub team_concurrency: u32,
    /// POST requests per minute per team (0: none).
    pub requests_per_minute: u32,
}

/// `[proxy]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxySettings {
    /// The enhanced proxy URL; empty when none.
    pub enhanced_url: String,
}

/// `[metrics]`
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSettings {
    /// Answer `GET /metrics` only with a valid API key (by default it needs none, like a
    /// scrape target behind the operator's network).
    #[serde(default)]
    pub require_key: bool,
    /// Serve `GET /metrics` on this address of its own (e.g. `127.0.0.1:9464`) instead of
    /// the API's port; empty keeps it on the API's port.
    #[serde(default)]
    pub listen: String,
}

/// `[search]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SearchSettings {
    /// Providers asked in order: `local` (this server's index) and `searxng`.
    pub providers: Vec<String>,
    /// Base URL of a SearXNG instance with its JSON format enabled.
    pub searxng_url: String,
    /// Longest a provider request may take, ms.
    pub provider_timeout_ms: u64,
    /// Index every stored page into the local index (in the data directory's `search/`).
    pub index: bool,
    /// Pages held with their text at most, from the page stored to the index's commit
    /// (the indexer commits when this many are written); beyond, a page waits as its
    /// page-cache key and is converted again when the indexer gets to it.
    pub index_queue: usize,
}

impl Default for SearchSettings {
    fn default() -> Self {
        Self {
            providers: vec!["local".to_owned()],
            searxng_url: String::new(),
            provider_timeout_ms: 10_000,
            index: true,
            index_queue: 1_000,
        }
    }
}

/// `[log]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSettings {
    /// Default tracing filter.
    pub level: String,
    /// `text` or `json`.
    pub format: LogFormat,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// `[teams.NAME]`
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TeamSettings {
    /// Enterprise plan: robots.txt overrides.
    pub enterprise: bool,
    /// May send zero-data-retention requests.
    pub zero_data_retention: bool,
    /// May use the search `enterprise` options.
    pub search_enterprise: bool,
    /// Credits per calendar month; unlimited when unset.
    pub credits: Option<u64>,
    /// Pages in flight at once (overrides `limits.team_concurrency`).
    pub concurrency: Option<u32>,
    /// POST requests per minute (overrides `limits.requests_per_minute`).
    pub requests_per_minute: Option<u32>,
    /// Key that signs webhook deliveries.
    pub webhook_secret: Option<String>,
    /// May read the operator views (`GET /v2/cluster`).
    pub admin: bool,
    /// Interact `code` languages the team may use, of those the server runs
    /// (`browser.code_languages`); unset: `node` only.
    pub code_languages: Option<Vec<String>>,
}

impl std::fmt::Debug for TeamSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamSettings")
            .field("enterprise", &self.enterprise)
            .field("zero_data_retention", &self.zero_data_retention)
            .field("search_enterprise", &self.search_enterprise)
            .field("credits", &self.credits)
            .field("concurrency", &self.concurrency)
            .field("requests_per_minute", &self.requests_per_minute)
            .field("webhook_secret", &self.webhook_secret.as_ref().map(|_| "<set>"))
            .field("admin", &self.admin)
            .field("code_languages", &self.code_languages)
            .finish()
    }
}

/// Values given on the command line, applied last.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--port`
    pub port: Option<u16>,
    /// `--data`
    pub data_dir: Option<PathBuf>,
    /// `--cluster-listen`
    pub cluster_listen: Option<String>,
    /// `--join` (repeatable)
    pub join: Vec<String>,
}

/// Why the configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file, variable or key could not be read or is unknown.
    #[error("configuration: {0}")]
    Load(#[from] Box<figment::Error>),
    /// A value is out of range or inconsistent.
    #[error("configuration: {key}: {reason}")]
    Invalid {
        /// The offending key.
        key: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

impl Settings {
    /// Loads the defaults, then `file`, then `FERROCRAWL_*` variables, then `overrides`.
    pub fn load(file: Option<&Path>, overrides: &Overrides) -> Result<Self, ConfigError> {
        let mut figment = Figment::from(Toml::string(DEFAULT_TOML));
        if let Some(path) = file {
            if !path.is_file() {
                return Err(ConfigError::Invalid {
                    key: "--config",
                    reason: format!("{} is not a readable file", path.display()),
                });
            }
            figment = figment.merge(Toml::file(path));
        }
        figment = figment.merge(Env::prefixed(ENV_PREFIX).split("__"));
        let mut settings: Settings = figment.extract().map_err(Box::new)?;
        if let Some(port) = overrides.port {
            settings.server.port = port;
        }
        if let Some(dir) = &overrides.data_dir {
            settings.storage.data_dir.clone_from(dir);
        }
        if let Some(listen) = &overrides.cluster_listen {
            settings.cluster.listen.clone_from(listen);
        }
        settings.cluster.seeds.extend(overrides.join.iter().cloned());
        settings.validate()?;
        Ok(settings)
    }

    /// Settings for tests and embedding: the defaults with the given data directory.
    pub fn defaults_with_data_dir(dir: impl Into<PathBuf>) -> Self {
        let mut settings: Settings = Figment::from(Toml::string(DEFAULT_TOML))
            .extract()
            .expect("the embedded default configuration is valid");
        settings.storage.data_dir = dir.into();
        settings
    }

    /// Checks ranges and cross-field rules.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, reason: &str| Err(ConfigError::Invalid { key, reason: reason.into() });
        if self.server.host.parse::<IpAddr>().is_err() && self.server.host != "localhost" {
            return invalid("server.host", "must be an IP address or localhost");
        }
        let public = self.server.public_url.trim();
        if !public.is_empty() {
            match url::Url::parse(public) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                _ => return invalid("server.public_url", "must be an http(s) URL or empty"),
            }
        }
        if self.server.max_request_bytes < 1024 {
            return invalid("server.max_request_bytes", "must be at least 1024");
        }
        if self.storage.result_ttl_secs == 0 {
            return invalid("storage.result_ttl_secs", "must be positive");
        }
        for name in &self.search.providers {
            match name.as_str() {
                "local" if !self.search.index => {
                    return invalid("search.providers", "`local` needs search.index = true");
                }
                "searxng" if self.search.searxng_url.trim().is_empty() => {
                    return invalid("search.searxng_url", "must be set when search.providers names searxng");
                }
                "local" | "searxng" => {}
                _ => return invalid("search.providers", "each must be `local` or `searxng`"),
            }
        }
        let searxng = self.search.searxng_url.trim();
        if !searxng.is_empty()
            && !url::Url::parse(searxng).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
        {
            return invalid("search.searxng_url", "must be an http(s) URL or empty");
        }
        if self.scrape.max_body_bytes < 1024 {
            return invalid("scrape.max_body_bytes", "must be at least 1024");
        }
        if self.scrape.max_redirects > 50 {
            return invalid("scrape.max_redirects", "must be at most 50");
        }
        if self.scrape.user_agent.trim().is_empty() || self.scrape.mobile_user_agent.trim().is_empty() {
            return invalid("scrape.user_agent", "user agents must not be empty");
        }
        if self.crawl.domain_concurrency == 0 {
            return invalid("crawl.domain_concurrency", "must be at least 1");
        }
        if self.crawl.max_attempts == 0 {
            return invalid("crawl.max_attempts", "must be at least 1");
        }
        if self.crawl.job_ttl_secs == 0 || self.janitor.interval_secs == 0 {
            return invalid("crawl.job_ttl_secs", "durations must be positive");
        }
        if self.webhooks.timeout_ms == 0 || self.webhooks.poll_ms == 0 || self.webhooks.max_backoff_secs == 0
        {
            return invalid("webhooks.timeout_ms", "webhook timings must be positive");
        }
        if self.limits.team_concurrency == 0 || self.teams.values().any(|t| t.concurrency == Some(0)) {
            return invalid("limits.team_concurrency", "team concurrency must be at least 1");
        }
        if self.crawl.robots_agent.trim().is_empty() {
            return invalid("crawl.robots_agent", "must not be empty");
        }
        let b = &self.browser;
        if b.pool_size == 0 || b.tabs_per_browser == 0 || b.max_sessions == 0 {
            return invalid("browser.pool_size", "browser pool size, tabs and sessions must be at least 1");
        }
        if b.launch_timeout_ms == 0 || b.session_idle_secs == 0 || b.session_max_secs == 0 {
            return invalid("browser.launch_timeout_ms", "browser timings must be positive");
        }
        let language = |l: &&String| !matches!(l.as_str(), "node" | "python" | "bash");
        if let Some(bad) = b.code_languages.iter().find(language) {
            return Err(ConfigError::Invalid {
                key: "browser.code_languages",
                reason: format!("`{bad}` is not one of node, python, bash"),
            });
        }
        for (team, settings) in &self.teams {
            if let Some(bad) = settings.code_languages.iter().flatten().find(language) {
                return Err(ConfigError::Invalid {
                    key: "teams.<name>.code_languages",
                    reason: format!("team `{team}`: `{bad}` is not one of node, python, bash"),
                });
            }
        }
        let proxy = self.proxy.enhanced_url.trim();
        if !proxy.is_empty() {
            match url::Url::parse(proxy) {
                Ok(u) if matches!(u.scheme(), "http" | "https" | "socks5" | "socks5h") => {}
                _ => return invalid("proxy.enhanced_url", "must be an http, https or socks5 URL"),
            }
        }
        self.validate_cluster()?;
        self.llm.validate().map_err(|(key, reason)| ConfigError::Invalid { key, reason })?;
        for name in self.teams.keys() {
            if crate::model::TeamId::parse(name).is_err() {
                return Err(ConfigError::Invalid {
                    key: "teams",
                    reason: format!("`{name}` is not a valid team name"),
                });
            }
        }
        Ok(())
    }

    fn validate_cluster(&self) -> Result<(), ConfigError> {
        let c = &self.cluster;
        let invalid = |key, reason: String| Err(ConfigError::Invalid { key, reason });
        if !c.enabled() {
            if !c.seeds.is_empty() {
                return invalid(
                    "cluster.seeds",
                    "joining other nodes needs cluster.listen (--cluster-listen)".into(),
                );
            }
            return Ok(());
        }
        for (key, addr) in
            [("cluster.listen", c.listen.trim()), ("cluster.advertise", c.reachable_at().as_str())]
        {
            if addr.parse::<std::net::SocketAddr>().is_err() {
                return invalid(key, format!("`{addr}` is not an IP address and port"));
            }
        }
        if let Some(bad) = c.seeds.iter().find(|s| !s.contains(':')) {
            return invalid("cluster.seeds", format!("`{bad}` is not host:port"));
        }
        c.cookie()?;
        if c.heartbeat_ms == 0 || c.down_after_ms < 2 * c.heartbeat_ms {
            return invalid("cluster.down_after_ms", "must be at least twice cluster.heartbeat_ms".into());
        }
        if c.max_message_bytes < 1 << 20 {
            return invalid("cluster.max_message_bytes", "must be at least 1 MiB".into());
        }
        let tls = [
            ("cluster.tls_cert", &c.tls_cert),
            ("cluster.tls_key", &c.tls_key),
            ("cluster.tls_ca", &c.tls_ca),
        ];
        if tls.iter().any(|(_, v)| !v.trim().is_empty())
            && let Some((key, _)) = tls.iter().find(|(_, v)| v.trim().is_empty())
        {
            return invalid(key, "TLS between nodes needs tls_cert, tls_key and tls_ca together".into());
        }
        Ok(())
    }

    /// The enhanced proxy URL, when one is configured.
    pub fn enhanced_proxy(&self) -> Option<&str> {
        Some(self.proxy.enhanced_url.trim()).filter(|s| !s.is_empty())
    }

    /// The configured public base URL without a trailing slash, when set.
    pub fn public_url(&self) -> Option<&str> {
        Some(self.server.public_url.trim().trim_end_matches('/')).filter(|s| !s.is_empty())
    }

    /// Plan flags of a team (all off when the team has no entry).
    pub fn team(&self, name: &str) -> TeamSettings {
        self.teams.get(name).cloned().unwrap_or_default()
    }

    /// Whether team `name` may run interact code in `language`: the server runs it
    /// (`browser.code_languages`) and the team's entry allows it (unset: `node` only).
    /// The error names the setting that refuses it.
    pub fn team_may_run(&self, name: &str, language: &str) -> Result<(), String> {
        if !self.browser.code_languages.iter().any(|l| l == language) {
            return Err("not enabled on this server (browser.code_languages)".to_owned());
        }
        let team = self.teams.get(name).and_then(|t| t.code_languages.as_ref());
        match team {
            Some(allowed) if allowed.iter().any(|l| l == language) => Ok(()),
            None if language == "node" => Ok(()),
            _ => Err(format!("not enabled for team `{name}` (teams.{name}.code_languages)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_defaults_are_valid() {
        let s = Settings::defaults_with_data_dir("x");
        s.validate().expect("valid");
        assert_eq!(s.server.port, 3002);
        assert!(!s.security.allow_private_targets);
        assert!(s.team("default").zero_data_retention);
        assert!(!s.team("nobody").zero_data_retention);
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let bad = format!("{DEFAULT_TOML}\n[extra]\nx = 1\n");
        let err = Figment::from(Toml::string(&bad)).extract::<Settings>().unwrap_err();
        assert!(err.to_string().contains("extra"), "{err}");
        let bad = DEFAULT_TOML.replace("max_redirects = 10", "max_redirects = 10\nmax_redirect = 3");
        let err = Figment::from(Toml::string(&bad)).extract::<Settings>().unwrap_err();
        assert!(err.to_string().contains("max_redirect"), "{err}");
    }

    #[test]
    fn bad_values_name_their_key() {
        let mut s = Settings::defaults_with_data_dir("x");
        s.proxy.enhanced_url = "ftp://nope".into();
        let err = s.validate().unwrap_err().to_string();
        assert!(err.contains("proxy.enhanced_url"), "{err}");
        let mut s = Settings::defaults_with_data_dir("x");
        s.llm.job_ttl_secs = 0;
        let err = s.validate().unwrap_err().to_string();
        assert!(err.contains("llm.job_ttl_secs"), "{err}");
    }
}
