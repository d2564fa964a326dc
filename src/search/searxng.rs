//! The `searxng` provider: a self-hosted SearXNG instance's JSON API
//! (`GET {search.searxng_url}/search?q=…&format=json`, its `json` output format enabled).
//!
//! Asked once per wanted source (`categories` general, images or news), page after page
//! (`pageno`) until `limit` results are in, a page brings nothing new, or
//! [`MAX_PAGES`] were read. The query goes as sent (SearXNG's engines read its operators);
//! the time range (`time_range`), language, safe search and the request's country are
//! passed on; domain and category filters are applied again to what comes back, so a
//! result never breaks them. The URL is the operator's own setting, so it is not held to
//! the address policy that guards the pages users ask for.

use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;

use super::{Found, ImageResult, NewsResult, Provider, SearchRequest, Source, WebResult};
use crate::config::Settings;

/// Most pages read per source.
pub const MAX_PAGES: u32 = 5;

/// SearXNG as a provider.
#[derive(Debug)]
pub struct SearXng {
    client: reqwest::Client,
    base: String,
}

#[derive(Debug, Deserialize)]
struct Page {
    #[serde(default)]
    results: Vec<Hit>,
}

#[derive(Debug, Deserialize)]
struct Hit {
    url: Option<String>,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: String,
    #[serde(rename = "publishedDate")]
    published_date: Option<String>,
    img_src: Option<String>,
    thumbnail_src: Option<String>,
    resolution: Option<String>,
}

impl SearXng {
    /// The provider of `search.searxng_url`.
    pub fn new(settings: &Settings) -> Result<Self, String> {
        let base = settings.search.searxng_url.trim_end_matches('/').to_owned();
        if base.is_empty() {
            return Err("search.searxng_url is not set".to_owned());
        }
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(settings.search.provider_timeout_ms))
            .user_agent(settings.scrape.user_agent.clone())
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self { client, base })
    }

    async fn page(&self, request: &SearchRequest, category: &str, pageno: u32) -> Result<Vec<Hit>, String> {
        let mut params: Vec<(&str, String)> = vec![
            ("q", request.raw.clone()),
            ("format", "json".to_owned()),
            ("pageno", pageno.to_string()),
            ("categories", category.to_owned()),
            ("safesearch", if request.safe { "2" } else { "0" }.to_owned()),
        ];
        if !request.language.is_empty() {
            let language = match request.country.as_str() {
                "" => request.language.clone(),
                country => format!("{}-{}", request.language, country.to_ascii_uppercase()),
            };
            params.push(("language", language));
        }
        if let Some(range) = request.tbs.range {
            let name = match range {
                'h' | 'd' => "day",
                'w' => "week",
                'm' => "month",
                _ => "year",
            };
            params.push(("time_range", name.to_owned()));
        }
        let mut url = url::Url::parse(&format!("{}/search", self.base)).map_err(|e| e.to_string())?;
        url.query_pairs_mut().extend_pairs(&params);
        let response = self.client.get(url).send().await.map_err(|e| {
            if e.is_timeout() { "it did not answer in time".to_owned() } else { e.to_string() }
        })?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("it answered HTTP {}", status.as_u16()));
        }
        let page: Page =
            response.json().await.map_err(|e| format!("its answer is not SearXNG JSON ({e})"))?;
        Ok(page.results)
    }

    /// Up to `limit` hits of `category` that pass the request's filters.
    async fn hits(&self, request: &SearchRequest, category: &str) -> Result<Vec<Hit>, String> {
        let mut kept: Vec<Hit> = Vec::new();
        for pageno in 1..=MAX_PAGES {
            let hits = self.page(request, category, pageno).await?;
            let before = kept.len();
            for hit in hits {
                let Some(url) = hit.url.as_deref() else { continue };
                if kept.iter().any(|k| k.url.as_deref() == Some(url)) || !passes(request, url) {
                    continue;
                }
                kept.push(hit);
                if kept.len() == request.limit {
                    return Ok(kept);
                }
            }
            if kept.len() == before {
                break;
            }
        }
        Ok(kept)
    }
}

/// Whether a result at `url` keeps the request's domain and category filters.
fn passes(request: &SearchRequest, url: &str) -> bool {
    let Some(host) = url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_ascii_lowercase)) else {
        return false;
    };
    let under = |domain: &String| {
        let domain = domain.to_ascii_lowercase();
        host == domain || host.ends_with(&format!(".{domain}"))
    };
    (request.include_domains.is_empty() || request.include_domains.iter().any(under))
        && !request.exclude_domains.iter().any(under)
        && (request.categories.is_empty() || request.categories.iter().any(|c| c.matches(url, "")))
}

fn category_of(request: &SearchRequest, url: &str) -> Option<String> {
    request.categories.iter().find(|c| c.matches(url, "")).map(|c| c.name().to_owned())
}

fn resolution(text: Option<&str>) -> (Option<u32>, Option<u32>) {
    let Some((w, h)) = text.and_then(|t| t.split_once(['x', '×'])) else {
        return (None, None);
    };
    (w.trim().parse().ok(), h.trim().parse().ok())
}

impl Provider for SearXng {
    fn name(&self) -> &'static str {
        "searxng"
    }

    fn search<'a>(&'a self, request: &'a SearchRequest) -> BoxFuture<'a, Result<Found, String>> {
        Box::pin(async move {
            let mut found = Found::default();
            for source in &request.sources {
                match source {
                    Source::Web => {
                        found.web = self
                            .hits(request, "general")
                            .await?
                            .into_iter()
                            .filter_map(|h| {
                                let url = h.url?;
                                let category = category_of(request, &url);
                                Some(WebResult { category, url, title: h.title, description: h.content })
                            })
                            .collect();
                    }
                    Source::News => {
                        found.news = self
                            .hits(request, "news")
                            .await?
                            .into_iter()
                            .filter_map(|h| {
                                Some(NewsResult {
                                    url: h.url?,
                                    title: h.title,
                                    snippet: h.content,
                                    date: h.published_date,
                                    image_url: h.img_src.or(h.thumbnail_src),
                                })
                            })
                            .collect();
                    }
                    Source::Images => {
                        found.images = self
                            .hits(request, "images")
                            .await?
                            .into_iter()
                            .filter_map(|h| {
                                let (width, height) = resolution(h.resolution.as_deref());
                                let image_url = h.img_src.or(h.thumbnail_src)?;
                                Some(ImageResult {
                                    title: h.title,
                                    image_url,
                                    image_width: width,
                                    image_height: height,
                                    url: h.url?,
                                })
                            })
                            .collect();
                    }
                }
            }
            Ok(found)
        })
    }
}
