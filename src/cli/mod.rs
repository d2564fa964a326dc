//! The `ferrocrawl` command line: its commands (clap), and what each runs. `main.rs` only
//! sets the allocator and calls [`main`]; the server is [`crate::serve`], the in-process
//! crawl, map and search are [`local`], the other commands are [`commands`].

mod commands;
pub mod local;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use clap::{Parser, Subcommand};

use crate::config::{Overrides, Settings};
use crate::process::sandbox::Limits;
use crate::search::Source;
use commands::{
    check_store, create_key, data_dir, extract_file, local_settings, parse_file, parse_url, print_found,
    runtime, serve, set_credit_plan, webhook_secret,
};
use local::CrawlCommand;

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
    /// Inside the sandbox of interact code, started by the server: relays the session's
    /// DevTools port and runs the program within the limits.
    #[command(hide = true)]
    SandboxExec {
        /// CPU seconds.
        #[arg(long)]
        cpu: u64,
        /// Address space, bytes.
        #[arg(long)]
        memory: u64,
        /// Processes at once.
        #[arg(long)]
        processes: u64,
        /// Largest file, bytes.
        #[arg(long)]
        file_size: u64,
        /// Open files.
        #[arg(long)]
        open_files: u64,
        /// The program and its arguments.
        #[arg(last = true, required = true)]
        program: Vec<String>,
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

/// Runs the command line of this process; its exit code.
pub fn main() -> ExitCode {
    crate::process::alloc::tune_memory();
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
            crate::process::logging::init(&settings.log);
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
            let found = runtime()?.block_on(local::search(&settings, &query, limit, &wanted))?;
            print_found(&found, &wanted, json)
        }
        Command::Index { command: IndexCommand::Rebuild { data } } => {
            let settings =
                Settings::load(cli.config.as_deref(), &Overrides { data_dir: data, ..Overrides::default() })?;
            let pages = local::rebuild_index(&settings)?;
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
                (None, true) => Some(crate::store::teams::new_webhook_secret()),
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
            let summary = runtime()?.block_on(local::crawl(settings, command))?;
            println!(
                "pages={} failed={} robots_blocked={} seconds={:.2}",
                summary.pages,
                summary.failed,
                summary.blocked,
                summary.elapsed.as_secs_f64()
            );
            Ok(())
        }
        Command::SandboxExec { cpu, memory, processes, file_size, open_files, program } => {
            let limits = Limits { cpu_secs: cpu, memory, processes, file_size, open_files };
            std::process::exit(crate::process::sandbox::run_inside(limits, &program))
        }
        Command::Map { url, limit, search, allow_private } => {
            let (settings, _temp) = local_settings(cli.config.as_deref(), None, allow_private)?;
            let url = parse_url(&url)?;
            for link in runtime()?.block_on(local::map(settings, &url, limit, search))? {
                println!("{}", link.url);
            }
            Ok(())
        }
    }
}
