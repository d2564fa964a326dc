//! What the command line's commands other than the in-process jobs do: serving, keys,
//! team secrets and plans, checking the store, converting a local file, printing search
//! results, and the settings the commands start from.

use std::net::TcpListener;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::config::{LogSettings, Overrides, Settings};
use crate::extract::{self, ExtractOptions, Wanted};
use crate::model::TeamId;
use crate::search::{Found, Source};
use crate::store::Store;

/// The data directory of the config, or `data` when given.
pub(super) fn data_dir(config: Option<&Path>, data: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    Ok(Settings::load(config, &Overrides { data_dir: data, ..Overrides::default() })?.storage.data_dir)
}

/// Settings for an in-process job: a temporary data directory unless one is given, quiet
/// logs, and private targets when asked for.
pub(super) fn local_settings(
    config: Option<&Path>,
    data: Option<PathBuf>,
    allow_private: bool,
) -> anyhow::Result<(Settings, Option<TempData>)> {
    let temp = tempdir_if(data.is_none())?;
    let data_dir = data.or_else(|| temp.as_ref().map(|t| t.path().to_path_buf()));
    let mut settings = Settings::load(config, &Overrides { data_dir, ..Overrides::default() })?;
    settings.security.allow_private_targets |= allow_private;
    settings.storage.scratch = temp.is_some();
    crate::process::logging::init(&LogSettings { level: "warn".into(), ..settings.log.clone() });
    Ok((settings, temp))
}

/// The async runtime. Its blocking pool serves the store; a small pool (a few threads per
/// core) keeps blocking work from fanning out into hundreds of threads, each with its own
/// allocator arenas. Conversion has threads of its own (`scrape::convert_off_runtime`).
pub(super) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().max_blocking_threads(cores * 2).build()?)
}

pub(super) fn parse_url(text: &str) -> anyhow::Result<url::Url> {
    crate::api::target::parse_str(text).map_err(|reason| anyhow::anyhow!("the URL {reason}"))
}

/// A temporary data directory, removed when dropped.
fn tempdir_if(wanted: bool) -> anyhow::Result<Option<TempData>> {
    if !wanted {
        return Ok(None);
    }
    let path = std::env::temp_dir().join(format!("ferrocrawl-{}", crate::model::JobId::new()));
    std::fs::create_dir_all(&path)?;
    Ok(Some(TempData(path)))
}

/// A directory deleted on drop.
#[derive(Debug)]
pub(super) struct TempData(PathBuf);

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

pub(super) fn serve(settings: Settings) -> anyhow::Result<()> {
    let address = format!("{}:{}", settings.server.host, settings.server.port);
    let listener = TcpListener::bind(&address).with_context(|| format!("cannot listen on {address}"))?;
    runtime()?.block_on(crate::serve(listener, settings, shutdown_signal()))?;
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

pub(super) fn create_key(data_dir: &Path, team: &str, key: Option<&str>) -> anyhow::Result<()> {
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

pub(super) fn webhook_secret(
    settings: &Settings,
    team: &str,
    replacement: Option<&str>,
) -> anyhow::Result<()> {
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

pub(super) fn check_store(data_dir: &Path) -> anyhow::Result<()> {
    let store = Store::open(data_dir).context("opening the data directory")?;
    let report = crate::store::check::run(&store)?;
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
            crate::model::time::iso_ms(held.at_ms),
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

pub(super) fn set_credit_plan(data_dir: &Path, team: &str, plan: &str) -> anyhow::Result<()> {
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

pub(super) fn parse_file(file: &Path, settings: &Settings) -> anyhow::Result<()> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let options = crate::model::ScrapeOptions::default();
    let built = crate::scrape::upload::convert_file(
        &name,
        None,
        &bytes,
        &options,
        &crate::documents::Limits::of(&settings.documents),
    )?;
    if let Some(warning) = &built.document.warning {
        eprintln!("warning: {warning}");
    }
    println!("{}", built.document.markdown.unwrap_or_default());
    Ok(())
}

pub(super) fn extract_file(file: &Path, url: &str, full: bool) -> anyhow::Result<()> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let url = url::Url::parse(url).context("--url must be an absolute URL")?;
    let html = crate::scrape::engine::charset::decode(&bytes, None).into_owned();
    let options = ExtractOptions { only_main_content: !full, ..ExtractOptions::default() };
    let wanted = Wanted { markdown: true, ..Wanted::default() };
    let out = extract::extract(&html, &url, &options, wanted);
    println!("{}", out.markdown.unwrap_or_default());
    if out.placeholder && crate::scrape::engine::js_shell::has_scripts(&bytes) {
        eprintln!(
            "note: this content looks like a placeholder that scripts fill in; a scrape renders it in the browser"
        );
    }
    Ok(())
}

/// Prints what `ferrocrawl search` found for `sources`: lines, or JSON.
pub(super) fn print_found(found: &Found, sources: &[Source], json: bool) -> anyhow::Result<()> {
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
