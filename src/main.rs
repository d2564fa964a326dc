//! The `ferrocrawl` command: parses the command line, loads settings, starts logging and
//! calls into the library. No logic lives here.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};

use ferrocrawl::config::{LogSettings, Overrides, Settings};
use ferrocrawl::extract::{self, ExtractOptions, Wanted};
use ferrocrawl::local::CrawlCommand;
use ferrocrawl::model::TeamId;
use ferrocrawl::search::{Found, Source};
use ferrocrawl::store::Store;

/// mimalloc keeps fragmentation low under many threads; glibc's per-thread arenas kept a
/// crawl's transient page buffers resident (about 1 GB on a 100 000-page crawl). The store's
/// IO buffers are kept for reuse ([`ferrocrawl::alloc`]).
#[global_allocator]
static GLOBAL: ferrocrawl::alloc::Allocator = ferrocrawl::alloc::Allocator::new();

#[derive(Debug, Parser)]
#[command(name = "ferrocrawl", version, about = "Self-hosted web content extraction (Firecrawl v2 API)")]
struct Cli {
    /// Configuration file (TOML), merged over the built-in defaults.
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the API server.
    Serve {
        /// Listen port (overrides server.port).
        #[arg(long)]
        port: Option<u16>,
        /// Data directory (overrides storage.data_dir).
        #[arg(long)]
        data: Option<PathBuf>,
        /// Cluster port address, e.g. 10.0.0.5:4700 (overrides cluster.listen).
        #[arg(long)]
        cluster_listen: Option<String>,
        /// A node of the cluster to join, host:port (repeatable; adds to cluster.seeds).
        #[arg(long)]
        join: Vec<String>,
    },
    /// Manage API keys (while the server is stopped).
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Crawl a site in-process: one Markdown file per page and index.jsonl in --out.
    Crawl {
        /// Start URL.
        url: String,
        /// Most pages.
        #[arg(long, default_value_t = 10_000)]
        limit: u64,
        /// Only follow URLs whose path matches this regex (repeatable).
        #[arg(long = "include")]
        include: Vec<String>,
        /// Skip URLs whose path matches this regex (repeatable).
        #[arg(long = "exclude")]
        exclude: Vec<String>,
        /// Output folder.
        #[arg(long, default_value = "crawl-out")]
        out: PathBuf,
        /// Fetches in flight (for the crawl and per site).
        #[arg(long)]
        concurrency: Option<u32>,
        /// Follow links outside the start URL's path.
        #[arg(long)]
        entire_domain: bool,
        /// Data directory for the job, kept and synced like the server's, holding every
        /// result document too. By default a temporary store keeps only the frontier and
        /// counters: written but never synced, and deleted at the end.
        #[arg(long)]
        data: Option<PathBuf>,
        /// Allow private and loopback targets (a site on this machine or network).
        #[arg(long)]
        allow_private: bool,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// List a site's URLs (start page links and sitemaps), one per line.
    Map {
        /// The site.
        url: String,
        /// Most links.
        #[arg(long, default_value_t = 5_000)]
        limit: usize,
        /// Keep links mentioning these words, best first.
        #[arg(long)]
        search: Option<String>,
        /// Allow private and loopback targets.
        #[arg(long)]
        allow_private: bool,
    },
    /// Search the data directory's index (and the other configured providers); prints
    /// one result per line, tab-separated: web `URL TITLE`, images `IMAGE PAGE TITLE`, news
    /// `URL DATE TITLE` (each line starting with its source when several are asked), or
    /// with `--json` the results as POST /v2/search's `data`.
    Search {
        /// The query, with the operators of POST /v2/search.
        query: String,
        /// Most results per source.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Result lists: web, images, news (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "web")]
        sources: Vec<String>,
        /// Print JSON instead of lines.
        #[arg(long)]
        json: bool,
        /// Data directory (defaults to the configuration's).
        #[arg(long)]
        data: Option<PathBuf>,
    },
    /// The local search index.
    Index {
        #[command(subcommand)]
        command: IndexCommand,
    },
    /// Inspect the data directory (while the server is stopped).
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// Manage teams (while the server is stopped).
    Teams {
        #[command(subcommand)]
        command: TeamsCommand,
    },
    /// Print the Markdown of a local document (PDF, DOCX, ODT, RTF, XLSX, XLS, ODS, HTML), as
    /// POST /v2/parse would produce it; warnings go to standard error.
    Parse {
        /// The file.
        file: PathBuf,
    },
    /// Print the Markdown of a local HTML file, as a scrape of URL would produce it.
    Extract {
        /// The HTML file.
        file: PathBuf,
        /// The page's URL (for relative links).
        #[arg(long, default_value = "http://localhost/")]
        url: String,
        /// Keep the whole page instead of the main content.
        #[arg(long)]
        full: bool,
    },
}

#[derive(Debug, Subcommand)]
enum KeysCommand {
    /// Add a key for a team and print it.
    Create {
        /// The team the key authenticates as.
        #[arg(long)]
        team: String,
        /// Use this value instead of a generated key.
        #[arg(long)]
        key: Option<String>,
        /// Data directory (overrides storage.data_dir).
        #[arg(long)]
        data: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum IndexCommand {
    /// Make the index again from the page cache (while the server is stopped).
    Rebuild {
        /// Data directory (defaults to the configuration's).
        #[arg(long)]
        data: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum StoreCommand {
    /// Upgrade the layout if needed, read every stored record and list those in quarantine;
    /// exits non-zero when a record does not decode or any is quarantined.
    Check {
        /// Data directory (overrides storage.data_dir).
        #[arg(long)]
        data: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum TeamsCommand {
    /// Print the secret that signs a team's webhook deliveries (every team has one, made on
    /// first use), or replace it.
    Secret {
        /// The team.
        #[arg(long)]
        team: String,
        /// Replace it with this value.
        #[arg(long, conflicts_with = "rotate")]
        secret: Option<String>,
        /// Replace it with a newly generated secret.
        #[arg(long)]
        rotate: bool,
        /// Data directory (overrides storage.data_dir).
        #[arg(long)]
        data: Option<PathBuf>,
    },
    /// Set a team's monthly credit plan (overrides teams.<name>.credits in the config).
    Credits {
        /// The team.
        #[arg(long)]
        team: String,
        /// Credits per month, or `unlimited`.
        #[arg(long)]
        plan: String,
        /// Data directory (overrides storage.data_dir).
        #[arg(long)]
        data: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    ferrocrawl::alloc::tune_memory();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve { port, data, cluster_listen, join } => {
            let overrides = Overrides { port, data_dir: data, cluster_listen, join };
            let settings = Settings::load(cli.config.as_deref(), &overrides)?;
            ferrocrawl::telemetry::init(&settings.log);
            serve(settings)
        }
        Command::Keys { command: KeysCommand::Create { team, key, data } } => {
            create_key(&data_dir(cli.config.as_deref(), data)?, &team, key.as_deref())
        }
        Command::Extract { file, url, full } => extract_file(&file, &url, full),
        Command::Parse { file } => {
            let settings = Settings::load(cli.config.as_deref(), &Overrides::default())?;
            parse_file(&file, &settings)
        }
        Command::Search { query, limit, sources, json, data } => {
            let settings =
                Settings::load(cli.config.as_deref(), &Overrides { data_dir: data, ..Overrides::default() })?;
            if !(1..=100).contains(&limit) {
                bail!("--limit must be between 1 and 100");
            }
            let mut wanted = Vec::new();
            for name in &sources {
                let Some(source) = Source::parse(name.trim()) else {
                    bail!("--sources: `{name}` is not one of web, images, news");
                };
                if !wanted.contains(&source) {
                    wanted.push(source);
                }
            }
            let found = runtime()?.block_on(ferrocrawl::local::search(&settings, &query, limit, &wanted))?;
            print_found(&found, &wanted, json)
        }
        Command::Index { command: IndexCommand::Rebuild { data } } => {
            let settings =
                Settings::load(cli.config.as_deref(), &Overrides { data_dir: data, ..Overrides::default() })?;
            let pages = ferrocrawl::local::rebuild_index(&settings)?;
            println!("indexed {pages} pages");
            Ok(())
        }
        Command::Store { command: StoreCommand::Check { data } } => {
            check_store(&data_dir(cli.config.as_deref(), data)?)
        }
        Command::Teams { command: TeamsCommand::Secret { team, secret, rotate, data } } => {
            let settings =
                Settings::load(cli.config.as_deref(), &Overrides { data_dir: data, ..Overrides::default() })?;
            let replacement = match (secret, rotate) {
                (Some(given), _) => Some(given),
                (None, true) => Some(ferrocrawl::store::teams::new_webhook_secret()),
                (None, false) => None,
            };
            webhook_secret(&settings, &team, replacement.as_deref())
        }
        Command::Teams { command: TeamsCommand::Credits { team, plan, data } } => {
            set_credit_plan(&data_dir(cli.config.as_deref(), data)?, &team, &plan)
        }
        Command::Crawl {
            url,
            limit,
            include,
            exclude,
            out,
            concurrency,
            entire_domain,
            data,
            allow_private,
            quiet,
        } => {
            let (settings, _temp) = local_settings(cli.config.as_deref(), data, allow_private)?;
            let url = parse_url(&url)?;
            let command = CrawlCommand {
                url,
                limit,
                include,
                exclude,
                out,
                concurrency,
                entire_domain,
                progress: !quiet,
            };
            let summary = runtime()?.block_on(ferrocrawl::local::crawl(settings, command))?;
            println!(
                "pages={} failed={} robots_blocked={} seconds={:.2}",
                summary.pages,
                summary.failed,
                summary.blocked,
                summary.elapsed.as_secs_f64()
            );
            Ok(())
        }
        Command::Map { url, limit, search, allow_private } => {
            let (settings, _temp) = local_settings(cli.config.as_deref(), None, allow_private)?;
            let url = parse_url(&url)?;
            for link in runtime()?.block_on(ferrocrawl::local::map(settings, &url, limit, search))? {
                println!("{}", link.url);
            }
            Ok(())
        }
    }
}

/// The data directory of the config, or `data` when given.
fn data_dir(config: Option<&Path>, data: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    Ok(Settings::load(config, &Overrides { data_dir: data, ..Overrides::default() })?.storage.data_dir)
}

/// Settings for an in-process job: a temporary data directory unless one is given, quiet
/// logs, and private targets when asked for.
fn local_settings(
    config: Option<&Path>,
    data: Option<PathBuf>,
    allow_private: bool,
) -> anyhow::Result<(Settings, Option<TempData>)> {
    let temp = tempdir_if(data.is_none())?;
    let data_dir = data.or_else(|| temp.as_ref().map(|t| t.path().to_path_buf()));
    let mut settings = Settings::load(config, &Overrides { data_dir, ..Overrides::default() })?;
    settings.security.allow_private_targets |= allow_private;
    settings.storage.scratch = temp.is_some();
    ferrocrawl::telemetry::init(&LogSettings { level: "warn".into(), ..settings.log.clone() });
    Ok((settings, temp))
}

/// The async runtime. Its blocking pool serves the store; a small pool (a few threads per
/// core) keeps blocking work from fanning out into hundreds of threads, each with its own
/// allocator arenas. Conversion has threads of its own (`scrape::convert_off_runtime`).
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().max_blocking_threads(cores * 2).build()?)
}

fn parse_url(text: &str) -> anyhow::Result<url::Url> {
    ferrocrawl::api::target::parse_str(text).map_err(|reason| anyhow::anyhow!("the URL {reason}"))
}

/// A temporary data directory, removed when dropped.
fn tempdir_if(wanted: bool) -> anyhow::Result<Option<TempData>> {
    if !wanted {
        return Ok(None);
    }
    let path = std::env::temp_dir().join(format!("ferrocrawl-{}", ferrocrawl::model::JobId::new()));
    std::fs::create_dir_all(&path)?;
    Ok(Some(TempData(path)))
}

/// A directory deleted on drop.
#[derive(Debug)]
struct TempData(PathBuf);

impl TempData {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempData {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn serve(settings: Settings) -> anyhow::Result<()> {
    let address = format!("{}:{}", settings.server.host, settings.server.port);
    let listener = TcpListener::bind(&address).with_context(|| format!("cannot listen on {address}"))?;
    runtime()?.block_on(ferrocrawl::serve(listener, settings, shutdown_signal()))?;
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

fn create_key(data_dir: &Path, team: &str, key: Option<&str>) -> anyhow::Result<()> {
    let team = TeamId::parse(team).map_err(anyhow::Error::msg)?;
    if key.is_some_and(|v| v.len() < 8 || v.chars().any(|c| c.is_whitespace() || c.is_control())) {
        bail!("--key must be at least 8 characters with no spaces");
    }
    let store = Store::open(data_dir).context("opening the data directory")?;
    let created = store.keys.add(&team, key)?;
    store.flush()?;
    println!("{}", created.value);
    eprintln!("API key added for team `{}` in {}", created.team, data_dir.display());
    Ok(())
}

fn webhook_secret(settings: &Settings, team: &str, replacement: Option<&str>) -> anyhow::Result<()> {
    let team = TeamId::parse(team).map_err(anyhow::Error::msg)?;
    if replacement.is_some_and(|s| s.len() < 16) {
        bail!("--secret must be at least 16 characters");
    }
    let data_dir = &settings.storage.data_dir;
    let store = Store::open(data_dir).context("opening the data directory")?;
    let secret = match replacement {
        Some(secret) => {
            store.teams.set_webhook_secret(&team, secret)?;
            eprintln!("webhook secret of team `{team}` replaced in {}", data_dir.display());
            secret.to_owned()
        }
        None => {
            let configured = settings.team(team.as_str()).webhook_secret;
            store.teams.webhook_secret(&team, configured.as_deref())?
        }
    };
    store.flush()?;
    println!("{secret}");
    Ok(())
}

fn check_store(data_dir: &Path) -> anyhow::Result<()> {
    let store = Store::open(data_dir).context("opening the data directory")?;
    let report = ferrocrawl::store::check::run(&store)?;
    for (tree, count) in &report.trees {
        println!("{tree}: {count} records");
    }
    for failure in &report.failures {
        println!("UNREADABLE {} {}: {}", failure.tree, failure.key, failure.error);
    }
    for held in &report.quarantined {
        println!(
            "QUARANTINED {} {} at {}: {}",
            held.tree,
            hex::encode(&held.key),
            ferrocrawl::model::time::iso_ms(held.at_ms),
            held.error
        );
    }
    if report.is_clean() {
        println!("every record decodes; nothing in quarantine");
        Ok(())
    } else {
        bail!(
            "{} record(s) do not decode and {} are in quarantine",
            report.failures.len(),
            report.quarantined.len()
        )
    }
}

fn set_credit_plan(data_dir: &Path, team: &str, plan: &str) -> anyhow::Result<()> {
    let team = TeamId::parse(team).map_err(anyhow::Error::msg)?;
    let credits = match plan {
        "unlimited" => None,
        n => Some(n.parse::<u64>().context("--plan must be a whole number of credits or `unlimited`")?),
    };
    let store = Store::open(data_dir).context("opening the data directory")?;
    store.teams.set_credits(&team, credits)?;
    store.flush()?;
    eprintln!("credit plan of team `{team}` set to {plan} in {}", data_dir.display());
    Ok(())
}

fn parse_file(file: &Path, settings: &Settings) -> anyhow::Result<()> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let options = ferrocrawl::model::ScrapeOptions::default();
    let built = ferrocrawl::scrape::upload::convert_file(
        &name,
        None,
        &bytes,
        &options,
        &settings.documents.limits(),
    )?;
    if let Some(warning) = &built.document.warning {
        eprintln!("warning: {warning}");
    }
    println!("{}", built.document.markdown.unwrap_or_default());
    Ok(())
}

fn extract_file(file: &Path, url: &str, full: bool) -> anyhow::Result<()> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let url = url::Url::parse(url).context("--url must be an absolute URL")?;
    let html = ferrocrawl::scrape::engine::charset::decode(&bytes, None).into_owned();
    let options = ExtractOptions { only_main_content: !full, ..ExtractOptions::default() };
    let wanted = Wanted { markdown: true, ..Wanted::default() };
    let out = extract::extract(&html, &url, &options, wanted);
    println!("{}", out.markdown.unwrap_or_default());
    if out.placeholder && ferrocrawl::scrape::engine::js_shell::has_scripts(&bytes) {
        eprintln!(
            "note: this content looks like a placeholder that scripts fill in; a scrape renders it in the browser"
        );
    }
    Ok(())
}

/// Prints what `ferrocrawl search` found for `sources`: lines, or JSON.
fn print_found(found: &Found, sources: &[Source], json: bool) -> anyhow::Result<()> {
    if json {
        let mut data = serde_json::Map::new();
        for source in sources {
            let (name, list) = match source {
                Source::Web => ("web", serde_json::to_value(&found.web)?),
                Source::Images => ("images", serde_json::to_value(&found.images)?),
                Source::News => ("news", serde_json::to_value(&found.news)?),
            };
            data.insert(name.to_owned(), list);
        }
        println!("{}", serde_json::Value::Object(data));
        return Ok(());
    }
    let tagged = sources.len() > 1;
    let line = |source: &str, fields: &[&str]| {
        let fields = fields.join("\t");
        if tagged { println!("{source}\t{fields}") } else { println!("{fields}") }
    };
    for source in sources {
        match source {
            Source::Web => found.web.iter().for_each(|r| line("web", &[&r.url, &r.title])),
            Source::Images => {
                found.images.iter().for_each(|r| line("images", &[&r.image_url, &r.url, &r.title]))
            }
            Source::News => found
                .news
                .iter()
                .for_each(|r| line("news", &[&r.url, r.date.as_deref().unwrap_or("-"), &r.title])),
        }
    }
    Ok(())
}
