//! Documents scraped from URLs: Word, OpenDocument, Excel and RTF files on the fixture site
//! become Markdown with their headings, lists, links and tables, and their properties in the
//! metadata, whether the server names the type or not; unreadable files get a clear 422, and
//! batches convert documents like pages.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::site::FixtureSite;
use crate::common::{TestServer, assert_error};

async fn markdown_of(app: &TestServer, url: String) -> (String, Value) {
    let (status, body) = app.scrape(json!({"url": url, "formats": ["markdown", "html"]})).await;
    assert_eq!(status, 200, "{body}");
    let data = &body["data"];
    (data["markdown"].as_str().expect("markdown").to_owned(), data["metadata"].clone())
}

#[tokio::test]
async fn word_files_keep_headings_lists_links_and_tables() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    for path in ["/docs/report.docx", "/docs/download"] {
        let (md, meta) = markdown_of(&app, site.url(path)).await;
        assert!(md.contains("# Harvest report"), "{path}: {md}");
        assert!(
            md.contains("Yields are up; see [the sales page](https://example.com/sales)"),
            "{path}: {md}"
        );
        assert!(md.contains("1. pick the beans\n2. dry the seeds"), "{path}: {md}");
        assert!(md.contains("| Crop | Kilograms |") && md.contains("| Beans | 120 |"), "{path}: {md}");
        assert_eq!(meta["title"], "Harvest 2026", "{path}");
        assert_eq!(meta["author"], "Ada Lovelace", "{path}");
        assert_eq!(meta["statusCode"], 200);
    }
}

#[tokio::test]
async fn opendocument_legacy_office_spreadsheets_and_rtf() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (md, meta) = markdown_of(&app, site.url("/docs/plan.odt")).await;
    assert!(md.contains("# Garden plan") && md.contains("Sow carrots in April."), "{md}");
    assert_eq!(meta["author"], "Grace Hopper");

    let (md, _) = markdown_of(&app, site.url("/docs/yields.xlsx")).await;
    let (first, second) =
        (md.find("## 2025").expect("first sheet"), md.find("## 2026").expect("second sheet"));
    assert!(first < second, "{md}");
    assert!(md.contains("| Crop | Kg |") && md.contains("| Peas | 80 |"), "{md}");

    let (md, _) = markdown_of(&app, site.url("/docs/report-office.odt")).await;
    assert!(md.contains("# Seed report\n\nGermination was good this spring."), "{md}");
    assert!(md.contains("- kale sprouted first\n- leeks were slow") && md.contains("| Kale | 4 |"), "{md}");

    let (md, _) = markdown_of(&app, site.url("/docs/report.doc")).await;
    assert!(md.contains("# Seed report") && md.contains("Germination was good this spring."), "{md}");
    assert!(md.contains("kale sprouted first") && md.contains("| Leek | 12 |"), "{md}");
    for path in ["/docs/yields-old", "/docs/yields.ods"] {
        let (md, _) = markdown_of(&app, site.url(path)).await;
        assert!(md.contains("| Crop | Kg |") && md.contains("| Peas | 80 |"), "{path}: {md}");
    }

    let (md, _) = markdown_of(&app, site.url("/docs/report.rtf")).await;
    assert!(md.contains("# Seed report\n\nGermination was good this spring."), "{md}");
    assert!(md.contains("- kale sprouted first\n- leeks were slow") && md.contains("| Leek | 12 |"), "{md}");

    let (md, meta) = markdown_of(&app, site.url("/docs/letter.rtf")).await;
    assert!(md.contains("Dear neighbour,\n\nThe fence is fixed."), "{md}");
    assert_eq!(meta["title"], "Letter");
}

#[tokio::test]
async fn pdfs_are_read_in_order_and_billed_per_page() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (status, body) = app.scrape(json!({"url": site.url("/docs/guide.pdf")})).await;
    assert_eq!(status, 200, "{body}");
    let md = body["data"]["markdown"].as_str().expect("markdown");
    assert!(
        md.starts_with("# Composting guide\n\n## Getting started\n\nTurn the heap every week, page 1 says."),
        "{md}"
    );
    let (p1, p3) = (md.find("page 1 says").expect("page 1"), md.find("page 3 says").expect("page 3"));
    assert!(p1 < p3, "{md}");
    assert!(md.contains("- greens: grass and peelings\n- browns: leaves and card"), "{md}");
    assert!(md.contains("| Month | Heap | Temperature |\n| --- | --- | --- |\n| May | A | 55 |"), "{md}");
    let meta = &body["data"]["metadata"];
    assert_eq!(meta["title"], "Composting");
    assert_eq!(meta["author"], "Rachel Carson");
    assert_eq!(meta["numPages"], 3);
    assert_eq!(meta["creditsUsed"], 3, "one credit per page");

    let limited = json!({"url": site.url("/docs/guide.pdf"), "parsers": [{"type": "pdf", "maxPages": 1}]});
    let (_, body) = app.scrape(limited).await;
    let md = body["data"]["markdown"].as_str().expect("markdown");
    assert!(md.contains("page 1 says") && !md.contains("page 2 says"), "{md}");
    assert_eq!(body["data"]["metadata"]["creditsUsed"], 1);
    assert!(body["data"]["warning"].as_str().expect("warning").contains("first 1 of 3 pages"));

    let (_, body) = app.scrape(json!({"url": site.url("/docs/guide.pdf"), "parsers": []})).await;
    let encoded = body["data"]["markdown"].as_str().expect("markdown");
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).expect("base64");
    assert!(bytes.starts_with(b"%PDF-"), "the whole file comes back");
    assert_eq!(body["data"]["metadata"]["creditsUsed"], 1, "flat rate");

    let (status, body) = app.scrape(json!({"url": site.url("/docs/scan")})).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["data"]["warning"].as_str().expect("warning").contains("no text layer"), "{body}");
}

#[tokio::test]
async fn unreadable_documents_get_a_clear_error() {
    let site = FixtureSite::start();
    let app = TestServer::builder().settings(|s| s.documents.max_unzipped_mb = 1).start().await;
    let got = app.scrape(json!({"url": site.url("/docs/broken.docx")})).await;
    let msg = assert_error(&got, 422, "SCRAPE_DOCUMENT_UNREADABLE");
    assert!(msg.contains("DOCX"), "{msg}");
    let got = app.scrape(json!({"url": site.url("/docs/locked.pdf")})).await;
    let msg = assert_error(&got, 422, "SCRAPE_DOCUMENT_UNREADABLE");
    assert!(msg.contains("encrypted"), "{msg}");
    let got = app.scrape(json!({"url": site.url("/docs/bomb.odt")})).await;
    let msg = assert_error(&got, 422, "SCRAPE_DOCUMENT_UNREADABLE");
    assert!(msg.contains("unpacks to more than 1048576 bytes"), "{msg}");
}

#[tokio::test]
async fn batches_convert_documents() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let urls = [site.url("/docs/report.docx"), site.url("/docs/yields.xlsx"), site.url("/docs/broken.docx")];
    let (status, body) =
        app.request(reqwest::Method::POST, "/v2/batch/scrape", Some(&json!({"urls": urls}))).await;
    assert_eq!(status, 200, "{body}");
    let id = body["id"].as_str().expect("id");
    let done = app.wait_job(&format!("/v2/batch/scrape/{id}"), Duration::from_secs(30)).await;
    assert_eq!(done["status"], "completed", "{done}");
    let pages = done["data"].as_array().expect("data");
    let markdown: Vec<&str> = pages.iter().filter_map(|p| p["markdown"].as_str()).collect();
    assert!(markdown.iter().any(|m| m.contains("# Harvest report")), "{done}");
    assert!(markdown.iter().any(|m| m.contains("| Peas | 80 |")), "{done}");
    let (_, errors) = app.request(reqwest::Method::GET, &format!("/v2/batch/scrape/{id}/errors"), None).await;
    let failed = errors["errors"].as_array().expect("errors");
    assert!(
        failed.iter().any(|e| e["url"].as_str().is_some_and(|u| u.ends_with("/docs/broken.docx"))),
        "{errors}"
    );
}

#[tokio::test]
async fn crawls_convert_the_documents_they_reach() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let (status, body) = app
        .request(
            reqwest::Method::POST,
            "/v2/crawl",
            Some(&json!({"url": site.url("/docs/library"), "sitemap": "skip", "crawlEntireDomain": true, "limit": 10})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let id = body["id"].as_str().expect("id");
    let done = app.wait_job(&format!("/v2/crawl/{id}"), Duration::from_secs(30)).await;
    assert_eq!(done["status"], "completed", "{done}");
    let pages = done["data"].as_array().expect("data");
    let by_url = |suffix: &str| {
        pages
            .iter()
            .find(|p| p["metadata"]["sourceURL"].as_str().is_some_and(|u| u.ends_with(suffix)))
            .unwrap_or_else(|| panic!("no page for {suffix}: {done}"))
    };
    assert!(by_url("/docs/report.docx")["markdown"].as_str().expect("md").contains("| Beans | 120 |"));
    let guide = by_url("/docs/guide.pdf");
    assert!(guide["markdown"].as_str().expect("md").contains("# Composting guide"), "{guide}");
    assert_eq!(guide["metadata"]["creditsUsed"], 3, "one credit per PDF page in a crawl too");
    assert!(by_url("/docs/yields.ods")["markdown"].as_str().expect("md").contains("| Peas | 80 |"));
    assert_eq!(pages.len(), 4, "the library page and its three documents: {done}");
}
