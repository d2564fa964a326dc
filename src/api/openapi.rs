//! The OpenAPI document served at `/v2/openapi.json`. Schemas come from the same types the
//! handlers deserialize (so field names and ranges cannot drift), and each request schema is
//! assembled from `url` plus its options, exactly the key set the server accepts.

use actix_web::{HttpResponse, web};
use serde_json::{Value, json};
use utoipa::OpenApi;

use super::batch::{self, StartedBatch};
use super::crawl::{self, StartedJob};
use super::crawl_body::CrawlBody;
use super::error::ErrorBody;
use super::health::{self, Health, Readiness};
use super::map::{self, MapBody};
use super::options::{LocationBody, ScrapeOptionsBody};
use super::parse;
use super::scrape::{self, ScrapeResponse};
use super::search;
use super::{browser, interact};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "ferrocrawl API",
        description = "Self-hosted web content extraction speaking the Firecrawl v2 API.",
        version = env!("CARGO_PKG_VERSION")
    ),
    paths(
        scrape::scrape,
        scrape::get_scrape,
        interact::interact,
        interact::stop_interact,
        interact::delete_session,
        browser::create,
        browser::list,
        browser::execute,
        crawl::start,
        crawl::status,
        batch::start,
        map::map_site,
        search::search_route,
        parse::parse,
        parse::formats,
        health::health,
        health::ready
    ),
    components(schemas(ScrapeOptionsBody, LocationBody, ScrapeResponse, CrawlBody, MapBody, StartedJob, StartedBatch, ErrorBody, Health, Readiness))
)]
struct ApiDoc;

/// Builds the document as JSON, for a server with a language model or without (`model`).
pub fn document(model: bool) -> Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_else(|_| json!({}));
    request_schema(
        &mut doc,
        "ScrapeOptions",
        "ScrapeRequest",
        "/v2/scrape",
        "The page to scrape (http or https).",
    );
    request_schema(
        &mut doc,
        "CrawlOptions",
        "CrawlRequest",
        "/v2/crawl",
        "The URL to start from (http or https).",
    );
    request_schema(&mut doc, "MapOptions", "MapRequest", "/v2/map", "The site to map (http or https).");
    batch_schema(&mut doc);
    // A target whose name does not resolve is reported with 200 and the error envelope,
    // as Firecrawl does.
    let ok =
        &mut doc["paths"]["/v2/scrape"]["post"]["responses"]["200"]["content"]["application/json"]["schema"];
    *ok = json!({"oneOf": [ok.take(), {"$ref": "#/components/schemas/ErrorBody"}]});
    super::openapi_routes::add(&mut doc);
    super::openapi_links::add(&mut doc);
    super::openapi_bodies::tighten(&mut doc, model);
    doc["components"]["securitySchemes"] = json!({
        "bearer": {"type": "http", "scheme": "bearer", "description": "An API key: `ferrocrawl keys create`"}
    });
    doc
}

/// Adds schema `request` (`url` plus the properties of `options`) and makes it the request
/// body of `POST path`.
fn request_schema(doc: &mut Value, options: &str, request: &str, path: &str, url_doc: &str) {
    let mut schema = doc["components"]["schemas"][options].clone();
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert("url".into(), json!({"type": "string", "format": "uri", "description": url_doc}));
    }
    schema["required"] = json!(["url"]);
    schema["additionalProperties"] = json!(false);
    doc["components"]["schemas"][request] = schema;
    doc["paths"][path]["post"]["requestBody"] = json!({
        "required": true,
        "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{request}")}}}
    });
}

/// `BatchScrapeRequest`: `urls` and the batch keys plus the scrape options (flat).
fn batch_schema(doc: &mut Value) {
    let mut schema = doc["components"]["schemas"]["ScrapeOptions"].clone();
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert("urls".into(), json!({"type": "array", "items": {"type": "string", "format": "uri"}, "minItems": 1, "description": "The pages to scrape."}));
        props.insert("webhook".into(), json!({"type": "object", "description": "Where to send events: a URL or {url, headers, metadata, events}."}));
        props.insert("maxConcurrency".into(), json!({"type": "integer", "minimum": 1, "description": "Most pages fetched at once for this batch."}));
        props.insert("ignoreInvalidURLs".into(), json!({"type": "boolean", "description": "Skip invalid URLs and list them (default true) instead of failing."}));
        props.insert("appendToId".into(), json!({"type": "string", "format": "uuid", "description": "Add the URLs to this batch of the team."}));
    }
    schema["required"] = json!(["urls"]);
    schema["additionalProperties"] = json!(false);
    doc["components"]["schemas"]["BatchScrapeRequest"] = schema;
    doc["paths"]["/v2/batch/scrape"]["post"]["requestBody"] = json!({
        "required": true,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/BatchScrapeRequest"}}}
    });
}

/// Registers the route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/openapi.json").route(web::get().to(serve)));
}

async fn serve(doc: web::Data<OpenApiJson>) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(doc.0.clone())
}

/// The serialized document, built once at start-up, and the methods of each route.
#[derive(Debug, Clone)]
pub struct OpenApiJson(pub String, std::collections::HashMap<String, String>);

impl OpenApiJson {
    /// Builds and serializes the document, for a server that runs code in `languages` and
    /// has a language model or not (`model`).
    pub fn build(languages: &[String], model: bool) -> Self {
        let mut doc = document(model);
        super::openapi_bodies::code_languages(&mut doc, languages);
        let methods = super::openapi_routes::methods(&doc);
        Self(doc.to_string(), methods)
    }

    /// The methods the route `template` (as matched, e.g. `/v2/crawl/{id}`) allows.
    pub fn allowed(&self, template: &str) -> Option<&str> {
        self.1.get(template).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_schemas_list_exactly_the_accepted_keys() {
        let doc = document(true);
        for (schema, mut accepted) in [
            ("ScrapeRequest", scrape::accepted_keys()),
            ("CrawlRequest", crawl::accepted_keys()),
            ("MapRequest", map::accepted_keys()),
            ("BatchScrapeRequest", batch::accepted_keys()),
        ] {
            let props = doc["components"]["schemas"][schema]["properties"].as_object().expect("props");
            let mut documented: Vec<&str> = props.keys().map(String::as_str).collect();
            documented.sort_unstable();
            accepted.sort_unstable();
            assert_eq!(documented, accepted, "{schema}");
        }
    }
}
