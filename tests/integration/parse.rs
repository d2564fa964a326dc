//! `POST /v2/parse`: uploaded documents become scrape results; missing files, unknown types,
//! options that make no sense for a file, oversized and corrupt uploads get clear errors.

use ferrocrawl::documents::samples::{self, PdfText};
use serde_json::{Value, json};

use crate::common::{KEY, TestServer, assert_error, decode, docpages};

/// One part of a form: name, file name, Content-Type, bytes.
pub(crate) type Part<'a> = (&'a str, Option<&'a str>, Option<&'a str>, &'a [u8]);

/// A `multipart/form-data` body and its Content-Type.
fn form(parts: &[Part<'_>]) -> (String, Vec<u8>) {
    let boundary = "ferrocrawl-test-boundary-7d9a";
    let mut body = Vec::new();
    for (name, file_name, content_type, bytes) in parts {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"").as_bytes(),
        );
        if let Some(f) = file_name {
            body.extend_from_slice(format!("; filename=\"{f}\"").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        if let Some(t) = content_type {
            body.extend_from_slice(format!("Content-Type: {t}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

pub(crate) async fn upload(app: &TestServer, parts: &[Part<'_>]) -> (u16, Value) {
    let (content_type, body) = form(parts);
    let resp = app
        .client()
        .post(format!("{}/v2/parse", app.base))
        .bearer_auth(KEY)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .expect("upload");
    decode(resp).await
}

#[tokio::test]
async fn uploads_become_documents() {
    let app = TestServer::start().await;
    let table = r#"<w:p><w:pPr><w:pStyle w:val="Title"/></w:pPr><w:r><w:t>Seed list</w:t></w:r></w:p><w:tbl><w:tr><w:tc><w:p><w:r><w:t>Seed</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Grams</w:t></w:r></w:p></w:tc></w:tr><w:tr><w:tc><w:p><w:r><w:t>Kale</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>5</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"#;
    let docx = samples::docx(table, "Seeds", "Vita Sackville-West");
    let (status, body) = upload(&app, &[("file", Some("seeds.docx"), None, &docx)]).await;
    assert_eq!(status, 200, "{body}");
    let md = body["data"]["markdown"].as_str().expect("markdown");
    assert!(md.contains("# Seed list") && md.contains("| Kale | 5 |"), "{md}");
    assert_eq!(body["data"]["metadata"]["sourceURL"], "seeds.docx");
    assert_eq!(body["data"]["metadata"]["author"], "Vita Sackville-West");
    assert_eq!(body["data"]["metadata"]["creditsUsed"], 1);
    let id = body["data"]["metadata"]["scrapeId"].as_str().expect("scrape id");
    let (status, stored) = app.request(reqwest::Method::GET, &format!("/v2/scrape/{id}"), None).await;
    assert_eq!(status, 200, "the result is stored like a scrape's: {stored}");

    let pages: Vec<Vec<PdfText>> = (1..=4)
        .map(|n| vec![PdfText { x: 72.0, y: 700.0, size: 11.0, text: format!("Section {n} of the manual.") }])
        .collect();
    let pdf = samples::pdf(&pages, "Manual", "");
    let options =
        json!({"formats": ["markdown", "links"], "parsers": [{"type": "pdf", "maxPages": 2}]}).to_string();
    let (status, body) = upload(
        &app,
        &[
            ("file", Some("manual.bin"), Some("application/octet-stream"), &pdf),
            ("options", None, None, options.as_bytes()),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let md = body["data"]["markdown"].as_str().expect("markdown");
    assert!(md.contains("Section 2 of the manual.") && !md.contains("Section 3"), "{md}");
    assert_eq!(body["data"]["metadata"]["numPages"], 4);
    assert_eq!(body["data"]["metadata"]["creditsUsed"], 2);

    let html = b"<html><head><title>Notes</title></head><body><main><h1>Pond</h1><p>Frogs arrived in March this year, earlier than ever.</p></main></body></html>";
    let (status, body) = upload(&app, &[("file", Some("notes.html"), Some("text/html"), html)]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["data"]["markdown"].as_str().expect("md").contains("Frogs arrived in March"), "{body}");
    assert_eq!(body["data"]["metadata"]["title"], "Notes");

    let resp = app
        .client()
        .get(format!("{}/v2/parse/formats", app.base))
        .bearer_auth(KEY)
        .send()
        .await
        .expect("get");
    let (status, formats) = decode(resp).await;
    assert_eq!(status, 200);
    let text = formats.to_string();
    assert!(text.contains(".pdf") && text.contains(".docx") && text.contains(".xlsx"), "{text}");
}

#[tokio::test]
async fn bad_uploads_get_clear_errors() {
    let app = TestServer::start().await;
    let options = br#"{"formats": ["markdown"]}"#;
    let got = upload(&app, &[("options", None, None, options)]).await;
    assert!(assert_error(&got, 400, "BAD_REQUEST").contains("Missing file upload"));

    let got =
        upload(&app, &[("file", Some("archive.zip"), Some("application/zip"), b"PK\x03\x04junk")]).await;
    let msg = assert_error(&got, 400, "UNSUPPORTED_FILE_TYPE");
    assert!(msg.contains(".pdf") && msg.contains(".docx"), "{msg}");

    let page = b"<p>hello</p>";
    let got =
        upload(&app, &[("file", Some("a.html"), None, page), ("options", None, None, b"{not json")]).await;
    assert!(assert_error(&got, 400, "BAD_REQUEST").contains("`options`"));
    let actions = br#"{"actions": [{"type": "wait", "milliseconds": 10}]}"#;
    let got = upload(&app, &[("file", Some("a.html"), None, page), ("options", None, None, actions)]).await;
    assert!(assert_error(&got, 400, "PARSE_UNSUPPORTED_OPTIONS").contains("options.actions"));
    let unknown = br#"{"formatz": ["markdown"]}"#;
    let got = upload(&app, &[("file", Some("a.html"), None, page), ("options", None, None, unknown)]).await;
    assert!(assert_error(&got, 400, "BAD_REQUEST").contains("`options.formatz`"));

    let got = upload(&app, &[("file", Some("broken.docx"), None, b"PK\x03\x04 cut short")]).await;
    assert!(assert_error(&got, 422, "SCRAPE_DOCUMENT_UNREADABLE").contains("DOCX"));
    let got = upload(&app, &[("file", Some("locked.pdf"), None, &samples::encrypted_pdf())]).await;
    assert!(assert_error(&got, 422, "SCRAPE_DOCUMENT_UNREADABLE").contains("encrypted"));

    let huge = vec![b'a'; (50 << 20) + 1];
    let got = upload(&app, &[("file", Some("huge.pdf"), None, &huge)]).await;
    assert!(assert_error(&got, 413, "PAYLOAD_TOO_LARGE").contains("50 MB"));

    let resp = app
        .client()
        .post(format!("{}/v2/parse", app.base))
        .bearer_auth(KEY)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("post");
    assert!(assert_error(&decode(resp).await, 400, "BAD_REQUEST").contains("multipart/form-data"));
}

#[tokio::test]
async fn every_office_format_uploads_as_it_scrapes() {
    let app = TestServer::start().await;
    let cases: [(&str, &str, &[&str]); 8] = [
        ("/docs/plan.odt", "plan.odt", &["# Garden plan", "Sow carrots in April."]),
        (
            "/docs/report-office.odt",
            "report.odt",
            &["# Seed report", "- kale sprouted first", "| Kale | 4 |"],
        ),
        ("/docs/report.doc", "report.doc", &["# Seed report", "kale sprouted first", "| Leek | 12 |"]),
        ("/docs/letter.rtf", "letter.rtf", &["Dear neighbour,\n\nThe fence is fixed."]),
        ("/docs/report.rtf", "report.rtf", &["# Seed report", "- leeks were slow", "| Leek | 12 |"]),
        ("/docs/yields.xlsx", "yields.xlsx", &["## 2025", "## 2026", "| Crop | Kg |", "| Peas | 80 |"]),
        ("/docs/yields-old", "yields.xls", &["| Crop | Kg |", "| Peas | 80 |"]),
        ("/docs/yields.ods", "yields.ods", &["| Crop | Kg |", "| Peas | 80 |"]),
    ];
    for (path, name, wanted) in cases {
        let (_, bytes) = docpages::page(path).expect("a fixture document");
        let (status, body) = upload(&app, &[("file", Some(name), None, &bytes)]).await;
        assert_eq!(status, 200, "{name}: {body}");
        let md = body["data"]["markdown"].as_str().expect("markdown");
        for text in wanted {
            assert!(md.contains(text), "{name} lacks {text:?}: {md}");
        }
        assert_eq!(body["data"]["metadata"]["sourceURL"], name);
        assert_eq!(body["data"]["metadata"]["creditsUsed"], 1, "{name}");
        match name {
            "plan.odt" => assert_eq!(body["data"]["metadata"]["author"], "Grace Hopper"),
            "letter.rtf" => assert_eq!(body["data"]["metadata"]["title"], "Letter"),
            _ => {}
        }
    }
}
