//! The `branding` format: the page's brand identity (colours, fonts, typography, spacing,
//! buttons and inputs, logo, favicon, Open Graph image) read from computed styles by a
//! script run in the rendered page (`branding.js`).

use chromiumoxide::Page;

use super::BrowserError;

/// The script; its completion value is the branding object.
const SCRIPT: &str = include_str!("branding.js");

/// Computes the branding of the page loaded in `page`.
pub async fn compute(page: &Page) -> Result<serde_json::Value, BrowserError> {
    let value = page
        .evaluate(SCRIPT)
        .await
        .map_err(|e| BrowserError::Failed(format!("computing the branding failed: {e}")))?;
    Ok(value.into_value().unwrap_or(serde_json::Value::Null))
}
