//! The live view of a session: a page of ours that shows the tab's screen, streamed (see
//! `screencast`) or refreshed from frames captured on request, and (with the interactive token) forwards clicks, keys and
//! typed text to the tab. The token in the URL is the credential; it dies with the session.
//! The session's actor runs these functions on the page it owns (see `session.rs`); nothing
//! else drives a session's page.

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchMouseEventParams, DispatchMouseEventType, InsertTextParams, MouseButton,
};
use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
use chromiumoxide::page::ScreenshotParams;
use serde::Deserialize;

use crate::scrape::engine::browser::actions;

/// JPEG quality of live frames.
const FRAME_QUALITY: i64 = 60;

/// Input from the interactive view. Positions are fractions of the frame (0..1).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Input {
    /// A left click.
    Click {
        /// Horizontal position.
        x: f64,
        /// Vertical position.
        y: f64,
    },
    /// A key press (`Enter`, `a`, `ArrowDown`, ...).
    Key {
        /// The key's name.
        key: String,
    },
    /// Typed text.
    Text {
        /// The text.
        text: String,
    },
}

/// Why input could not be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputError {
    /// The input itself is wrong (a position off the frame, an unknown key): the caller's.
    Invalid(String),
    /// The browser did not take it.
    Browser(String),
}

impl Input {
    /// Checks what can be checked without the page.
    pub fn validate(&self) -> Result<(), InputError> {
        match self {
            Self::Click { x, y } if !(0.0..=1.0).contains(x) || !(0.0..=1.0).contains(y) => {
                Err(InputError::Invalid("`x` and `y` are fractions of the frame, from 0 to 1".into()))
            }
            _ => Ok(()),
        }
    }
}

/// Captures the tab's current screen as JPEG.
pub async fn frame(page: &Page) -> Result<Vec<u8>, String> {
    let params =
        ScreenshotParams::builder().format(CaptureScreenshotFormat::Jpeg).quality(FRAME_QUALITY).build();
    page.screenshot(params).await.map_err(|e| e.to_string())
}

/// Sends `input` to the tab.
pub async fn forward(page: &Page, input: &Input) -> Result<(), InputError> {
    input.validate()?;
    let browser = |e: &dyn std::fmt::Display| InputError::Browser(e.to_string());
    match input {
        Input::Click { x, y } => {
            let size = page
                .evaluate("[window.innerWidth, window.innerHeight]")
                .await
                .ok()
                .and_then(|v| v.into_value::<(f64, f64)>().ok())
                .ok_or_else(|| InputError::Browser("the page's size is unknown".into()))?;
            let (px, py) = (x * size.0, y * size.1);
            for kind in [DispatchMouseEventType::MousePressed, DispatchMouseEventType::MouseReleased] {
                let event = DispatchMouseEventParams::builder()
                    .r#type(kind)
                    .x(px)
                    .y(py)
                    .button(MouseButton::Left)
                    .click_count(1)
                    .build()
                    .map_err(|e| browser(&e))?;
                page.execute(event).await.map_err(|e| browser(&e))?;
            }
            Ok(())
        }
        Input::Key { key } => match actions::press(page, key).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(InputError::Invalid(format!("Invalid value for `key`: unknown key `{key}`"))),
            Err(e) => Err(browser(&e)),
        },
        Input::Text { text } => {
            page.execute(InsertTextParams::new(text.clone())).await.map_err(|e| browser(&e))?;
            Ok(())
        }
    }
}

/// The live-view page for `token`; `stream`: it shows the screen's stream (frames asked
/// one by one when the stream is refused or breaks), else it asks for frames.
pub fn page_html(token: &str, interactive: bool, stream: bool) -> String {
    let mode = if interactive { "interactive" } else { "view" };
    LIVE_HTML
        .replace("{{TOKEN}}", token)
        .replace("{{MODE}}", mode)
        .replace("{{STREAM}}", if stream { "true" } else { "false" })
}

const LIVE_HTML: &str = r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>ferrocrawl live view</title>
<style>
body { margin: 0; background: #111; color: #ddd; font: 14px system-ui, sans-serif; }
header { padding: 6px 10px; display: flex; gap: 12px; align-items: center; }
#screen { display: block; max-width: 100vw; max-height: calc(100vh - 34px); margin: 0 auto; }
.interactive #screen { cursor: crosshair; }
</style></head>
<body class="{{MODE}}">
<header><strong>Live view</strong><span id="state">connecting…</span></header>
<img id="screen" alt="the session's screen" tabindex="0">
<script>
const base = location.pathname.replace(/\/$/, '');
const screen = document.getElementById('screen');
const state = document.getElementById('state');
let frames = 0;
let polling = false;
function shown() {
  frames += 1;
  state.textContent = 'live · frame ' + frames;
  screen.dataset.frames = String(frames);
}
// The stream starts after the page's load event, which an endless image would hold back.
function stream() {
  screen.onload = shown;
  screen.onerror = () => { screen.onload = null; screen.onerror = null; if (!polling) { polling = true; next(); } };
  screen.src = base + '/stream';
}
async function next() {
  try {
    const r = await fetch(base + '/frame', { cache: 'no-store' });
    if (r.status === 404) { state.textContent = 'session ended'; return; }
    if (r.ok) {
      const url = URL.createObjectURL(await r.blob());
      const old = screen.src;
      screen.src = url;
      if (old) URL.revokeObjectURL(old);
      shown();
    }
  } catch (e) { state.textContent = 'reconnecting…'; }
  setTimeout(next, 500);
}
function send(input) {
  fetch(base + '/input', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(input) });
}
if (document.body.className === 'interactive') {
  screen.addEventListener('click', (e) => {
    const box = screen.getBoundingClientRect();
    send({ type: 'click', x: (e.clientX - box.left) / box.width, y: (e.clientY - box.top) / box.height });
    screen.focus();
  });
  screen.addEventListener('keydown', (e) => {
    e.preventDefault();
    if (e.key.length === 1) send({ type: 'text', text: e.key }); else send({ type: 'key', key: e.key });
  });
}
if ({{STREAM}}) { window.addEventListener('load', stream); } else { polling = true; next(); }
</script></body></html>"#;
