//! The `formats` list: names or `{type, ...}` objects (contract §4.2), turned into
//! [`Formats`]. Unknown names are a 400 listing the known ones; formats that need a
//! capability this server lacks (a language model when `llm.base_url` is not set, hosted
//! media services) are refused with `FEATURE_NOT_AVAILABLE`.

use serde_json::{Map, Value, json};

use super::error::ApiError;
use crate::extract;
use crate::model::{ChangeTrackingSpec, Formats, JsonSpec, QuerySpec};

/// Formats this build produces.
pub const SUPPORTED: &[&str] = &[
    "markdown",
    "html",
    "rawHtml",
    "rawBase64",
    "links",
    "images",
    "changeTracking",
    "attributes",
    "screenshot",
    "branding",
    "json",
    "summary",
    "question",
    "query",
    "highlights",
];

/// Formats a language model produces.
const MODEL_FORMATS: &[&str] = &["json", "summary", "question", "query", "highlights"];

/// Why a model format is refused on a server without a model.
pub const NO_MODEL: &str = "it needs a language model; the operator sets llm.base_url to enable it";

/// Longest prompt, question or query (characters).
const MAX_PROMPT_CHARS: usize = 10_000;
/// Longest change-tracking tag (characters).
const MAX_TAG_CHARS: usize = 256;

/// The names of the formats `formats` asks for, as a job's options show them (the
/// objects' settings left out).
pub fn names(formats: &Formats) -> Vec<&'static str> {
    [
        (formats.markdown, "markdown"),
        (formats.html, "html"),
        (formats.raw_html, "rawHtml"),
        (formats.raw_base64, "rawBase64"),
        (formats.links, "links"),
        (formats.images, "images"),
        (formats.change_tracking.is_some(), "changeTracking"),
        (!formats.attributes.is_empty(), "attributes"),
        (formats.screenshot.is_some(), "screenshot"),
        (formats.branding, "branding"),
        (formats.json.is_some(), "json"),
        (formats.summary, "summary"),
        (formats.question.is_some(), "question"),
        (formats.query.is_some(), "query"),
        (formats.highlights.is_some(), "highlights"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect()
}

/// Formats that need settings of their own (an object with its `type`); the others may
/// also be asked for by name alone.
const SETTINGS_REQUIRED: &[&str] = &["attributes", "question", "query", "highlights"];

/// Format names a bare string asks for.
pub fn by_name() -> impl Iterator<Item = &'static str> {
    SUPPORTED.iter().copied().filter(|name| !SETTINGS_REQUIRED.contains(name))
}

/// Whether `rawBase64` excludes format `name`: it excludes the others of a page's content,
/// not the model formats.
fn not_with_raw_base64(name: &str) -> bool {
    name != "rawBase64" && !MODEL_FORMATS.contains(&name)
}

/// The JSON Schema of `formats`, as [`parse`] reads it on a server with a language model or
/// without (`model`): items of [`item_schema`], and what spans items: `changeTracking` only
/// with `markdown`, `rawBase64` without the other content formats, one screenshot at most.
pub fn list_schema(model: bool) -> Value {
    // An item asking for one of `names`, by name or as an object.
    let any_of = |names: &[&str]| {
        json!({"anyOf": [
            {"enum": names},
            {"type": "object", "required": ["type"], "properties": {"type": {"enum": names}}},
        ]})
    };
    // Each rule is an `if` with a positive `then` (no `not`, no `minContains`), which
    // request generators such as schemathesis can draw from.
    let with_raw_base64: Vec<&str> = SUPPORTED.iter().copied().filter(|n| !not_with_raw_base64(n)).collect();
    let (screenshot, tracking) = (any_of(&["screenshot"]), any_of(&["changeTracking"]));
    json!({
        "type": "array",
        "items": item_schema(model),
        "allOf": [
            {"if": {"contains": tracking}, "then": {"contains": any_of(&["markdown"])}},
            {"if": {"contains": any_of(&["rawBase64"])}, "then": {"items": any_of(&with_raw_base64)}},
            {"if": {"contains": screenshot}, "then": {"contains": screenshot, "maxContains": 1}},
        ],
    })
}

/// The JSON Schema of one item of `formats`, as [`parse`] reads it on a server with a
/// language model or without (`model`): a name of [`by_name`], or an object with its `type`
/// and that format's settings. (What spans items is in [`list_schema`].)
pub fn item_schema(model: bool) -> Value {
    let prompt = json!({"type": "string", "minLength": 1, "maxLength": MAX_PROMPT_CHARS, "pattern": "\\S"});
    // Without a model, a json format's or change tracking's schema and prompt only as null.
    let (optional_prompt, schema, modes) = if model {
        let mut optional = prompt.clone();
        optional["type"] = json!(["string", "null"]);
        (
            optional,
            json!({"anyOf": [{"type": "object"}, {"const": true}, {"type": "null"}]}),
            json!(["git-diff", "json"]),
        )
    } else {
        (json!({"type": "null"}), json!({"type": "null"}), json!(["git-diff"]))
    };
    let form = super::actions::typed_form;
    // The formats that take settings: each with its settings and those required.
    let with_settings: [(&str, Value, &[&str]); 7] = [
        ("screenshot", super::actions::screenshot_settings(), &[]),
        ("json", json!({"schema": schema, "prompt": optional_prompt}), &[]),
        (
            "changeTracking",
            json!({
                "modes": {"type": "array", "items": {"enum": modes}},
                "tag": {"type": ["string", "null"], "minLength": 1, "maxLength": MAX_TAG_CHARS},
                "schema": schema,
                "prompt": optional_prompt,
            }),
            &[],
        ),
        (
            "attributes",
            json!({"selectors": {"type": "array", "minItems": 1, "items": {
                "type": "object", "required": ["selector", "attribute"], "additionalProperties": false,
                "properties": {"selector": {"type": "string", "minLength": 1}, "attribute": {"type": "string", "minLength": 1}},
            }}}),
            &["selectors"],
        ),
        ("question", json!({"question": prompt}), &["question"]),
        ("highlights", json!({"query": prompt}), &["query"]),
        (
            "query",
            json!({"prompt": prompt, "mode": {"enum": ["freeform", "directQuote", null]}}),
            &["prompt"],
        ),
    ];
    let available = |name: &str| model || !MODEL_FORMATS.contains(&name);
    let names: Vec<&str> = by_name().filter(|n| available(n)).collect();
    let has_settings = |name: &str| with_settings.iter().any(|(n, ..)| *n == name);
    let bare = names.iter().filter(|n| !has_settings(n)).map(|name| form(name, &json!({}), &[]));
    let set = with_settings.iter().filter(|(n, ..)| available(n)).map(|(n, p, r)| form(n, p, r));
    let forms: Vec<Value> =
        std::iter::once(json!({"type": "string", "enum": names})).chain(bare).chain(set).collect();
    json!({"anyOf": forms})
}

/// Formats of the API that need something this build lacks, with the reason.
const UNAVAILABLE: &[(&str, &str)] = &[
    ("deterministicJson", "cached generated extractors are a hosted-service feature; use `json`"),
    ("audio", "audio extraction is a hosted media service"),
    ("video", "video extraction is a hosted media service"),
    ("product", "product extraction is a hosted-service feature"),
    ("menu", "menu extraction is a hosted-service feature"),
];

/// Parses the formats list; `prefix` names nested fields, `model` says whether a language
/// model is configured.
pub fn parse(entries: Vec<Value>, prefix: &str, model: bool) -> Result<Formats, ApiError> {
    let mut formats = Formats::default();
    for (i, entry) in entries.into_iter().enumerate() {
        let at = format!("{prefix}formats[{i}]");
        let (kind, mut object) = match entry {
            Value::String(name) => (name, Map::new()),
            Value::Object(mut object) => match object.remove("type") {
                Some(Value::String(name)) => (name, object),
                _ => {
                    return Err(ApiError::bad_request(format!(
                        "`{at}.type` is required and must be a string"
                    )));
                }
            },
            _ => {
                return Err(ApiError::bad_request(format!(
                    "`{at}` must be a format name or an object with a `type`"
                )));
            }
        };
        if let Some((_, why)) = UNAVAILABLE.iter().find(|(name, _)| *name == kind) {
            return Err(ApiError::not_available(&format!("{at} ({kind})"), why));
        }
        if !model && MODEL_FORMATS.contains(&kind.as_str()) {
            return Err(ApiError::not_available(&format!("{at} ({kind})"), NO_MODEL));
        }
        match kind.as_str() {
            "markdown" => formats.markdown = true,
            "html" => formats.html = true,
            "rawHtml" => formats.raw_html = true,
            "rawBase64" => formats.raw_base64 = true,
            "links" => formats.links = true,
            "images" => formats.images = true,
            "changeTracking" => {
                formats.change_tracking = Some(change_tracking(&object, &at, model)?);
                continue;
            }
            "attributes" => {
                formats.attributes.extend(attributes(&object, &at)?);
                continue;
            }
            "screenshot" => {
                if formats.screenshot.is_some() {
                    return Err(ApiError::bad_request(format!(
                        "`{at}`: only one screenshot format is allowed"
                    )));
                }
                formats.screenshot = Some(super::actions::screenshot(&object, &at)?);
                continue;
            }
            "branding" => formats.branding = true,
            "summary" => formats.summary = true,
            "json" => {
                formats.json = Some(json_spec(&mut object, &at)?);
            }
            "question" => formats.question = Some(text(&mut object, "question", &at)?),
            "highlights" => formats.highlights = Some(text(&mut object, "query", &at)?),
            "query" => {
                let prompt = text(&mut object, "prompt", &at)?;
                let direct_quote = match object.remove("mode") {
                    None | Some(Value::Null) => false,
                    Some(Value::String(m)) if m == "freeform" => false,
                    Some(Value::String(m)) if m == "directQuote" => true,
                    Some(_) => {
                        return Err(ApiError::bad_request(format!(
                            "`{at}.mode` must be \"freeform\" or \"directQuote\""
                        )));
                    }
                };
                formats.query = Some(QuerySpec { prompt, direct_quote });
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "`{at}` is an unknown format `{other}`; known formats: {}",
                    SUPPORTED
                        .iter()
                        .chain(UNAVAILABLE.iter().map(|(n, _)| n))
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        if let Some(key) = object.keys().next() {
            return Err(ApiError::bad_request(format!("Unrecognized key in body: `{at}.{key}`")));
        }
    }
    if formats.change_tracking.is_some() && !formats.markdown {
        return Err(ApiError::bad_request(format!(
            "`{prefix}formats`: changeTracking requires the markdown format as well"
        )));
    }
    let others = names(&formats).into_iter().any(not_with_raw_base64);
    if formats.raw_base64 && others {
        return Err(ApiError::bad_request(format!("`{prefix}formats`: rawBase64 must be the only format")));
    }
    Ok(formats)
}

/// A prompt, question or query: absent (or null), or a string of 1 to
/// [`MAX_PROMPT_CHARS`] characters; anything else is a 400 naming `field`.
pub fn prompt(value: Option<Value>, field: &str) -> Result<Option<String>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() && s.chars().count() <= MAX_PROMPT_CHARS => {
            Ok(Some(s))
        }
        Some(_) => Err(ApiError::bad_request(format!(
            "`{field}` must be a string of 1 to {MAX_PROMPT_CHARS} characters"
        ))),
    }
}

/// A required [`prompt`] taken out of `object`.
fn text(object: &mut Map<String, Value>, key: &str, at: &str) -> Result<String, ApiError> {
    let field = format!("{at}.{key}");
    prompt(object.remove(key), &field)?.ok_or_else(|| {
        ApiError::bad_request(format!(
            "`{field}` is required: a string of 1 to {MAX_PROMPT_CHARS} characters"
        ))
    })
}

/// `schema` and `prompt` of a `json` format (or change tracking's json mode), taken out of
/// `object`: the schema must compile as a JSON Schema.
fn json_spec(object: &mut Map<String, Value>, at: &str) -> Result<JsonSpec, ApiError> {
    let schema = match object.remove("schema") {
        None | Some(Value::Null) => None,
        Some(schema @ (Value::Object(_) | Value::Bool(true))) => {
            crate::llm::structured::compile(&schema).map_err(|e| {
                ApiError::bad_request(format!("`{at}.schema` is not a usable JSON Schema: {e}"))
            })?;
            Some(schema.to_string())
        }
        Some(_) => return Err(ApiError::bad_request(format!("`{at}.schema` must be a JSON Schema object"))),
    };
    let prompt = prompt(object.remove("prompt"), &format!("{at}.prompt"))?;
    Ok(JsonSpec { schema, prompt })
}

fn change_tracking(
    object: &Map<String, Value>,
    at: &str,
    model: bool,
) -> Result<ChangeTrackingSpec, ApiError> {
    let mut spec = ChangeTrackingSpec::default();
    let mut json_mode = false;
    for (key, value) in object {
        match key.as_str() {
            "modes" => {
                let modes = value
                    .as_array()
                    .ok_or_else(|| ApiError::bad_request(format!("`{at}.modes` must be an array")))?;
                for (j, mode) in modes.iter().enumerate() {
                    match mode.as_str() {
                        Some("git-diff") => spec.git_diff = true,
                        Some("json") if !model => {
                            return Err(ApiError::not_available(
                                &format!("{at}.modes[{j}] (json)"),
                                NO_MODEL,
                            ));
                        }
                        Some("json") => json_mode = true,
                        _ => {
                            return Err(ApiError::bad_request(format!(
                                "`{at}.modes[{j}]` must be \"git-diff\" or \"json\""
                            )));
                        }
                    }
                }
            }
            "tag" => match value {
                Value::Null => spec.tag = None,
                Value::String(tag) if !tag.is_empty() && tag.chars().count() <= MAX_TAG_CHARS => {
                    spec.tag = Some(tag.clone())
                }
                _ => {
                    return Err(ApiError::bad_request(format!(
                        "`{at}.tag` must be a string of 1 to {MAX_TAG_CHARS} characters or null"
                    )));
                }
            },
            "schema" | "prompt" if !value.is_null() && !model => {
                return Err(ApiError::not_available(&format!("{at}.{key}"), NO_MODEL));
            }
            "schema" | "prompt" => {}
            other => {
                return Err(ApiError::bad_request(format!("Unrecognized key in body: `{at}.{other}`")));
            }
        }
    }
    let mut rest = object.clone();
    let asked = json_spec(&mut rest, at)?;
    if json_mode {
        spec.json = Some(asked);
    } else if asked != JsonSpec::default() {
        return Err(ApiError::bad_request(format!(
            "`{at}`: schema and prompt are for the json mode; add \"json\" to `{at}.modes`"
        )));
    }
    Ok(spec)
}

fn attributes(object: &Map<String, Value>, at: &str) -> Result<Vec<(String, String)>, ApiError> {
    if let Some(other) = object.keys().find(|k| *k != "selectors") {
        return Err(ApiError::bad_request(format!("Unrecognized key in body: `{at}.{other}`")));
    }
    let list = object
        .get("selectors")
        .and_then(Value::as_array)
        .filter(|l| !l.is_empty())
        .ok_or_else(|| ApiError::bad_request(format!("`{at}.selectors` must be a non-empty array")))?;
    list.iter()
        .enumerate()
        .map(|(j, item)| {
            let here = format!("{at}.selectors[{j}]");
            let get = |name: &str| {
                item.get(name)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        ApiError::bad_request(format!("`{here}.{name}` must be a non-empty string"))
                    })
            };
            let selector = get("selector")?;
            let attribute = get("attribute")?;
            extract::validate_selector(&selector).map_err(|e| {
                ApiError::bad_request(format!("`{here}.selector` is not a valid CSS selector: {e}"))
            })?;
            Ok((selector, attribute))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Code;
    use serde_json::json;

    fn p(v: Value) -> Result<Formats, ApiError> {
        parse(v.as_array().cloned().unwrap_or_default(), "", false)
    }

    fn with_model(v: Value) -> Result<Formats, ApiError> {
        parse(v.as_array().cloned().unwrap_or_default(), "", true)
    }

    #[test]
    fn names_and_objects_mix() {
        let f = p(json!(["markdown", {"type": "html"}, "links"])).expect("ok");
        assert!(f.markdown && f.html && f.links && !f.raw_html);
    }

    #[test]
    fn unknown_formats_are_named() {
        let err = p(json!(["markdown", "pdfText"])).unwrap_err();
        assert_eq!(err.code(), Code::BadRequest);
        assert!(err.message().contains("`formats[1]`") && err.message().contains("pdfText"));
    }

    #[test]
    fn unavailable_formats_say_so() {
        let err = p(json!([{"type": "json", "prompt": "x"}])).unwrap_err();
        assert_eq!(err.code(), Code::FeatureNotAvailable);
        assert!(err.message().contains("formats[0] (json)"), "{}", err.message());
        assert!(err.message().contains("llm.base_url"), "{}", err.message());
        assert_eq!(p(json!(["audio"])).unwrap_err().code(), Code::FeatureNotAvailable);
    }

    #[test]
    fn screenshot_settings_are_checked() {
        let f =
            p(json!([{"type": "screenshot", "fullPage": true, "viewport": {"width": 800, "height": 600}}]))
                .expect("ok");
        let spec = f.screenshot.expect("screenshot");
        assert!(spec.full_page);
        assert_eq!(spec.viewport, Some((800, 600)));
        assert!(p(json!(["screenshot", "screenshot"])).unwrap_err().message().contains("only one"));
        let err = p(json!([{"type": "screenshot", "viewport": {"width": 9000, "height": 10}}])).unwrap_err();
        assert!(err.message().contains("formats[0].viewport.width"), "{}", err.message());
        assert!(p(json!(["branding"])).expect("ok").branding);
    }

    #[test]
    fn change_tracking_rules() {
        let f = p(json!(["markdown", {"type": "changeTracking", "modes": ["git-diff"], "tag": "daily"}]))
            .expect("ok");
        let spec = f.change_tracking.expect("spec");
        assert!(spec.git_diff);
        assert_eq!(spec.tag.as_deref(), Some("daily"));
        assert!(p(json!(["changeTracking"])).unwrap_err().message().contains("requires the markdown"));
        assert_eq!(
            p(json!(["markdown", {"type": "changeTracking", "modes": ["json"]}])).unwrap_err().code(),
            Code::FeatureNotAvailable
        );
    }

    #[test]
    fn strict_format_objects() {
        let err = p(json!([{"type": "markdown", "fullPage": true}])).unwrap_err();
        assert!(err.message().contains("`formats[0].fullPage`"), "{}", err.message());
        assert!(p(json!(["rawBase64", "markdown"])).is_err());
        assert!(p(json!(["rawBase64"])).expect("ok").raw_base64);
    }

    #[test]
    fn model_formats_are_checked() {
        let f = with_model(json!([
            {"type": "json", "schema": {"type": "object", "properties": {"a": {"type": "string"}}}, "prompt": "get a"},
            "summary",
            {"type": "question", "question": "Who?"},
            {"type": "highlights", "query": "prices"},
            {"type": "query", "prompt": "What?", "mode": "directQuote"},
        ]))
        .expect("ok");
        let spec = f.json.expect("json");
        assert_eq!(spec.prompt.as_deref(), Some("get a"));
        assert_eq!(spec.schema_value().expect("schema")["properties"]["a"]["type"], "string");
        assert!(f.summary && f.query.expect("query").direct_quote);
        assert_eq!(f.question.as_deref(), Some("Who?"));
        assert_eq!(f.highlights.as_deref(), Some("prices"));
        let bad = with_model(json!([{"type": "json", "schema": {"type": 5}}])).unwrap_err();
        assert!(bad.message().contains("`formats[0].schema`"), "{}", bad.message());
        let bad = with_model(json!([{"type": "question"}])).unwrap_err();
        assert!(bad.message().contains("`formats[0].question`"), "{}", bad.message());
        let bad = with_model(json!([{"type": "query", "prompt": "x", "mode": "loose"}])).unwrap_err();
        assert!(bad.message().contains("`formats[0].mode`"), "{}", bad.message());
        let bad = with_model(json!([{"type": "summary", "length": 3}])).unwrap_err();
        assert!(bad.message().contains("`formats[0].length`"), "{}", bad.message());
        let tracked = with_model(
            json!(["markdown", {"type": "changeTracking", "modes": ["json"], "prompt": "prices"}]),
        )
        .expect("ok");
        assert_eq!(
            tracked.change_tracking.expect("ct").json.expect("json").prompt.as_deref(),
            Some("prices")
        );
        assert!(
            with_model(json!(["markdown", {"type": "changeTracking", "schema": {"type": "object"}}]))
                .is_err()
        );
    }

    #[test]
    fn attribute_selectors() {
        let f = p(json!([{"type": "attributes", "selectors": [{"selector": "a", "attribute": "href"}]}]))
            .expect("ok");
        assert_eq!(f.attributes, vec![("a".to_owned(), "href".to_owned())]);
        assert!(p(json!([{"type": "attributes", "selectors": []}])).is_err());
    }

    #[test]
    fn the_item_schema_takes_what_parse_takes() {
        let schema = item_schema(true);
        let checker = jsonschema::validator_for(&schema).expect("a valid schema");
        for name in by_name() {
            let list = if name == "rawBase64" { json!([name]) } else { json!([name, "markdown"]) };
            with_model(list).unwrap_or_else(|e| panic!("{name} by name: {}", e.message()));
            assert!(checker.is_valid(&json!(name)), "{name}");
        }
        for name in ["attributes", "question", "highlights", "query", "pdfText", "audio"] {
            assert!(with_model(json!([name])).is_err(), "{name} needs settings or is not ours");
            assert!(!checker.is_valid(&json!(name)), "{name}");
        }
        let forms = [
            json!({"type": "screenshot", "fullPage": true, "quality": 80, "viewport": {"width": 800, "height": 600}}),
            json!({"type": "json", "schema": {"type": "object"}, "prompt": "prices"}),
            json!({"type": "changeTracking", "modes": ["git-diff", "json"], "tag": "daily", "prompt": "p"}),
            json!({"type": "attributes", "selectors": [{"selector": "a", "attribute": "href"}]}),
            json!({"type": "question", "question": "who?"}),
            json!({"type": "highlights", "query": "prices"}),
            json!({"type": "query", "prompt": "who?", "mode": "directQuote"}),
            json!({"type": "links"}),
        ];
        for form in forms {
            with_model(json!(["markdown", form])).unwrap_or_else(|e| panic!("{form}: {}", e.message()));
            assert!(checker.is_valid(&form), "{form}");
        }
        let refused = [
            json!({"type": "screenshot", "quality": 0}),
            json!({"type": "links", "x": 1}),
            json!({"type": "attributes", "selectors": []}),
            json!({"type": "changeTracking", "modes": ["word-diff"]}),
            json!({"type": "question"}),
            json!({"type": "query", "prompt": "q", "mode": "loose"}),
            json!({"markdown": true}),
        ];
        for form in refused {
            assert!(with_model(json!(["markdown", form])).is_err(), "{form} is refused");
            assert!(!checker.is_valid(&form), "{form}");
        }
    }

    #[test]
    fn the_list_schema_takes_what_parse_takes_across_items() {
        let checker = jsonschema::validator_for(&list_schema(true)).expect("a valid schema");
        let taken = [
            json!(["markdown", "html"]),
            json!(["changeTracking", "markdown"]),
            json!([{"type": "changeTracking", "modes": ["git-diff"]}, {"type": "markdown"}]),
            json!(["rawBase64"]),
            json!(["rawBase64", {"type": "json", "prompt": "prices"}, "summary"]),
            json!(["markdown", {"type": "screenshot", "fullPage": true}]),
            json!([]),
        ];
        for list in taken {
            with_model(list.clone()).unwrap_or_else(|e| panic!("{list}: {}", e.message()));
            assert!(checker.is_valid(&list), "{list}");
        }
        let refused = [
            json!(["changeTracking"]),
            json!([{"type": "changeTracking"}, "html"]),
            json!(["rawBase64", "markdown"]),
            json!([{"type": "rawBase64"}, {"type": "links"}]),
            json!(["rawBase64", {"type": "attributes", "selectors": [{"selector": "a", "attribute": "href"}]}]),
            json!(["screenshot", {"type": "screenshot", "fullPage": true}]),
        ];
        for list in refused {
            assert!(with_model(list.clone()).is_err(), "{list} is refused");
            assert!(!checker.is_valid(&list), "{list}");
        }
    }

    #[test]
    fn without_a_model_the_item_schema_leaves_the_model_formats_out() {
        let checker = jsonschema::validator_for(&item_schema(false)).expect("a valid schema");
        for name in ["markdown", "screenshot", "changeTracking"] {
            assert!(checker.is_valid(&json!(name)), "{name}");
        }
        let refused = [
            json!("json"),
            json!("summary"),
            json!({"type": "json", "prompt": "prices"}),
            json!({"type": "question", "question": "who?"}),
            json!({"type": "changeTracking", "modes": ["json"]}),
            json!({"type": "changeTracking", "prompt": "prices"}),
        ];
        for form in refused {
            assert!(p(json!(["markdown", form])).is_err(), "{form} is refused without a model");
            assert!(!checker.is_valid(&form), "{form}");
        }
        let tracked =
            json!({"type": "changeTracking", "modes": ["git-diff"], "tag": "daily", "prompt": null});
        p(json!(["markdown", tracked])).expect("git-diff needs no model");
        assert!(checker.is_valid(&tracked));
    }
}
