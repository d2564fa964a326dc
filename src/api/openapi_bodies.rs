//! The request side of the OpenAPI document, stated as strictly as the server reads it. A
//! document looser than the server invites clients (and generated ones) to send what is
//! then refused, so: every JSON body lists exactly the keys its handler accepts and allows
//! no others; a key the handler reads as optional also takes `null`; URLs are http(s); the
//! hosted-service options are documented as what this server takes (absent, `null`, or
//! `false` where it means "off"); and values checked against a set or a range carry it.

use serde_json::{Map, Value, json};

use super::{browser, crawl_prompt, formats, interact, llm_jobs, search, support};

/// A URL the server fetches or calls: http or https (the scheme in any case) and a host.
const HTTP_URL: &str = "^[Hh][Tt][Tt][Pp][Ss]?://[^\\s/?#]+([/?#]\\S*)?$";

/// Tightens the request bodies and parameters of `doc`, for a server with a language model
/// or without (`model`: which formats it takes).
pub(super) fn tighten(doc: &mut Value, model: bool) {
    http_urls(doc);
    let schemas = &mut doc["components"]["schemas"];
    if let Some(one_of) = schemas["Webhook"]["oneOf"].as_array_mut() {
        one_of.push(json!({"type": "null"}));
    }
    for (name, schema) in schemas.as_object_mut().into_iter().flatten() {
        option_type(name, schema, model);
    }
    bodies(doc);
    parameters(doc);
}

/// The option types whose keys are all read as an `Option` but the required ones: `null`
/// there is the key left out.
const OPTION_TYPES: &[&str] = &[
    "ScrapeOptions",
    "ScrapeRequest",
    "CrawlOptions",
    "CrawlRequest",
    "MapOptions",
    "MapRequest",
    "BatchScrapeRequest",
    "LocationBody",
];

/// The properties of the component schema `name` as the server reads them: profiles,
/// sitemap modes, actions, formats (those of a language model only with `model`), header
/// names (HTTP tokens) and tag selectors (not empty) in their forms, unsigned ranges,
/// optional keys taking `null`, no keys but those, and the hosted-service options off.
fn option_type(name: &str, schema: &mut Value, model: bool) {
    let optional = OPTION_TYPES.contains(&name);
    if optional {
        // Every option type's keys are checked: an unknown one is refused.
        schema["additionalProperties"] = json!(false);
    }
    let required = schema["required"].clone();
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else { return };
    for (key, prop) in props.iter_mut() {
        match key.as_str() {
            "profile" => *prop = keeping_description(prop, nullable(profile())),
            "sitemap" => prop["enum"] = json!(["skip", "include", "only"]),
            "formats" if optional => *prop = keeping_description(prop, formats::list_schema(model)),
            "actions" if optional => {
                *prop = keeping_description(
                    prop,
                    json!({"type": "array", "maxItems": super::actions::MAX_ACTIONS,
                    "items": super::actions::item_schema()}),
                )
            }
            "headers" if prop.is_object() => {
                prop["propertyNames"] = json!({"pattern": "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"});
            }
            "includeTags" | "excludeTags" if prop["items"].is_object() => {
                prop["items"]["minLength"] = json!(1)
            }
            _ => {}
        }
        unsigned(prop);
        let is_required = required.as_array().is_some_and(|r| r.contains(&json!(key)));
        if optional && !is_required && *prop != json!({}) {
            let taken = prop.take();
            *prop = keeping_description(&taken, nullable(taken.clone()));
        }
    }
    off_when_hosted(props);
}

/// `new`, with the description of `old` when `new` has none of its own.
fn keeping_description(old: &Value, mut new: Value) -> Value {
    if let (Some(description), None) =
        (old.get("description").filter(|d| d.is_string()), new.get("description"))
    {
        new["description"] = description.clone();
    }
    new
}

/// A persistent browser profile, as sessions and scrapes take it.
fn profile() -> Value {
    json!({"type": "object", "required": ["name"], "additionalProperties": false, "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 128},
        "saveChanges": {"type": ["boolean", "null"]}}})
}

/// `schema` also taking `null` (any of the two: a schema that takes `null` itself, such as
/// a webhook's, still validates `null` once). A schema with rules of its own (`allOf`) gets
/// `null` as a choice beside it, not as one of its types: request generators read rules over
/// `["array", "null"]` as rules of the `null` too.
fn nullable(mut schema: Value) -> Value {
    let only_null = json!({"type": "null"});
    if ["oneOf", "anyOf"]
        .iter()
        .any(|k| schema[*k].as_array().is_some_and(|choices| choices.contains(&only_null)))
    {
        return schema;
    }
    if schema.get("allOf").is_some() {
        return json!({"anyOf": [schema, only_null]});
    }
    if let Some(values) = schema.get_mut("enum").and_then(Value::as_array_mut)
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match schema.get("type").cloned() {
        Some(Value::String(t)) if t != "null" => schema["type"] = json!([t, "null"]),
        Some(Value::Array(mut types)) if !types.contains(&json!("null")) => {
            types.push(json!("null"));
            schema["type"] = Value::Array(types);
        }
        Some(_) => {}
        None if schema.get("enum").is_some() => {}
        None => return json!({"anyOf": [schema, only_null]}),
    }
    schema
}

/// The schema of a JSON body with exactly `keys`: those described in `known` as given
/// (`required` ones as they are, the others also `null`), the rest any value.
fn exact(keys: &[&str], known: Value, required: &[&str]) -> Value {
    let known = known.as_object().cloned().unwrap_or_default();
    let mut properties = Map::new();
    for &key in keys {
        let schema = known.get(key).cloned().unwrap_or_else(|| json!({}));
        let schema = if required.contains(&key) || schema == json!({}) { schema } else { nullable(schema) };
        properties.insert(key.to_owned(), schema);
    }
    off_when_hosted(&mut properties);
    json!({"type": "object", "required": required, "additionalProperties": false, "properties": properties})
}

/// Sets the JSON body schema of `method path` (keeping its description) and whether a body
/// must be sent.
fn body(doc: &mut Value, path: &str, method: &str, schema: Value, required: bool) {
    let op = &mut doc["paths"][path][method];
    if op.is_null() {
        return;
    }
    let description = op["requestBody"]["description"].clone();
    op["requestBody"] = json!({"required": required, "content": {"application/json": {"schema": schema}}});
    if description.is_string() {
        op["requestBody"]["description"] = description;
    }
}

/// The JSON bodies not built from option types.
fn bodies(doc: &mut Value) {
    let text = |min: u64, max: u64| json!({"type": "string", "minLength": min, "maxLength": max});
    // A prompt or a question: not only white space.
    let words = |max: u64| json!({"type": "string", "minLength": 1, "maxLength": max, "pattern": "\\S"});
    let label = json!({"type": "string"});
    let url = json!({"type": "string", "format": "uri", "pattern": HTTP_URL});
    let urls = json!({"type": "array", "maxItems": 10, "items": url});
    let object = json!({"type": "object"});
    let labels = |mut known: Value| {
        known["origin"] = label.clone();
        known["integration"] = label.clone();
        known
    };
    body(
        doc,
        "/v2/support/docs-search",
        "post",
        exact(support::accepted_keys(), labels(json!({"question": words(2000)})), &["question"]),
        true,
    );
    body(
        doc,
        "/v2/crawl/params-preview",
        "post",
        exact(
            crawl_prompt::accepted_keys(),
            labels(json!({"url": url, "prompt": words(10_000)})),
            &["url", "prompt"],
        ),
        true,
    );
    let jobs = labels(json!({
        "urls": urls, "prompt": words(10_000), "systemPrompt": label, "schema": object,
        "enableWebSearch": {"type": "boolean"}, "ignoreInvalidURLs": {"type": "boolean"},
        "scrapeOptions": object, "timeout": {"type": "integer", "minimum": 0},
        "maxCredits": {"type": "integer", "minimum": 0},
        "model": {"type": "string", "enum": ["spark-1-pro", "spark-1-mini", "spark-2"]},
        "webhook": {"$ref": "#/components/schemas/Webhook"},
    }));
    body(doc, "/v2/extract", "post", exact(llm_jobs::extract_keys(), jobs.clone(), &[]), true);
    body(doc, "/v2/agent", "post", exact(llm_jobs::agent_keys(), jobs, &["prompt"]), true);
    let session = exact(
        browser::create_keys(),
        labels(json!({
            "ttl": {"type": "integer", "minimum": 30, "maximum": 3600},
            "activityTtl": {"type": "integer", "minimum": 10, "maximum": 3600},
            "streamWebView": {"type": "boolean"},
            "recordSession": {"type": "boolean"},
            "profile": profile(),
        })),
        &[],
    );
    // An empty body opens a session with the defaults.
    for path in ["/v2/browser", "/v2/interact"] {
        body(doc, path, "post", session.clone(), false);
    }
    let work = labels(json!({
        "code": text(1, 100_000), "prompt": text(1, 10_000),
        "language": {"type": "string", "enum": ["node", "python", "bash"]},
        "timeout": {"type": "integer", "minimum": 1, "maximum": 300},
        "existingSessionId": text(1, 128),
    }));
    // Code or a prompt, not both.
    let mut on_scrape = exact(interact::accepted_keys(), work, &[]);
    on_scrape["oneOf"] = json!([
        {"required": ["code"], "properties": {"code": {"type": "string"}, "prompt": {"type": "null"}}},
        {"required": ["prompt"], "properties": {"prompt": {"type": "string"}, "code": {"type": "null"}}},
    ]);
    let mut on_session = on_scrape.clone();
    if let Some(props) = on_session["properties"].as_object_mut() {
        props.remove("existingSessionId");
    }
    body(doc, "/v2/scrape/{id}/interact", "post", on_scrape, true);
    for path in ["/v2/browser/{sessionId}/execute", "/v2/interact/{sessionId}/execute"] {
        body(doc, path, "post", on_session.clone(), true);
    }
    // A kind of results or category: its name, or an object with it as `type`.
    let kinds = |names: Value| {
        json!({"type": "array", "items": {"oneOf": [
            {"type": "string", "enum": names},
            {"type": "object", "required": ["type"], "properties": {"type": {"type": "string", "enum": names}}},
        ]}})
    };
    let period = "(qdr:[hdwmy]|sbd:[01]|cdr:1|cd_(min|max):[0-9]{1,2}/[0-9]{1,2}/[0-9]{4})";
    let hosts = json!({"type": "array", "items": {"type": "string"}});
    let query = labels(json!({
        "query": text(1, 500),
        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        "timeout": {"type": "integer", "minimum": 1000, "maximum": 300_000},
        "sources": kinds(json!(["web", "images", "news"])),
        "categories": kinds(json!(["github", "research", "pdf"])),
        "includeDomains": hosts, "excludeDomains": hosts,
        // Comma-separated, blanks around a part and empty parts ignored.
        "tbs": {"type": "string", "pattern": format!("^\\s*{period}?\\s*(,\\s*{period}?\\s*)*$")},
        "country": {"type": "string", "pattern": "^[A-Za-z]{2}$"},
        "lang": text(1, 8), "location": label, "filter": label,
        "safe": {"type": "boolean"}, "ignoreInvalidURLs": {"type": "boolean"}, "highlights": {"type": "boolean"},
        "asyncScraping": {"enum": [false]},
        "scrapeOptions": {"$ref": "#/components/schemas/ScrapeOptions"},
    }));
    let mut search = exact(search::accepted_keys(), query, &["query"]);
    // One of the two lists of hosts, not both.
    search["not"] = json!({"required": ["includeDomains", "excludeDomains"]});
    body(doc, "/v2/search", "post", search, true);
    // A live view's input: a click at a fraction of the frame, a key, or typed text.
    let fraction = json!({"type": "number", "minimum": 0, "maximum": 1});
    let input = |kind: &str, mut properties: Value| {
        properties["type"] = json!({"type": "string", "enum": [kind]});
        let required: Vec<String> =
            properties.as_object().into_iter().flat_map(|p| p.keys().cloned()).collect();
        json!({"type": "object", "additionalProperties": false, "required": required, "properties": properties})
    };
    let inputs = json!({"oneOf": [
        input("click", json!({"x": fraction, "y": fraction})),
        input("key", json!({"key": {"type": "string", "minLength": 1}})),
        input("text", json!({"text": {"type": "string"}})),
    ]});
    body(doc, "/v2/live/{token}/input", "post", inputs, true);
    doc["paths"]["/v2/parse"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"] = json!({
        "type": "object", "required": ["file"],
        "properties": {"file": {"type": "string", "format": "binary"}, "options": {"type": "string"}},
    });
}

/// An unsigned field with no upper bound of its own: the generator writes it as a signed
/// 32- or 64-bit number with a least value, and the server reads it up to the unsigned
/// type's largest value.
fn unsigned(prop: &mut Value) {
    let largest = match prop["format"].as_str() {
        Some("int32") => json!(u32::MAX),
        Some("int64") => json!(u64::MAX),
        _ => return,
    };
    if prop["minimum"].as_u64().is_some() && prop.get("maximum").is_none() {
        prop["maximum"] = largest;
        if let Some(fields) = prop.as_object_mut() {
            fields.remove("format");
        }
    }
}

/// The URLs of the option types' request bodies: http(s) only.
fn http_urls(doc: &mut Value) {
    let schemas = &mut doc["components"]["schemas"];
    for name in ["ScrapeRequest", "CrawlRequest", "MapRequest"] {
        if schemas[name]["properties"]["url"].is_object() {
            schemas[name]["properties"]["url"]["pattern"] = json!(HTTP_URL);
        }
    }
    if schemas["BatchScrapeRequest"]["properties"]["urls"]["items"].is_object() {
        schemas["BatchScrapeRequest"]["properties"]["urls"]["items"]["pattern"] = json!(HTTP_URL);
    }
    for choice in schemas["Webhook"]["oneOf"].as_array_mut().into_iter().flatten() {
        if choice["type"] == "string" {
            choice["pattern"] = json!(HTTP_URL);
        } else if choice["properties"]["url"].is_object() {
            choice["properties"]["url"]["pattern"] = json!(HTTP_URL);
        }
    }
}

/// The hosted-service options among `props`, as the values this server takes.
fn off_when_hosted(props: &mut Map<String, Value>) {
    for (key, off) in [
        ("threatProtection", json!({"type": "null"})),
        ("useMock", json!({"type": "null"})),
        ("redactPII", json!({"enum": [false, null]})),
    ] {
        if let Some(prop) = props.get_mut(key) {
            *prop = keeping_description(prop, off);
        }
    }
}

/// The code languages of interact calls: those this server runs (`browser.code_languages`).
pub(super) fn code_languages(doc: &mut Value, languages: &[String]) {
    for path in
        ["/v2/scrape/{id}/interact", "/v2/browser/{sessionId}/execute", "/v2/interact/{sessionId}/execute"]
    {
        let schema = &mut doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"];
        if schema["properties"]["language"].is_object() {
            let mut allowed: Vec<Value> = languages.iter().map(|l| json!(l)).collect();
            allowed.push(Value::Null);
            schema["properties"]["language"]["enum"] = Value::Array(allowed);
        }
    }
}

/// Query parameters read into a set or a range.
fn parameters(doc: &mut Value) {
    let Some(paths) = doc["paths"].as_object_mut() else { return };
    for (path, item) in paths.iter_mut() {
        let Some(ops) = item.as_object_mut() else { continue };
        for op in ops.values_mut() {
            for param in op.get_mut("parameters").and_then(Value::as_array_mut).into_iter().flatten() {
                let name = param["name"].as_str().map(str::to_owned);
                let schema = &mut param["schema"];
                match (path.as_str(), name.as_deref()) {
                    (_, Some("skip")) | ("/v2/files/{name}", Some("expires")) => {
                        schema["minimum"] = json!(0);
                        schema["maximum"] = json!(u64::MAX);
                    }
                    ("/v2/browser" | "/v2/interact", Some("status")) => {
                        schema["enum"] = json!(["active", "destroyed"]);
                    }
                    _ => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON body schema of `method path`, its `$ref` followed.
    fn body_schema<'d>(doc: &'d Value, path: &str, method: &str) -> &'d Value {
        let schema = &doc["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"];
        match schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) {
            Some(name) => &doc["components"]["schemas"][name],
            None => schema,
        }
    }

    #[test]
    fn each_json_body_lists_exactly_the_keys_its_handler_accepts() {
        let doc = super::super::openapi::document(true);
        let execute: Vec<&str> =
            interact::accepted_keys().iter().copied().filter(|&k| k != "existingSessionId").collect();
        for (path, method, keys) in [
            ("/v2/support/docs-search", "post", support::accepted_keys().to_vec()),
            ("/v2/crawl/params-preview", "post", crawl_prompt::accepted_keys().to_vec()),
            ("/v2/extract", "post", llm_jobs::extract_keys().to_vec()),
            ("/v2/agent", "post", llm_jobs::agent_keys().to_vec()),
            ("/v2/browser", "post", browser::create_keys().to_vec()),
            ("/v2/interact", "post", browser::create_keys().to_vec()),
            ("/v2/scrape/{id}/interact", "post", interact::accepted_keys().to_vec()),
            ("/v2/browser/{sessionId}/execute", "post", execute.clone()),
            ("/v2/interact/{sessionId}/execute", "post", execute),
            ("/v2/search", "post", search::accepted_keys().to_vec()),
        ] {
            let schema = body_schema(&doc, path, method);
            let mut documented: Vec<&str> =
                schema["properties"].as_object().expect(path).keys().map(String::as_str).collect();
            let mut accepted = keys;
            documented.sort_unstable();
            accepted.sort_unstable();
            assert_eq!(documented, accepted, "{path}");
            assert_eq!(schema["additionalProperties"], json!(false), "{path}");
        }
        // Every JSON body of the document refuses keys it does not list.
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for method in item.as_object().expect("operations").keys() {
                let schema = body_schema(&doc, path, method);
                if schema["properties"].is_object() {
                    assert_eq!(schema["additionalProperties"], json!(false), "{method} {path}");
                }
            }
        }
    }

    #[test]
    fn what_the_server_takes_is_what_the_document_allows() {
        let doc = super::super::openapi::document(true);
        let schemas = &doc["components"]["schemas"];
        // Optional keys take null, as the handlers read them; required ones do not.
        let session = body_schema(&doc, "/v2/browser", "post");
        assert_eq!(session["properties"]["ttl"]["type"], json!(["integer", "null"]));
        assert_eq!(doc["paths"]["/v2/browser"]["post"]["requestBody"]["required"], json!(false));
        let question = body_schema(&doc, "/v2/support/docs-search", "post");
        assert_eq!(question["properties"]["question"]["type"], json!("string"));
        // Hosted-service options only when off, in option types and plain bodies alike.
        assert_eq!(schemas["ScrapeOptions"]["properties"]["threatProtection"]["type"], json!("null"));
        assert_eq!(schemas["ScrapeRequest"]["properties"]["redactPII"]["enum"], json!([false, null]));
        assert_eq!(
            body_schema(&doc, "/v2/agent", "post")["properties"]["threatProtection"]["type"],
            json!("null")
        );
        // URLs are http(s); a webhook may be null; sets and ranges are stated.
        assert_eq!(schemas["MapRequest"]["properties"]["url"]["pattern"], json!(HTTP_URL));
        assert!(schemas["Webhook"]["oneOf"].as_array().expect("oneOf").contains(&json!({"type": "null"})));
        assert_eq!(
            schemas["CrawlRequest"]["properties"]["sitemap"]["enum"],
            json!(["skip", "include", "only", null])
        );
        let status = &doc["paths"]["/v2/browser"]["get"]["parameters"][0];
        assert_eq!(
            (status["name"].as_str(), &status["schema"]["enum"]),
            (Some("status"), &json!(["active", "destroyed"]))
        );
        // Header names are tokens.
        assert!(schemas["ScrapeOptions"]["properties"]["headers"]["propertyNames"]["pattern"].is_string());
        // Formats are names or objects with their settings, wherever scrape options are.
        for name in ["ScrapeOptions", "ScrapeRequest", "BatchScrapeRequest"] {
            let formats = &schemas[name]["properties"]["formats"];
            assert_eq!(formats["anyOf"][1], json!({"type": "null"}), "{name}");
            let list = jsonschema::validator_for(formats).expect("a schema");
            assert!(list.is_valid(&Value::Null) && list.is_valid(&json!(["changeTracking", "markdown"])));
            assert!(!list.is_valid(&json!(["changeTracking"])), "what spans items is stated: {name}");
            let items = jsonschema::validator_for(&formats["anyOf"][0]["items"]).expect("a schema");
            assert!(items.is_valid(&json!("markdown")) && items.is_valid(&json!({"type": "screenshot"})));
            assert!(!items.is_valid(&json!("pdfText")) && !items.is_valid(&json!({"type": "links", "x": 1})));
            // Actions are described each by its type.
            let actions = &schemas[name]["properties"]["actions"];
            assert_eq!(actions["type"], json!(["array", "null"]), "{name}");
            let items = jsonschema::validator_for(&actions["items"]).expect("a schema");
            assert!(items.is_valid(&json!({"type": "click", "selector": "#buy"})), "{name}");
            assert!(!items.is_valid(&json!({"type": "click"})) && !items.is_valid(&json!({"type": "fly"})));
        }
        // A map's location is a location, as a scrape's is.
        let map = jsonschema::options()
            .build(&json!({"$ref": "#/components/schemas/MapRequest/properties/location",
            "components": doc["components"]}))
            .expect("a schema");
        assert!(map.is_valid(&json!({"country": "US"})) && map.is_valid(&Value::Null));
        assert!(!map.is_valid(&json!({"": "US"})) && !map.is_valid(&json!("US")));
        // A scrape's profile is described as a session's is.
        assert_eq!(schemas["ScrapeOptions"]["properties"]["profile"]["required"], json!(["name"]));
        // An interact call takes code or a prompt, not both.
        let work = body_schema(&doc, "/v2/browser/{sessionId}/execute", "post");
        assert_eq!(work["oneOf"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn a_server_without_a_model_documents_no_model_formats() {
        let names = |model: bool| {
            let built = super::super::openapi::OpenApiJson::build(&[], model);
            let doc: Value = serde_json::from_str(&built.0).expect("JSON");
            let items =
                &doc["components"]["schemas"]["ScrapeOptions"]["properties"]["formats"]["anyOf"][0]["items"];
            let checker = jsonschema::validator_for(items).expect("a schema");
            ["markdown", "summary", "json"].map(|name| checker.is_valid(&json!(name)))
        };
        assert_eq!(names(true), [true, true, true]);
        assert_eq!(names(false), [true, false, false]);
        // And nothing else changes: a crawl's own keys have no `formats`.
        let built = super::super::openapi::OpenApiJson::build(&[], false);
        let doc: Value = serde_json::from_str(&built.0).expect("JSON");
        assert!(doc["components"]["schemas"]["CrawlRequest"]["properties"].get("formats").is_none());
    }

    #[test]
    fn nullable_adds_null_once() {
        assert_eq!(nullable(json!({"type": "string"})), json!({"type": ["string", "null"]}));
        assert_eq!(nullable(json!({"type": ["string", "null"]})), json!({"type": ["string", "null"]}));
        assert_eq!(nullable(json!({"type": "null"})), json!({"type": "null"}));
        let either = json!({"oneOf": [{"$ref": "#/x"}, {"type": "null"}]});
        assert_eq!(nullable(either.clone()), either);
        assert_eq!(nullable(json!({"$ref": "#/x"})), json!({"anyOf": [{"$ref": "#/x"}, {"type": "null"}]}));
        assert_eq!(nullable(json!({"enum": [false]})), json!({"enum": [false, null]}));
        let ruled = json!({"type": "array", "allOf": [{"maxItems": 3}]});
        assert_eq!(nullable(ruled.clone()), json!({"anyOf": [ruled, {"type": "null"}]}));
        assert_eq!(
            nullable(json!({"type": "string", "enum": ["a"]})),
            json!({"type": ["string", "null"], "enum": ["a", null]})
        );
    }
}
