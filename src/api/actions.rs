//! Validation of browser requests on the wire: the `actions` list (contract §4.4), the
//! `screenshot` settings shared by the format and the action, and `profile`. Every error
//! names the field, e.g. `actions[2].selector`.

use serde_json::{Map, Value, json};

use super::error::ApiError;
use crate::extract;
use crate::model::actions::MAX_VIEWPORT;
use crate::model::{Action, PaperFormat, Profile, ScreenshotSpec};

/// Most actions per request.
pub const MAX_ACTIONS: usize = 50;
/// Budget of `waitFor` plus every wait action (ms), a selector wait counting one second.
pub const MAX_TOTAL_WAIT_MS: u64 = 60_000;
/// Longest script of an `executeJavascript` action (characters).
const MAX_SCRIPT_CHARS: usize = 100_000;

/// Parses and checks `actions`; `wait_for_ms` counts against the wait budget.
pub fn parse(list: Vec<Value>, wait_for_ms: u64, prefix: &str) -> Result<Vec<Action>, ApiError> {
    if list.len() > MAX_ACTIONS {
        return Err(ApiError::bad_request(format!(
            "`{prefix}actions` has {} entries; at most {MAX_ACTIONS} are allowed",
            list.len()
        )));
    }
    let mut waited = wait_for_ms;
    let mut actions = Vec::with_capacity(list.len());
    for (i, entry) in list.into_iter().enumerate() {
        let at = format!("{prefix}actions[{i}]");
        let Value::Object(object) = entry else {
            return Err(ApiError::bad_request(format!("`{at}` must be an object with a `type`")));
        };
        let action = action(object, &at)?;
        waited += match &action {
            Action::Sleep { ms } => *ms,
            Action::WaitFor { .. } => 1_000,
            _ => 0,
        };
        actions.push(action);
    }
    if waited > MAX_TOTAL_WAIT_MS {
        return Err(ApiError::bad_request(format!(
            "`{prefix}actions`: waitFor plus all wait actions come to {waited} ms (a selector wait counts 1000); at most {MAX_TOTAL_WAIT_MS} ms are allowed"
        )));
    }
    Ok(actions)
}

/// The fields of one action object.
struct Fields<'a> {
    object: Map<String, Value>,
    at: &'a str,
}

impl Fields<'_> {
    fn string(&mut self, name: &str) -> Result<Option<String>, ApiError> {
        match self.object.remove(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(ApiError::bad_request(format!("`{}.{name}` must be a string", self.at))),
        }
    }

    fn required(&mut self, name: &str) -> Result<String, ApiError> {
        self.string(name)?.filter(|s| !s.is_empty()).ok_or_else(|| {
            ApiError::bad_request(format!("`{}.{name}` is required (a non-empty string)", self.at))
        })
    }

    fn selector(&mut self, name: &str, required: bool) -> Result<Option<String>, ApiError> {
        let value = if required { Some(self.required(name)?) } else { self.string(name)? };
        if let Some(selector) = &value {
            extract::validate_selector(selector).map_err(|e| {
                ApiError::bad_request(format!("`{}.{name}` is not a valid CSS selector: {e}", self.at))
            })?;
        }
        Ok(value)
    }

    fn flag(&mut self, name: &str) -> Result<bool, ApiError> {
        match self.object.remove(name) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(b),
            Some(_) => Err(ApiError::bad_request(format!("`{}.{name}` must be a boolean", self.at))),
        }
    }

    fn done(self) -> Result<(), ApiError> {
        match self.object.keys().next() {
            Some(key) => Err(ApiError::bad_request(format!("Unrecognized key in body: `{}.{key}`", self.at))),
            None => Ok(()),
        }
    }
}

fn action(mut object: Map<String, Value>, at: &str) -> Result<Action, ApiError> {
    let kind = match object.remove("type") {
        Some(Value::String(kind)) => kind,
        _ => return Err(ApiError::bad_request(format!("`{at}.type` is required and must be a string"))),
    };
    if kind == "screenshot" {
        return Ok(Action::Screenshot(screenshot(&object, at)?));
    }
    let mut f = Fields { object, at };
    let action = match kind.as_str() {
        "wait" => {
            let ms = f.object.remove("milliseconds");
            let selector = f.selector("selector", false)?;
            match (ms, selector) {
                (Some(ms), None) => match ms.as_u64().filter(|ms| *ms > 0) {
                    Some(ms) => Action::Sleep { ms },
                    None => {
                        return Err(ApiError::bad_request(format!(
                            "`{at}.milliseconds` must be a positive integer"
                        )));
                    }
                },
                (None, Some(selector)) => Action::WaitFor { selector },
                _ => {
                    return Err(ApiError::bad_request(format!(
                        "`{at}` needs exactly one of `milliseconds` and `selector`"
                    )));
                }
            }
        }
        "click" => {
            let selector = f.selector("selector", true)?.unwrap_or_default();
            Action::Click { selector, all: f.flag("all")? }
        }
        "write" => Action::Write {
            text: f
                .string("text")?
                .ok_or_else(|| ApiError::bad_request(format!("`{at}.text` is required (a string)")))?,
        },
        "press" => {
            let key = f.required("key")?;
            if chromiumoxide::keys::get_key_definition(&key).is_none() {
                return Err(ApiError::bad_request(format!(
                    "`{at}.key` `{key}` is not a known key (examples: Enter, Tab, Escape, ArrowDown, a)"
                )));
            }
            Action::Press { key }
        }
        "scroll" => {
            let up = match f.string("direction")?.as_deref() {
                None | Some("down") => false,
                Some("up") => true,
                Some(other) => {
                    return Err(ApiError::bad_request(format!(
                        "`{at}.direction` must be \"up\" or \"down\" (got `{other}`)"
                    )));
                }
            };
            Action::Scroll { up, selector: f.selector("selector", false)? }
        }
        "scrape" => Action::Scrape,
        "executeJavascript" => {
            let script = f.required("script")?;
            if script.chars().count() > MAX_SCRIPT_CHARS {
                return Err(ApiError::bad_request(format!(
                    "`{at}.script` is longer than {MAX_SCRIPT_CHARS} characters"
                )));
            }
            Action::ExecuteJavascript { script }
        }
        "pdf" => pdf(&mut f)?,
        other => {
            return Err(ApiError::bad_request(format!(
                "`{at}.type` `{other}` is not an action; known: wait, click, write, press, scroll, screenshot, scrape, executeJavascript, pdf"
            )));
        }
    };
    f.done()?;
    Ok(action)
}

fn pdf(f: &mut Fields<'_>) -> Result<Action, ApiError> {
    let at = f.at;
    let format = match f.string("format")? {
        None => PaperFormat::Letter,
        Some(name) => {
            PaperFormat::ALL.iter().find(|(n, _)| *n == name).map(|(_, p)| *p).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "`{at}.format` must be one of {}",
                    PaperFormat::ALL.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ))
            })?
        }
    };
    let landscape = f.flag("landscape")?;
    let scale = match f.object.remove("scale") {
        None | Some(Value::Null) => 1.0,
        Some(v) => v
            .as_f64()
            .filter(|s| (0.1..=2.0).contains(s))
            .ok_or_else(|| ApiError::bad_request(format!("`{at}.scale` must be a number from 0.1 to 2")))?,
    };
    Ok(Action::Pdf { format, landscape, scale_pct: (scale * 100.0).round() as u16 })
}

/// The settings of a screenshot format or action.
pub fn screenshot(object: &Map<String, Value>, at: &str) -> Result<ScreenshotSpec, ApiError> {
    let mut spec = ScreenshotSpec::default();
    for (key, value) in object {
        match key.as_str() {
            "fullPage" => {
                spec.full_page = value
                    .as_bool()
                    .ok_or_else(|| ApiError::bad_request(format!("`{at}.fullPage` must be a boolean")))?;
            }
            "quality" => {
                let q = value.as_u64().filter(|q| (1..=100).contains(q)).ok_or_else(|| {
                    ApiError::bad_request(format!("`{at}.quality` must be an integer from 1 to 100"))
                })?;
                spec.quality = Some(q as u8);
            }
            "viewport" => {
                let side = |name: &str, max: u32| {
                    value
                        .get(name)
                        .and_then(Value::as_u64)
                        .filter(|v| *v >= 1 && *v <= u64::from(max))
                        .ok_or_else(|| {
                            ApiError::bad_request(format!(
                                "`{at}.viewport.{name}` must be an integer from 1 to {max}"
                            ))
                        })
                };
                if let Some(other) =
                    value.as_object().and_then(|o| o.keys().find(|k| *k != "width" && *k != "height"))
                {
                    return Err(ApiError::bad_request(format!(
                        "Unrecognized key in body: `{at}.viewport.{other}`"
                    )));
                }
                spec.viewport =
                    Some((side("width", MAX_VIEWPORT.0)? as u32, side("height", MAX_VIEWPORT.1)? as u32));
            }
            other => return Err(ApiError::bad_request(format!("Unrecognized key in body: `{at}.{other}`"))),
        }
    }
    Ok(spec)
}

/// The JSON Schema of the settings of a screenshot format or action (the properties of
/// its object beside `type`), as [`screenshot`] reads them.
pub fn screenshot_settings() -> Value {
    let side = |max: u32| json!({"type": "integer", "minimum": 1, "maximum": max});
    let (width, height) = MAX_VIEWPORT;
    json!({
        "fullPage": {"type": "boolean"},
        "quality": {"type": "integer", "minimum": 1, "maximum": 100},
        "viewport": {"type": "object", "required": ["width", "height"], "additionalProperties": false,
            "properties": {"width": side(width), "height": side(height)}},
    })
}

/// An object of `type` `kind` with `properties` (those of `required` required): one form
/// of an item whose `type` says what it is (an action, a format).
pub fn typed_form(kind: &str, properties: &Value, required: &[&str]) -> Value {
    let mut properties = properties.as_object().cloned().unwrap_or_default();
    properties.insert("type".into(), json!({"const": kind}));
    let required: Vec<&str> = std::iter::once("type").chain(required.iter().copied()).collect();
    json!({"type": "object", "required": required, "additionalProperties": false, "properties": properties})
}

/// The JSON Schema of one item of `actions`, as [`parse`] reads it. (Whether a selector
/// parses as CSS, and the wait budget the whole list shares, are checked on the server.)
pub fn item_schema() -> Value {
    let selector = json!({"type": "string", "minLength": 1});
    let optional_selector = json!({"type": ["string", "null"], "minLength": 1});
    let flag = json!({"type": ["boolean", "null"]});
    let mut keys: Vec<&str> = chromiumoxide::keys::USKEYBOARD_LAYOUT.iter().map(|k| k.key).collect();
    keys.sort_unstable();
    keys.dedup();
    let papers: Vec<Value> =
        PaperFormat::ALL.iter().map(|(name, _)| json!(name)).chain(std::iter::once(Value::Null)).collect();
    let forms = [
        typed_form(
            "wait",
            &json!({"milliseconds": {"type": "integer", "minimum": 1, "maximum": MAX_TOTAL_WAIT_MS},
                "selector": {"type": "null"}}),
            &["milliseconds"],
        ),
        typed_form("wait", &json!({"selector": selector}), &["selector"]),
        typed_form("click", &json!({"selector": selector, "all": flag}), &["selector"]),
        typed_form("write", &json!({"text": {"type": "string"}}), &["text"]),
        typed_form("press", &json!({"key": {"enum": keys}}), &["key"]),
        typed_form(
            "scroll",
            &json!({"direction": {"enum": ["up", "down", null]}, "selector": optional_selector}),
            &[],
        ),
        typed_form("screenshot", &screenshot_settings(), &[]),
        typed_form("scrape", &json!({}), &[]),
        typed_form(
            "executeJavascript",
            &json!({"script": {"type": "string", "minLength": 1, "maxLength": MAX_SCRIPT_CHARS}}),
            &["script"],
        ),
        typed_form(
            "pdf",
            &json!({"format": {"enum": papers}, "landscape": flag,
                "scale": {"type": ["number", "null"], "minimum": 0.1, "maximum": 2}}),
            &[],
        ),
    ];
    json!({"anyOf": forms})
}

/// Parses `profile: {name, saveChanges}`.
pub fn profile(value: Value, prefix: &str) -> Result<Option<Profile>, ApiError> {
    let at = format!("{prefix}profile");
    let object = match value {
        Value::Null => return Ok(None),
        Value::Object(o) => o,
        _ => return Err(ApiError::bad_request(format!("`{at}` must be an object with a `name`"))),
    };
    let mut f = Fields { object, at: &at };
    let name = f.required("name")?;
    if name.chars().count() > 128 {
        return Err(ApiError::bad_request(format!("`{at}.name` must be 1 to 128 characters")));
    }
    let save_changes = match f.object.remove("saveChanges") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => b,
        Some(_) => return Err(ApiError::bad_request(format!("`{at}.saveChanges` must be a boolean"))),
    };
    f.done()?;
    Ok(Some(Profile { name, save_changes }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(v: Value) -> Result<Vec<Action>, ApiError> {
        parse(v.as_array().cloned().unwrap_or_default(), 0, "")
    }

    #[test]
    fn every_action_type_parses() {
        let actions = p(json!([
            {"type": "wait", "milliseconds": 10},
            {"type": "wait", "selector": "#x"},
            {"type": "click", "selector": "button", "all": true},
            {"type": "write", "text": "hi"},
            {"type": "press", "key": "Enter"},
            {"type": "scroll", "direction": "up"},
            {"type": "screenshot", "fullPage": true, "quality": 80},
            {"type": "scrape"},
            {"type": "executeJavascript", "script": "1 + 1"},
            {"type": "pdf", "format": "A4", "landscape": true, "scale": 0.5}
        ]))
        .expect("valid");
        assert_eq!(actions.len(), 10);
        assert_eq!(actions[9], Action::Pdf { format: PaperFormat::A4, landscape: true, scale_pct: 50 });
    }

    #[test]
    fn errors_name_the_action_and_field() {
        let cases = [
            (json!([{"type": "wait"}]), "actions[0]"),
            (json!([{"type": "wait", "milliseconds": 5, "selector": "a"}]), "actions[0]"),
            (json!([{"type": "scrape"}, {"type": "click"}]), "actions[1].selector"),
            (json!([{"type": "click", "selector": "[["}]), "actions[0].selector"),
            (json!([{"type": "press", "key": "NotAKey"}]), "actions[0].key"),
            (json!([{"type": "fly"}]), "actions[0].type"),
            (json!([{"type": "screenshot", "quality": 0}]), "actions[0].quality"),
            (json!([{"type": "pdf", "format": "B5"}]), "actions[0].format"),
            (json!([{"type": "scrape", "extra": 1}]), "actions[0].extra"),
            (json!([{"type": "wait", "milliseconds": 61000}]), "actions"),
        ];
        for (input, field) in cases {
            let err = p(input.clone()).expect_err("invalid");
            assert!(err.to_string().contains(field), "{input}: {err}");
        }
        assert!(parse(vec![json!({"type": "scrape"}); 51], 0, "").is_err());
        assert!(parse(vec![json!({"type": "wait", "milliseconds": 30000})], 31_000, "").is_err());
    }

    #[test]
    fn the_item_schema_takes_what_parse_takes() {
        let checker = jsonschema::validator_for(&item_schema()).expect("a valid schema");
        let taken = [
            json!({"type": "wait", "milliseconds": 10}),
            json!({"type": "wait", "milliseconds": 10, "selector": null}),
            json!({"type": "wait", "selector": "#x"}),
            json!({"type": "click", "selector": "button", "all": true}),
            json!({"type": "write", "text": ""}),
            json!({"type": "press", "key": "Enter"}),
            json!({"type": "press", "key": "a"}),
            json!({"type": "scroll"}),
            json!({"type": "scroll", "direction": "up", "selector": "main"}),
            json!({"type": "screenshot", "fullPage": true, "quality": 80, "viewport": {"width": 800, "height": 600}}),
            json!({"type": "scrape"}),
            json!({"type": "executeJavascript", "script": "1 + 1"}),
            json!({"type": "pdf", "format": "A4", "landscape": true, "scale": 0.5}),
            json!({"type": "pdf", "format": null, "scale": null}),
        ];
        for action in taken {
            p(json!([action])).unwrap_or_else(|e| panic!("{action}: {}", e.message()));
            assert!(checker.is_valid(&action), "{action}");
        }
        let refused = [
            json!({"type": "wait"}),
            json!({"type": "wait", "milliseconds": 0}),
            json!({"type": "wait", "milliseconds": 5, "selector": "a"}),
            json!({"type": "wait", "selector": "a", "milliseconds": null}),
            json!({"type": "click"}),
            json!({"type": "click", "selector": ""}),
            json!({"type": "write"}),
            json!({"type": "press", "key": "NotAKey"}),
            json!({"type": "scroll", "direction": "left"}),
            json!({"type": "screenshot", "quality": 0}),
            json!({"type": "screenshot", "fullPage": null}),
            json!({"type": "screenshot", "viewport": {"width": 800}}),
            json!({"type": "scrape", "extra": 1}),
            json!({"type": "executeJavascript", "script": ""}),
            json!({"type": "executeJavascript", "script": "é".repeat(MAX_SCRIPT_CHARS + 1)}),
            json!({"type": "pdf", "format": "B5"}),
            json!({"type": "pdf", "scale": 3}),
            json!({"type": "fly"}),
            json!({"selector": "a"}),
        ];
        for action in refused {
            assert!(p(json!([action])).is_err(), "{action} is refused");
            assert!(!checker.is_valid(&action), "{action}");
        }
        let long = json!({"type": "executeJavascript", "script": "é".repeat(MAX_SCRIPT_CHARS)});
        p(json!([long])).expect("the limit is in characters");
        assert!(checker.is_valid(&long));
    }

    #[test]
    fn profiles_default_to_saving() {
        let got = profile(json!({"name": "shop"}), "").expect("ok").expect("some");
        assert!(got.save_changes);
        assert!(profile(json!({"name": ""}), "").is_err());
        assert!(profile(json!({"name": "x", "saveChanges": "yes"}), "").is_err());
    }
}
