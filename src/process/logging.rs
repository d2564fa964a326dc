//! Logging set-up: tracing to stderr, filtered by `RUST_LOG` or the configured level, as
//! text or JSON lines.

use tracing_subscriber::EnvFilter;

use crate::config::{LogFormat, LogSettings};

/// Installs the global subscriber (once; later calls are ignored).
pub fn init(log: &LogSettings) {
    // chromiumoxide warns about every DevTools event newer than its protocol tables (harmless
    // with a current Chromium); its errors still show.
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("{},chromiumoxide=error", log.level)));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    let _ = match log.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
