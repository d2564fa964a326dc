//! Starting one Chromium process: finding the executable (Debian's `chromium-headless-shell`
//! or `chromium`, never a downloaded browser), the launch flags, a fresh user-data directory
//! that goes away with the process and its helpers ([`super::processes`]), and the task that
//! drives the DevTools connection. When that task ends the process is gone (crashed or
//! killed) and the instance reports itself dead.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::cdp::browser_protocol::browser::CloseParams;
use chromiumoxide::handler::viewport::Viewport;
use futures::StreamExt;
use tokio::task::JoinHandle;

use super::processes;

/// The packages that provide the browser, named in errors.
pub const PACKAGE_HINT: &str = "install the Debian package `chromium-headless-shell` or `chromium` \
     (apt-get install -y chromium-headless-shell chromium) or set browser.executable";

/// Executables looked for, in order: a path, or a name looked for on the PATH. Debian
/// builds both from its `chromium` source (its `chromium-headless-shell` package is what
/// `chromium --headless=old` was). The headless shell is Chromium without the
/// desktop browser's window, tab strip and toolbar, which the full browser lays out and
/// paints for every page even when headless (a third of its browser process's CPU per
/// page here), so it is preferred. Its package puts the binary in Chromium's library
/// folder, which is where it is looked for: the command on the PATH is a shell script that
/// runs it without `exec`, so the script would be the process the server watches and
/// signals, and the browser would outlive it.
const EXECUTABLES: &[&str] = &["/usr/lib/chromium/chromium-headless-shell", "chromium"];

/// Desktop viewport of rendered pages.
pub const DESKTOP_VIEWPORT: (u32, u32) = (1920, 1080);

/// Finds the Chromium executable: `configured` when set, else the first of [`EXECUTABLES`]
/// found.
pub fn find_executable(configured: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    find_among(configured, EXECUTABLES, &dirs)
}

/// [`find_executable`] with the candidates (paths, or names looked for in `dirs`) given.
fn find_among(configured: &str, candidates: &[&str], dirs: &[PathBuf]) -> Result<PathBuf, String> {
    let configured = configured.trim();
    if !configured.is_empty() {
        let path = PathBuf::from(configured);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("browser.executable {configured} does not exist; {PACKAGE_HINT}"))
        };
    }
    candidates
        .iter()
        .find_map(|name| match Path::new(name) {
            absolute if absolute.is_absolute() => absolute.is_file().then(|| absolute.to_owned()),
            _ => dirs.iter().map(|dir| dir.join(name)).find(|p| p.is_file()),
        })
        .ok_or_else(|| format!("no Chromium on this server: {PACKAGE_HINT}"))
}

/// One running Chromium.
#[derive(Debug)]
pub struct Instance {
    /// The DevTools client.
    pub browser: Browser,
    alive: Arc<AtomicBool>,
    died: tokio::sync::watch::Receiver<bool>,
    watchdog: JoinHandle<()>,
    /// Pages open in it now.
    pub tabs: AtomicUsize,
    handler: JoinHandle<()>,
    pid: Option<u32>,
    /// The process group the browser leads (with its helpers), when it leads one.
    group: Option<u32>,
    /// The profile directory and the temporary one, removed once no process of the
    /// browser runs (taken when the instance drops).
    dirs: Option<(tempfile::TempDir, Option<tempfile::TempDir>)>,
}

impl Instance {
    /// Starts Chromium at `executable` with a fresh profile directory under `profiles`.
    pub async fn launch(executable: &Path, timeout: Duration, profiles: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(profiles).map_err(|e| format!("creating {}: {e}", profiles.display()))?;
        let profile = tempfile::Builder::new()
            .prefix("profile-")
            .tempdir_in(profiles)
            .map_err(|e| format!("creating the browser profile directory: {e}"))?;
        let temp = short_temp_dir(profile.path())?;
        let temp_path = temp.as_ref().map_or(profile.path(), tempfile::TempDir::path).to_owned();
        let (width, height) = DESKTOP_VIEWPORT;
        let config = |program: &Path| {
            let mut builder = BrowserConfig::builder()
                .chrome_executable(program)
                .user_data_dir(profile.path())
                // Its temporary files too go in the profile directory, which goes away with
                // the process (and, after a kill, when the server starts again), never in
                // the system's temporary directory, unless that path is too long for them.
                .env("TMPDIR", temp_path.to_string_lossy())
                .launch_timeout(timeout)
                .request_timeout(Duration::from_secs(60))
                .viewport(Viewport { width, height, ..Viewport::default() })
                .window_size(width, height)
                .disable_default_args()
                // Certificates are checked unless a request's skipTlsVerification says not
                // to (set per page when the tab is presented).
                .respect_https_errors()
                // The builder adds the leading dashes itself.
                .args(FLAGS.iter().map(|flag| flag.trim_start_matches("--")));
            if running_as_root() {
                builder = builder.no_sandbox();
            }
            builder.build()
        };
        let launched = match guarded_launcher(executable, profiles) {
            Some(launcher) => match Browser::launch(config(&launcher)?).await {
                Err(chromiumoxide::error::CdpError::Io(e)) => {
                    tracing::warn!(error = %e, "starting Chromium through its launcher failed; starting it directly");
                    Browser::launch(config(executable)?).await
                }
                other => other,
            },
            None => Browser::launch(config(executable)?).await,
        };
        let (mut browser, mut handler) = launched.map_err(|e| format!("starting Chromium failed: {e}"))?;
        let pid = browser.get_mut_child().and_then(|c| c.inner.id());
        let group = pid.and_then(processes::own_group);
        let alive = Arc::new(AtomicBool::new(true));
        let (tell, died) = tokio::sync::watch::channel(false);
        let tell = Arc::new(tell);
        let (flag, told) = (Arc::clone(&alive), Arc::clone(&tell));
        let handler = tokio::spawn(async move {
            // Errors on single messages are not fatal; the stream ends when the connection does.
            while handler.next().await.is_some() {}
            flag.store(false, Ordering::SeqCst);
            told.send_replace(true);
        });
        // A killed process does not always close the connection at once: watch the process.
        let flag = Arc::clone(&alive);
        let watchdog = tokio::spawn(async move {
            loop {
                tokio::time::sleep(WATCH_EVERY).await;
                if pid.is_some_and(|pid| !processes::running(pid)) {
                    flag.store(false, Ordering::SeqCst);
                    tell.send_replace(true);
                    return;
                }
            }
        });
        Ok(Self {
            browser,
            alive,
            died,
            watchdog,
            tabs: AtomicUsize::new(0),
            handler,
            pid,
            group,
            dirs: Some((profile, temp)),
        })
    }

    /// Whether the process is still connected.
    pub fn is_alive(&self) -> bool {
        !self.handler.is_finished() && self.liveness().is_alive()
    }

    /// Resolves when the process has died or its connection closed.
    pub async fn died(&self) {
        self.liveness().died().await;
    }

    /// A handle that tells whether this process lives, for holders that must not keep the
    /// process itself (dropping the last [`Instance`] stops it).
    pub fn liveness(&self) -> Liveness {
        Liveness { alive: Arc::clone(&self.alive), died: self.died.clone(), pid: self.pid }
    }

    /// The browser-level DevTools WebSocket address.
    pub fn devtools_url(&self) -> &str {
        self.browser.websocket_address()
    }

    /// The process id.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Asks Chromium to exit and waits, up to `limit`, until it and its helpers have. A
    /// browser that exits by itself first stops its own helpers; one that is killed leaves
    /// them to notice, and its network service then writes the cache's index into the
    /// profile directory after the directory was removed (a server stopped so left a
    /// profile behind).
    pub async fn close(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        let asked = tokio::time::timeout_at(deadline, self.browser.execute(CloseParams::default())).await;
        if !matches!(asked, Ok(Ok(_))) {
            return;
        }
        // Nothing more is said over the connection, which the exiting browser resets
        // (logged as an error if still read).
        self.handler.abort();
        let runs =
            |i: &Self| i.pid.is_some_and(processes::running) || i.group.is_some_and(processes::group_running);
        while runs(self) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(CLOSE_POLL).await;
        }
    }
}

/// How often a closing browser is looked at.
const CLOSE_POLL: Duration = Duration::from_millis(20);

/// Whether one Chromium process still runs, without holding the process.
#[derive(Debug, Clone)]
pub struct Liveness {
    alive: Arc<AtomicBool>,
    died: tokio::sync::watch::Receiver<bool>,
    pid: Option<u32>,
}

impl Liveness {
    /// Whether the process runs and its connection is open.
    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst) && self.pid.is_none_or(processes::running)
    }

    /// Resolves when the process has died or its connection closed.
    pub async fn died(&self) {
        let mut died = self.died.clone();
        let _ = died.wait_for(|dead| *dead).await;
    }
}

impl Drop for Instance {
    /// Kills what is left of the browser (a closed one has nothing left; one that died
    /// may leave helpers) and removes its directories once none of its processes runs: at
    /// once when none does, else from a thread of its own that waits up to [`GROUP_WAIT`].
    fn drop(&mut self) {
        self.handler.abort();
        self.watchdog.abort();
        let dirs = self.dirs.take();
        match self.group.filter(|group| processes::group_running(*group)) {
            Some(group) => {
                processes::kill_group(group);
                let removal =
                    std::thread::Builder::new().name("ferrocrawl-profile".into()).spawn(move || {
                        if !processes::wait_group(group, GROUP_WAIT) {
                            tracing::warn!(
                                group,
                                "a killed browser's processes still run; its profile is removed anyway"
                            );
                        }
                        drop(dirs);
                    });
                if let Err(e) = removal {
                    tracing::warn!(error = %e, "the browser's profile is removed without waiting for its processes");
                }
            }
            None => drop(dirs),
        }
    }
}

/// How long a dropped browser's processes are waited for, once killed, before its profile
/// directory is removed anyway.
const GROUP_WAIT: Duration = Duration::from_secs(5);

/// Where `setpriv` (util-linux, on every Debian system) is looked for.
const SETPRIV: &str = "/usr/bin/setpriv";
/// Where `setsid` (util-linux too) is looked for.
const SETSID: &str = "/usr/bin/setsid";

/// A launcher script in `profiles` that starts `executable` with the parent-death signal set
/// to SIGKILL (`setpriv --pdeathsig KILL`, kept across the exec), so a browser never
/// outlives the server that started it, whatever ends the server (kill -9, a crash, the
/// out-of-memory killer), and as the leader of a process group of its own (`setsid`, which
/// runs in place: the launcher is no group's leader), so its helpers can be told from
/// other processes and killed with it. `None` where `setpriv` is missing or the script
/// cannot be written: the browser is then started directly and stopped only when the
/// server drops it.
fn guarded_launcher(executable: &Path, profiles: &Path) -> Option<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if !Path::new(SETPRIV).is_file() {
        return None;
    }
    let quoted = executable.to_str()?.replace('\'', "'\\''");
    let setsid = if Path::new(SETSID).is_file() { format!("{SETSID} ") } else { String::new() };
    let script = format!("#!/bin/sh\nexec {setsid}{SETPRIV} --pdeathsig KILL '{quoted}' \"$@\"\n");
    let path = profiles.join(format!("launch-{:016x}", fnv1a(script.as_bytes())));
    if path.is_file() {
        return Some(path);
    }
    // Written under a temporary name and renamed, so a launch never runs a half-written
    // script; the content names its own file, so a changed executable gets a new one.
    let staging = profiles.join(format!(".launch-{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o700)
        .open(&staging)
        .and_then(|mut file| file.write_all(script.as_bytes()))
        .and_then(|()| std::fs::rename(&staging, &path));
    match written {
        Ok(()) => Some(path),
        Err(e) => {
            tracing::warn!(error = %e, "writing the browser launcher failed; browsers are started directly");
            let _ = std::fs::remove_file(&staging);
            None
        }
    }
}

/// A stable 64-bit FNV-1a hash (names the launcher after its content).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// How often the process is checked.
const WATCH_EVERY: Duration = Duration::from_millis(250);

/// Longest temporary directory Chromium can work in: it makes its singleton socket at
/// `{TMPDIR}/.org.chromium.Chromium.XXXXXX/SingletonSocket`, and a Unix socket's path has at
/// most 107 bytes (a longer one stops Chromium at start).
const MAX_TEMP_PATH: usize = 60;
/// Prefix of the temporary directories made when a profile's path is too long.
const TEMP_PREFIX: &str = "ferrocrawl-chromium-";

/// A temporary directory for Chromium when `profile`'s path is too long to be one: in the
/// system's temporary directory (or `/tmp`), named after this process, removed with the
/// browser (or, after a kill, by [`remove_leftovers`] the next time one is made); `None`
/// when `profile` will do.
fn short_temp_dir(profile: &Path) -> Result<Option<tempfile::TempDir>, String> {
    if profile.as_os_str().len() <= MAX_TEMP_PATH {
        return Ok(None);
    }
    // Only a server whose profiles need them made such directories: it cleans up after
    // its killed predecessors the first time it needs one.
    static LEFTOVERS: std::sync::Once = std::sync::Once::new();
    LEFTOVERS.call_once(remove_leftovers);
    let fits = |base: &PathBuf| base.as_os_str().len() + TEMP_PREFIX.len() + 20 <= MAX_TEMP_PATH;
    let base = temp_bases()
        .into_iter()
        .find(fits)
        .ok_or("no temporary directory with a path short enough for Chromium")?;
    tempfile::Builder::new()
        .prefix(&format!("{TEMP_PREFIX}{}-", std::process::id()))
        .tempdir_in(base)
        .map(Some)
        .map_err(|e| format!("creating the browser's temporary directory: {e}"))
}

/// Where [`short_temp_dir`] makes its directories: the system's temporary directory, else
/// `/tmp` (when that one's path is too long).
fn temp_bases() -> Vec<PathBuf> {
    let mut bases = vec![std::env::temp_dir()];
    if bases[0] != Path::new("/tmp") {
        bases.push(PathBuf::from("/tmp"));
    }
    bases
}

/// Removes the temporary directories [`short_temp_dir`] made for processes that are gone.
fn remove_leftovers() {
    for base in temp_bases() {
        let Ok(entries) = std::fs::read_dir(&base) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(TEMP_PREFIX)) else { continue };
            let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
            if pid.is_some_and(|pid| !processes::running(pid)) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// Launch flags: headless, no GPU, no background networking, component updates, sync or
/// first-run UI; the sandbox is added back unless running as root.
const FLAGS: &[&str] = &[
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-breakpad",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
    "--disable-hang-monitor",
    "--disable-ipc-flooding-protection",
    "--disable-dev-shm-usage",
    // No spare renderer: Chromium keeps one ready for the context of the last navigation and
    // throws it away when another context navigates, so tabs of many contexts (warm tabs
    // included) made it start and kill a renderer process per page.
    "--disable-features=Translate,MediaRouter,OptimizationHints,InterestFeedContentSuggestions,SpareRendererForSitePerProcess",
    "--metrics-recording-only",
    "--password-store=basic",
    "--use-mock-keychain",
    "--hide-scrollbars",
    "--mute-audio",
    "--force-color-profile=srgb",
    // Every context gets our address-checking proxy; nothing resolves names directly.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
];

fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configured_browser_that_is_missing_is_named_with_the_packages() {
        let error = find_executable(" /no/such/chromium ").expect_err("missing");
        assert!(error.contains("/no/such/chromium"), "{error}");
        assert!(error.contains("apt-get install -y chromium-headless-shell chromium"), "{error}");
        let shell = std::env::current_exe().expect("this test's executable");
        assert_eq!(
            find_executable(shell.to_str().expect("utf8")),
            Ok(shell),
            "a configured file is used as it is"
        );
    }

    #[test]
    fn the_headless_shell_is_found_before_the_full_browser() {
        let root = tempfile::tempdir().expect("tempdir");
        let (lib, bin) = (root.path().join("lib"), root.path().join("bin"));
        std::fs::create_dir_all(&lib).expect("lib");
        std::fs::create_dir_all(&bin).expect("bin");
        let shell = lib.join("chromium-headless-shell");
        let shell_name = shell.to_str().expect("utf8").to_owned();
        let candidates = [shell_name.as_str(), "chromium"];
        let dirs = [root.path().join("elsewhere"), bin.clone()];
        let none = find_among("", &candidates, &dirs).expect_err("nothing installed");
        assert!(none.contains("no Chromium"), "{none}");
        std::fs::write(bin.join("chromium"), "").expect("chromium");
        assert_eq!(find_among("", &candidates, &dirs), Ok(bin.join("chromium")), "the full browser alone");
        std::fs::write(&shell, "").expect("shell");
        assert_eq!(find_among("", &candidates, &dirs), Ok(shell), "the shell before the full browser");
        assert_eq!(
            find_among(bin.join("chromium").to_str().expect("utf8"), &candidates, &dirs),
            Ok(bin.join("chromium")),
            "a configured browser before both"
        );
    }
}
