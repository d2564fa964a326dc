//! Page actions (contract §4.4) run in order in a live tab: waits, clicks, typing, key
//! presses, scrolling, screenshots, HTML snapshots, scripts and PDFs. A failing action stops
//! the scrape with an error that names its index and type.

use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, InsertTextParams,
};
use chromiumoxide::cdp::browser_protocol::page::{CaptureScreenshotFormat, PrintToPdfParams};
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use chromiumoxide::page::ScreenshotParams;
use tokio::time::Instant;

use super::BrowserError;
use super::render::{NetworkWatch, RawActionResults, Shot, settle};
use super::tab::Tab;
use crate::model::Action;
use crate::model::actions::ScreenshotSpec;
use crate::model::document::{PageSnapshot, ScriptValue};

/// Longest settle after an action that may have started loading something.
const SETTLE_AFTER_ACTION: Duration = Duration::from_secs(2);
/// Poll interval of selector waits.
const POLL: Duration = Duration::from_millis(50);

/// Runs `actions` in order.
pub async fn run(
    tab: &Tab,
    actions: &[Action],
    smart_wait_max: Duration,
    deadline: Instant,
) -> Result<RawActionResults, BrowserError> {
    let mut out = RawActionResults::default();
    for (index, action) in actions.iter().enumerate() {
        let fail = |message: String| BrowserError::Action { index, kind: action.kind(), message };
        let settle_max = smart_wait_max.min(SETTLE_AFTER_ACTION);
        match run_one(tab, action, &mut out, settle_max, deadline).await {
            Ok(()) => {}
            Err(Step::Failed(message)) => return Err(fail(message)),
            Err(Step::Browser(e)) => return Err(e),
        }
    }
    Ok(out)
}

/// Why one action stopped.
enum Step {
    /// The action could not do what it asked (reported with its index).
    Failed(String),
    /// The browser itself failed.
    Browser(BrowserError),
}

impl From<chromiumoxide::error::CdpError> for Step {
    fn from(e: chromiumoxide::error::CdpError) -> Self {
        Self::Browser(e.into())
    }
}

impl From<BrowserError> for Step {
    fn from(e: BrowserError) -> Self {
        Self::Browser(e)
    }
}

async fn run_one(
    tab: &Tab,
    action: &Action,
    out: &mut RawActionResults,
    settle_max: Duration,
    deadline: Instant,
) -> Result<(), Step> {
    let page = tab.page();
    match action {
        Action::Sleep { ms } => {
            tokio::time::sleep_until((Instant::now() + Duration::from_millis(*ms)).min(deadline)).await;
        }
        Action::WaitFor { selector } => {
            let probe = format!("document.querySelector({}) !== null", js_string(selector));
            loop {
                match page.evaluate(probe.as_str()).await {
                    Ok(v) if v.value().and_then(serde_json::Value::as_bool).unwrap_or(false) => break,
                    Err(chromiumoxide::error::CdpError::JavascriptException(e)) => {
                        return Err(Step::Failed(format!(
                            "`{selector}` is not a valid selector: {}",
                            e.text
                        )));
                    }
                    _ => {}
                }
                if Instant::now() + POLL >= deadline {
                    return Err(Step::Failed(format!("no element matched `{selector}` before the timeout")));
                }
                tokio::time::sleep(POLL).await;
            }
        }
        Action::Click { selector, all } => {
            let elements = page
                .find_elements(selector.as_str())
                .await
                .map_err(|e| Step::Failed(format!("`{selector}` is not a valid selector: {e}")))?;
            if elements.is_empty() {
                return Err(Step::Failed(format!("no element matches `{selector}`")));
            }
            let network = NetworkWatch::start(page).await?;
            let targets = if *all { elements.len() } else { 1 };
            let mut clicked = 0;
            for element in elements.iter().take(targets) {
                if element.click().await.is_ok() {
                    clicked += 1;
                }
            }
            if clicked == 0 {
                return Err(Step::Failed(format!(
                    "the element matching `{selector}` cannot be clicked (hidden?)"
                )));
            }
            tokio::time::sleep(POLL).await;
            settle(tab, &network, settle_max, deadline).await;
        }
        Action::Write { text } => {
            page.execute(InsertTextParams::new(text.clone())).await?;
        }
        Action::Press { key } => {
            let network = NetworkWatch::start(page).await?;
            if !press(page, key).await? {
                return Err(Step::Failed(format!("unknown key `{key}`")));
            }
            tokio::time::sleep(POLL).await;
            settle(tab, &network, settle_max, deadline).await;
        }
        Action::Scroll { up, selector } => {
            let sign = if *up { "-" } else { "" };
            let script = match selector {
                Some(s) => format!(
                    "(() => {{ const e = document.querySelector({}); if (!e) return false; \
                     e.scrollBy(0, {sign}(e.clientHeight || window.innerHeight)); return true; }})()",
                    js_string(s)
                ),
                None => format!("(() => {{ window.scrollBy(0, {sign}window.innerHeight); return true; }})()"),
            };
            let found: bool = match page.evaluate(script.as_str()).await {
                Ok(v) => v.into_value().unwrap_or(false),
                Err(chromiumoxide::error::CdpError::JavascriptException(e)) => {
                    return Err(Step::Failed(format!("invalid selector: {}", e.text)));
                }
                Err(e) => return Err(e.into()),
            };
            if !found {
                return Err(Step::Failed(format!(
                    "no element matches `{}`",
                    selector.as_deref().unwrap_or("")
                )));
            }
            tokio::time::sleep(POLL).await;
        }
        Action::Screenshot(spec) => out.screenshots.push(screenshot(page, *spec).await?),
        Action::Scrape => {
            let url = page.url().await?.unwrap_or_default();
            out.scrapes.push(PageSnapshot { url, html: page.content().await? });
        }
        Action::ExecuteJavascript { script } => {
            out.javascript_returns.push(evaluate(page, script).await.map_err(Step::Failed)?);
        }
        Action::Pdf { format, landscape, scale_pct } => {
            let (width, height) = format.inches();
            let params = PrintToPdfParams {
                landscape: Some(*landscape),
                print_background: Some(true),
                scale: Some(f64::from(*scale_pct) / 100.0),
                paper_width: Some(width),
                paper_height: Some(height),
                ..Default::default()
            };
            out.pdfs.push(page.pdf(params).await?);
        }
    }
    Ok(())
}

/// Captures the page as `spec` asks.
pub async fn screenshot(page: &Page, spec: ScreenshotSpec) -> Result<Shot, BrowserError> {
    if let Some((width, height)) = spec.viewport {
        use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
        page.execute(SetDeviceMetricsOverrideParams::new(i64::from(width), i64::from(height), 1.0, false))
            .await?;
    }
    let (format, mime) = match spec.quality {
        Some(_) => (CaptureScreenshotFormat::Jpeg, "image/jpeg"),
        None => (CaptureScreenshotFormat::Png, "image/png"),
    };
    let mut params = ScreenshotParams::builder().format(format).full_page(spec.full_page);
    if let Some(q) = spec.quality {
        params = params.quality(i64::from(q));
    }
    let bytes = page.screenshot(params.build()).await?;
    Ok(Shot { bytes, mime })
}

/// Runs `script` and returns its completion value. A script with a top-level `return` runs
/// as the body of an async function.
pub async fn evaluate(page: &Page, script: &str) -> Result<ScriptValue, String> {
    let as_expression = EvaluateParams {
        repl_mode: Some(true),
        await_promise: Some(true),
        return_by_value: Some(true),
        ..EvaluateParams::new(script)
    };
    let reply = match page.evaluate_expression(as_expression).await {
        Err(chromiumoxide::error::CdpError::JavascriptException(e)) if is_return_outside_function(&e) => {
            let wrapped = format!("(async () => {{\n{script}\n}})()");
            page.evaluate_expression(EvaluateParams {
                await_promise: Some(true),
                return_by_value: Some(true),
                ..EvaluateParams::new(wrapped)
            })
            .await
        }
        other => other,
    };
    match reply {
        Ok(result) => {
            let object = result.object();
            let kind = serde_json::to_value(&object.r#type)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_else(|| "undefined".into());
            Ok(ScriptValue { kind, value: object.value.clone().unwrap_or(serde_json::Value::Null) })
        }
        Err(chromiumoxide::error::CdpError::JavascriptException(e)) => Err(exception_text(&e)),
        Err(e) => Err(e.to_string()),
    }
}

fn is_return_outside_function(e: &chromiumoxide::cdp::js_protocol::runtime::ExceptionDetails) -> bool {
    exception_text(e).contains("Illegal return")
}

/// The message of a thrown exception (`Error: message`), falling back to the summary.
pub fn exception_text(e: &chromiumoxide::cdp::js_protocol::runtime::ExceptionDetails) -> String {
    e.exception
        .as_ref()
        .and_then(|x| x.description.clone())
        .map(|d| d.lines().next().unwrap_or_default().to_owned())
        .unwrap_or_else(|| e.text.clone())
}

/// Presses and releases `key` in the focused element; `false` when the key is unknown.
pub async fn press(page: &Page, key: &str) -> Result<bool, BrowserError> {
    let Some(def) = chromiumoxide::keys::get_key_definition(key) else {
        return Ok(false);
    };
    let text = def.text.or((def.key.chars().count() == 1).then_some(def.key));
    let down = DispatchKeyEventParams {
        r#type: if text.is_some() { DispatchKeyEventType::KeyDown } else { DispatchKeyEventType::RawKeyDown },
        key: Some(def.key.to_owned()),
        code: Some(def.code.to_owned()),
        text: text.map(str::to_owned),
        windows_virtual_key_code: Some(def.key_code),
        native_virtual_key_code: Some(def.key_code),
        ..DispatchKeyEventParams::new(DispatchKeyEventType::KeyDown)
    };
    let up = DispatchKeyEventParams { r#type: DispatchKeyEventType::KeyUp, text: None, ..down.clone() };
    page.execute(down).await?;
    page.execute(up).await?;
    Ok(true)
}

/// `s` as a JavaScript string literal.
pub fn js_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}
