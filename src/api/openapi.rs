//! The OpenAPI document served at `/v2/openapi.json`. Schemas come from the same types the
//! handlers deserialize (so field names and ranges cannot drift), and the scrape request is
//! assembled from `url` plus the scrape options, exactly the key set the server accepts.

use actix_web::{HttpResponse, web};
use serde_json::{Value, json};
use utoipa::OpenApi;

use super::error::ErrorBody;
use super::health::{self, Health};
use super::options::{LocationBody, ScrapeOptionsBody};
use super::scrape::{self, ScrapeResponse};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "ferrocrawl API",
        description = "Self-hosted web content extraction speaking the Firecrawl v2 API.",
        version = env!("CARGO_PKG_VERSION")
    ),
    paths(scrape::scrape, scrape::get_scrape, health::health),
    components(schemas(ScrapeOptionsBody, LocationBody, ScrapeResponse, ErrorBody, Health))
)]
struct ApiDoc;

/// Builds the document as JSON.
pub fn document() -> Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_else(|_| json!({}));
    let options = doc["components"]["schemas"]["ScrapeOptions"].clone();
    let mut request = options;
    if let Some(props) = request.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert(
            "url".into(),
            json!({"type": "string", "format": "uri", "description": "The page to scrape (http or https)."}),
        );
    }
    request["required"] = json!(["url"]);
    request["additionalProperties"] = json!(false);
    doc["components"]["schemas"]["ScrapeRequest"] = request;
    doc["paths"]["/v2/scrape"]["post"]["requestBody"] = json!({
        "required": true,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ScrapeRequest"}}}
    });
    doc["components"]["securitySchemes"] = json!({
        "bearer": {"type": "http", "scheme": "bearer", "description": "An API key: `ferrocrawl keys create`"}
    });
    doc
}

/// Registers the route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/openapi.json").route(web::get().to(serve)));
}

async fn serve(doc: web::Data<OpenApiJson>) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(doc.0.clone())
}

/// The serialized document, built once at start-up.
#[derive(Debug, Clone)]
pub struct OpenApiJson(pub String);

impl OpenApiJson {
    /// Builds and serializes the document.
    pub fn build() -> Self {
        Self(document().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrape_request_lists_exactly_the_accepted_keys() {
        let doc = document();
        let props = doc["components"]["schemas"]["ScrapeRequest"]["properties"].as_object().expect("props");
        let mut documented: Vec<&str> = props.keys().map(String::as_str).collect();
        let mut accepted = scrape::accepted_keys();
        documented.sort_unstable();
        accepted.sort_unstable();
        assert_eq!(documented, accepted);
    }
}
