//! Uploaded files (`POST /v2/parse`): the same document building as a fetched page, with the
//! file name standing in for the URL, then the scrape's bookkeeping (id, credits, stored
//! result unless zero data retention) and the search index (as `file:///ID/NAME`, found by
//! the uploading team only).

use url::Url;

use super::{ScrapeError, Scraper, credits, document};
use crate::documents::Limits;
use crate::model::{Document, JobId, ProxyUsed, ScrapeOptions, TeamId};

/// An uploaded file to parse.
#[derive(Debug, Clone)]
pub struct Upload {
    /// The result's id.
    pub id: JobId,
    /// Owner.
    pub team: TeamId,
    /// The file name the client sent.
    pub file_name: String,
    /// The part's Content-Type, when sent.
    pub content_type: Option<String>,
    /// The file.
    pub bytes: Vec<u8>,
    /// Validated options.
    pub options: ScrapeOptions,
    /// Time spent waiting for the team's concurrency limit.
    pub queued_ms: Option<u64>,
}

/// The URL an upload's result names: `file:///NAME`.
fn upload_url(file_name: &str) -> Url {
    let mut url = Url::parse("file:///").expect("a constant URL");
    url.set_path(file_name);
    url
}

/// The result for a file, as `POST /v2/parse` builds it, without the bookkeeping (also what
/// `ferrocrawl parse FILE` prints).
pub fn convert_file(
    file_name: &str,
    content_type: Option<&str>,
    bytes: &[u8],
    options: &ScrapeOptions,
    limits: &Limits,
) -> Result<document::Built, ScrapeError> {
    let url = upload_url(file_name);
    let input = document::PageInput {
        source_url: file_name,
        final_url: &url,
        status: 200,
        content_type,
        body: bytes,
    };
    Ok(document::build(&input, options, false, limits)?)
}

impl Scraper {
    /// Converts an uploaded file into a result document.
    pub async fn parse_upload(&self, upload: Upload) -> Result<Document, ScrapeError> {
        let limits = crate::documents::Limits::of(&self.settings.documents);
        let Upload { id, team, file_name, content_type, bytes, options, queued_ms } = upload;
        let mut task_options = options.clone();
        // The model reads the file as Markdown, asked for or not.
        task_options.formats.markdown |= options.need_model();
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(options.timeout_ms);
        let name = file_name.clone();
        let kind = content_type.clone();
        let built = super::pool::convert(bytes.len(), move || {
            convert_file(&file_name, content_type.as_deref(), &bytes, &task_options, &limits)
        })
        .await??;
        let pdf_pages = built.pdf_pages;
        let mut doc = built.document;
        // Found by its own team only, under an address of its own (names repeat).
        if let Some(index) = &self.index
            && options.may_write_cache()
            && let Some(mut page) =
                crate::search::page::indexed(&doc, kind.as_deref(), &[], crate::model::time::now_ms())
        {
            let mut address = Url::parse("file:///").expect("a constant URL");
            address.set_path(&format!("{id}/{name}"));
            page.url = address.to_string();
            page.team = Some(team.as_str().to_owned());
            index.offer_entry(page);
        }
        if options.need_model() {
            let url = url::Url::parse("file:///upload")
                .and_then(|base| base.join(&name))
                .or_else(|_| url::Url::parse("file:///upload"));
            let job = super::ScrapeJob {
                id,
                team: team.clone(),
                url: url.map_err(|e| ScrapeError::Internal(e.to_string()))?,
                source_url: name,
                options: options.clone(),
                queued_ms,
            };
            let mut warnings = Vec::new();
            let work = super::llm_formats::apply(self.llm(), &job, &mut doc, &mut warnings, deadline);
            tokio::time::timeout_at(deadline, work)
                .await
                .map_err(|_| ScrapeError::Timeout { ms: options.timeout_ms })??;
            warnings.iter().for_each(|w| doc.add_warning(w));
        }
        let meta = &mut doc.metadata;
        meta.scrape_id = Some(id.to_string());
        meta.credits_used = credits::for_page(&options, ProxyUsed::Basic, pdf_pages);
        meta.concurrency_limited = queued_ms.is_some();
        meta.concurrency_queue_duration_ms = queued_ms;
        if !options.zero_data_retention {
            self.keep(id, &team, &mut doc)?;
        }
        Ok(doc)
    }
}
