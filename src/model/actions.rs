//! Browser work a scrape asks for, validated: page actions (contract §4.4), the screenshot
//! format's settings and the persistent profile. Plain data, persisted with jobs.

use serde::{Deserialize, Serialize};

/// Largest screenshot viewport accepted.
pub const MAX_VIEWPORT: (u32, u32) = (7680, 4320);

/// How a screenshot is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ScreenshotSpec {
    /// The whole scrollable page instead of the viewport.
    pub full_page: bool,
    /// JPEG quality 1..=100; PNG when unset.
    pub quality: Option<u8>,
    /// Viewport (width, height) to capture at; the page's own otherwise.
    pub viewport: Option<(u32, u32)>,
}

/// Paper sizes of the `pdf` action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum PaperFormat {
    /// 841 × 1189 mm
    A0,
    /// 594 × 841 mm
    A1,
    /// 420 × 594 mm
    A2,
    /// 297 × 420 mm
    A3,
    /// 210 × 297 mm
    A4,
    /// 148 × 210 mm
    A5,
    /// 105 × 148 mm
    A6,
    /// 8.5 × 11 in
    #[default]
    Letter,
    /// 8.5 × 14 in
    Legal,
    /// 11 × 17 in
    Tabloid,
    /// 17 × 11 in
    Ledger,
}

impl PaperFormat {
    /// Every format with its wire name.
    pub const ALL: [(&'static str, Self); 11] = [
        ("A0", Self::A0),
        ("A1", Self::A1),
        ("A2", Self::A2),
        ("A3", Self::A3),
        ("A4", Self::A4),
        ("A5", Self::A5),
        ("A6", Self::A6),
        ("Letter", Self::Letter),
        ("Legal", Self::Legal),
        ("Tabloid", Self::Tabloid),
        ("Ledger", Self::Ledger),
    ];

    /// Paper width and height in inches (portrait).
    pub fn inches(self) -> (f64, f64) {
        const MM: f64 = 25.4;
        match self {
            Self::A0 => (841.0 / MM, 1189.0 / MM),
            Self::A1 => (594.0 / MM, 841.0 / MM),
            Self::A2 => (420.0 / MM, 594.0 / MM),
            Self::A3 => (297.0 / MM, 420.0 / MM),
            Self::A4 => (210.0 / MM, 297.0 / MM),
            Self::A5 => (148.0 / MM, 210.0 / MM),
            Self::A6 => (105.0 / MM, 148.0 / MM),
            Self::Letter => (8.5, 11.0),
            Self::Legal => (8.5, 14.0),
            Self::Tabloid => (11.0, 17.0),
            Self::Ledger => (17.0, 11.0),
        }
    }
}

/// One page action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    /// Pause for a number of milliseconds.
    Sleep {
        /// Milliseconds.
        ms: u64,
    },
    /// Wait until an element matching the selector exists.
    WaitFor {
        /// CSS selector.
        selector: String,
    },
    /// Click the first (or every) element matching the selector.
    Click {
        /// CSS selector.
        selector: String,
        /// Click every match.
        all: bool,
    },
    /// Type text into the focused element.
    Write {
        /// The text.
        text: String,
    },
    /// Press a key (`Enter`, `Tab`, `a`, ...).
    Press {
        /// Key name.
        key: String,
    },
    /// Scroll the page (or an element) by one screen.
    Scroll {
        /// Upwards instead of down.
        up: bool,
        /// Element to scroll instead of the page.
        selector: Option<String>,
    },
    /// Capture the page into `actions.screenshots`.
    Screenshot(ScreenshotSpec),
    /// Snapshot the current HTML into `actions.scrapes`.
    Scrape,
    /// Run a script; its value goes to `actions.javascriptReturns`.
    ExecuteJavascript {
        /// The script (its completion value is returned; promises are awaited).
        script: String,
    },
    /// Print the page to PDF into `actions.pdfs`.
    Pdf {
        /// Paper size.
        format: PaperFormat,
        /// Landscape orientation.
        landscape: bool,
        /// Scale in hundredths (100 = 1.0).
        scale_pct: u16,
    },
}

impl Action {
    /// The wire name of the action's type, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Sleep { .. } | Self::WaitFor { .. } => "wait",
            Self::Click { .. } => "click",
            Self::Write { .. } => "write",
            Self::Press { .. } => "press",
            Self::Scroll { .. } => "scroll",
            Self::Screenshot(_) => "screenshot",
            Self::Scrape => "scrape",
            Self::ExecuteJavascript { .. } => "executeJavascript",
            Self::Pdf { .. } => "pdf",
        }
    }
}

/// A persistent browser profile (cookies and local storage) of the team.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Profile {
    /// Profile name, 1..=128 characters.
    pub name: String,
    /// Save the page's cookies and storage back when done.
    pub save_changes: bool,
}
