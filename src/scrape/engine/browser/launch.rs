//! Starting one Chromium process: finding the executable (the system's `chromium`, never a
//! downloaded browser), the launch flags, a fresh user-data directory that goes away with
//! the process, and the task that drives the DevTools connection. When that task ends the
//! process is gone (crashed or killed) and the instance reports itself dead.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::handler::viewport::Viewport;
use futures::StreamExt;
use tokio::task::JoinHandle;

/// The package that provides the browser, named in errors.
pub const PACKAGE_HINT: &str =
    "install the Debian package `chromium` (apt-get install -y chromium) or set browser.executable";

/// Desktop viewport of rendered pages.
pub const DESKTOP_VIEWPORT: (u32, u32) = (1920, 1080);

/// Finds the Chromium executable: `configured` when set, else `chromium` on the PATH.
pub fn find_executable(configured: &str) -> Result<PathBuf, String> {
    let configured = configured.trim();
    if !configured.is_empty() {
        let path = PathBuf::from(configured);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("browser.executable {configured} does not exist; {PACKAGE_HINT}"))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("chromium"))
        .find(|p| p.is_file())
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
    _profile: tempfile::TempDir,
}

impl Instance {
    /// Starts Chromium at `executable` with a fresh profile directory under `profiles`.
    pub async fn launch(executable: &Path, timeout: Duration, profiles: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(profiles).map_err(|e| format!("creating {}: {e}", profiles.display()))?;
        let profile = tempfile::Builder::new()
            .prefix("profile-")
            .tempdir_in(profiles)
            .map_err(|e| format!("creating the browser profile directory: {e}"))?;
        let (width, height) = DESKTOP_VIEWPORT;
        let mut builder = BrowserConfig::builder()
            .chrome_executable(executable)
            .user_data_dir(profile.path())
            .launch_timeout(timeout)
            .request_timeout(Duration::from_secs(60))
            .viewport(Viewport { width, height, ..Viewport::default() })
            .window_size(width, height)
            .disable_default_args()
            // The builder adds the leading dashes itself.
            .args(FLAGS.iter().map(|flag| flag.trim_start_matches("--")));
        if running_as_root() {
            builder = builder.no_sandbox();
        }
        let config = builder.build()?;
        let (mut browser, mut handler) =
            Browser::launch(config).await.map_err(|e| format!("starting Chromium failed: {e}"))?;
        let pid = browser.get_mut_child().and_then(|c| c.inner.id());
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
                if pid.is_some_and(|pid| !process_running(pid)) {
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
            _profile: profile,
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
}

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
        self.alive.load(Ordering::SeqCst) && self.pid.is_none_or(process_running)
    }

    /// Resolves when the process has died or its connection closed.
    pub async fn died(&self) {
        let mut died = self.died.clone();
        let _ = died.wait_for(|dead| *dead).await;
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.handler.abort();
        self.watchdog.abort();
    }
}

/// How often the process is checked.
const WATCH_EVERY: Duration = Duration::from_millis(250);

/// Whether process `pid` runs (a killed child that was not reaped yet is a zombie: not running).
fn process_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => {
            stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
        }
        Err(_) => false,
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
    "--disable-features=Translate,MediaRouter,OptimizationHints,InterestFeedContentSuggestions",
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
