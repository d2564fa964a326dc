//! The local search index: a tantivy index in the data directory (`search/`) of every page
//! the server stores, and of the images those pages show.
//!
//! One tantivy document per page (`kind` = `page`) and one per image (`kind` = `image`,
//! its alt text as the title), both carrying the page's URL, so a page indexed again
//! replaces the page and its images in one delete. Hosts are indexed with every parent
//! domain (`docs.example.com`, `example.com`, `com`) and paths with every prefix, so
//! `site:` is one term lookup; URLs are also split into words for `inurl:`. Text is split
//! into lowercased words (tantivy's `default` tokenizer: no stemming, which would double
//! the indexing cost for little gain on the words a search names); titles weigh more than
//! descriptions, descriptions more than body text. The writer is used by one
//! [`super::indexer`] at a time (tantivy's lock), and its threads run at a lower
//! scheduling priority than the crawl's, so indexing takes the CPU a crawl leaves.

use std::path::Path;
use std::sync::Mutex;

use tantivy::collector::TopDocs;
use tantivy::query::{Query as TantivyQuery, TermQuery};
use tantivy::schema::{
    DateOptions, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TEXT, TextFieldIndexing,
    TextOptions, Value,
};
use tantivy::{DateTime, Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term, doc};

use super::files::ReadDirectory;

/// What the index keeps of one stored page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexedPage {
    /// The page's URL (after redirects).
    pub url: String,
    /// Its title.
    pub title: String,
    /// Its description.
    pub description: String,
    /// Its main content as text (Markdown).
    pub text: String,
    /// Declared language (`en`, `de-DE`…), lowercased.
    pub language: String,
    /// `html`, `pdf`, `docx`…
    pub file_type: String,
    /// When it says it was published, epoch ms.
    pub published_ms: Option<i64>,
    /// Whether it declares itself an article (news results).
    pub article: bool,
    /// When it was fetched, epoch ms.
    pub fetched_ms: i64,
    /// Images the page shows.
    pub images: Vec<IndexedImage>,
    /// Its lead image (`og:image`, else its first image), shown with news results.
    pub lead_image: Option<String>,
    /// The only team that may find it (an uploaded file); `None`: every team (a web page).
    pub team: Option<String>,
}

/// An image of a page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexedImage {
    /// Absolute URL.
    pub url: String,
    /// Alt text.
    pub alt: String,
    /// Width and height from the page's attributes, when it gives them.
    pub width: Option<u32>,
    /// See `width`.
    pub height: Option<u32>,
}

/// The index's fields.
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    /// `page` or `image`.
    pub kind: Field,
    /// The page's URL, exact.
    pub url: Field,
    /// The host with its parent domains and path prefixes (`site:`).
    pub site: Field,
    /// The URL's words (`inurl:`).
    pub url_words: Field,
    /// Title (an image's alt text).
    pub title: Field,
    /// Description (an image's page title).
    pub description: Field,
    /// Main content text.
    pub text: Field,
    /// Primary language subtag.
    pub language: Field,
    /// `html`, `pdf`…
    pub file_type: Field,
    /// Declared publication time.
    pub published: Field,
    /// 1 for an article.
    pub article: Field,
    /// Fetch time.
    pub fetched: Field,
    /// The published date, else the fetch time: what time filters and date order use.
    pub date: Field,
    /// An image's URL.
    pub image_url: Field,
    /// An image's width, when known.
    pub width: Field,
    /// An image's height, when known.
    pub height: Field,
    /// Set on a page one team only may find: [`PRIVATE`] and that team's id. Pages every
    /// team may find have none, so the filter only has the few private pages to look at.
    pub team: Field,
}

/// The `team` term every page of a single team carries.
pub const PRIVATE: &str = "*private";

/// Marks `document` as findable by `team` only, when it belongs to one.
fn mark_private(document: &mut TantivyDocument, field: Field, team: Option<&str>) {
    if let Some(team) = team {
        document.add_text(field, PRIVATE);
        document.add_text(field, team);
    }
}

/// An index opened for reading and writing.
pub struct SearchIndex {
    index: Index,
    reader: IndexReader,
    /// None when opened for reading only (the server holds the writer).
    writer: Option<Mutex<IndexWriter>>,
    /// The fields.
    pub fields: Fields,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex").finish_non_exhaustive()
    }
}

/// Memory the writer may buffer before it writes a segment.
const WRITER_BYTES: usize = 64 << 20;

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let stemmed = TextOptions::default()
        .set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer("default")
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        )
        .set_stored();
    let stemmed_unstored = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("default")
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let date = DateOptions::default().set_indexed().set_fast().set_stored();
    let fields = Fields {
        kind: b.add_text_field("kind", STRING | STORED),
        url: b.add_text_field("url", STRING | STORED),
        site: b.add_text_field("site", STRING),
        url_words: b.add_text_field("url_words", TEXT),
        title: b.add_text_field("title", stemmed.clone()),
        description: b.add_text_field("description", stemmed),
        text: b.add_text_field("text", stemmed_unstored),
        language: b.add_text_field("language", STRING | STORED),
        file_type: b.add_text_field("file_type", STRING | STORED),
        published: b.add_date_field("published", date.clone()),
        article: b.add_u64_field("article", INDEXED | STORED),
        fetched: b.add_date_field("fetched", date.clone()),
        date: b.add_date_field("date", date),
        image_url: b.add_text_field("image_url", STRING | STORED),
        width: b.add_u64_field("width", INDEXED | STORED | tantivy::schema::FAST),
        height: b.add_u64_field("height", INDEXED | STORED | tantivy::schema::FAST),
        team: b.add_text_field("team", STRING),
    };
    (b.build(), fields)
}

impl SearchIndex {
    /// Opens the index in `dir` for reading and writing, creating it when missing. One
    /// process at a time may (tantivy's lock file): the server, or `index rebuild`.
    pub fn open(dir: &Path) -> tantivy::Result<Self> {
        Self::open_with(dir, true)
    }

    /// Opens the index in `dir` for searching only, as it was last committed (a running
    /// server may hold the writer).
    pub fn open_read_only(dir: &Path) -> tantivy::Result<Self> {
        Self::open_with(dir, false)
    }

    /// An empty index in memory (the documentation's passages).
    pub fn in_memory() -> tantivy::Result<Self> {
        let (schema, fields) = schema();
        let index = Index::create_in_ram(schema);
        let writer = Some(Mutex::new(index.writer_with_num_threads(1, 15 << 20)?));
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        Ok(Self { index, reader, writer, fields })
    }

    fn open_with(dir: &Path, write: bool) -> tantivy::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let (schema, fields) = schema();
        // The writer's view first: it creates the index, or puts a damaged one aside.
        let writer = match write {
            true => Some(Mutex::new(low_priority_writer(&writable(dir, schema.clone())?)?)),
            false => None,
        };
        let index = Index::open_or_create(tantivy::directory::MmapDirectory::open(dir)?, schema)?;
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        Ok(Self { index, reader, writer, fields })
    }

    fn writer(&self) -> tantivy::Result<std::sync::MutexGuard<'_, IndexWriter>> {
        let writer = self.writer.as_ref().ok_or_else(|| {
            tantivy::TantivyError::InvalidArgument("the index was opened for reading only".to_owned())
        })?;
        Ok(writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Adds `pages`, replacing earlier versions of them; searchable after the next
    /// [`SearchIndex::commit`].
    pub fn add(&self, pages: &[IndexedPage]) -> tantivy::Result<()> {
        let f = self.fields;
        let writer = self.writer()?;
        for page in pages {
            writer.delete_term(Term::from_field_text(f.url, &page.url));
            let Ok(url) = url::Url::parse(&page.url) else { continue };
            let mut document = doc!(
                f.kind => "page",
                f.url => page.url.as_str(),
                f.url_words => url_words(&url),
                f.title => page.title.as_str(),
                f.description => page.description.as_str(),
                f.text => page.text.as_str(),
                f.language => page.language.as_str(),
                f.file_type => page.file_type.as_str(),
                f.article => u64::from(page.article),
                f.fetched => DateTime::from_timestamp_millis(page.fetched_ms),
                f.date => DateTime::from_timestamp_millis(page.published_ms.unwrap_or(page.fetched_ms)),
            );
            add_site_terms(&mut document, f.site, &url);
            if let Some(ms) = page.published_ms {
                document.add_date(f.published, DateTime::from_timestamp_millis(ms));
            }
            if let Some(lead) = &page.lead_image {
                document.add_text(f.image_url, lead);
            }
            mark_private(&mut document, f.team, page.team.as_deref());
            writer.add_document(document)?;
            for image in &page.images {
                let mut document = doc!(
                    f.kind => "image",
                    f.url => page.url.as_str(),
                    f.url_words => url_words(&url),
                    f.image_url => image.url.as_str(),
                    f.title => image.alt.as_str(),
                    f.description => page.title.as_str(),
                    f.file_type => page.file_type.as_str(),
                    f.fetched => DateTime::from_timestamp_millis(page.fetched_ms),
                    f.date => DateTime::from_timestamp_millis(page.published_ms.unwrap_or(page.fetched_ms)),
                );
                add_site_terms(&mut document, f.site, &url);
                mark_private(&mut document, f.team, page.team.as_deref());
                if let (Some(w), Some(h)) = (image.width, image.height) {
                    document.add_u64(f.width, u64::from(w));
                    document.add_u64(f.height, u64::from(h));
                }
                writer.add_document(document)?;
            }
        }
        Ok(())
    }

    /// Makes what was added searchable (and durable).
    pub fn commit(&self) -> tantivy::Result<()> {
        let mut writer = self.writer()?;
        writer.commit()?;
        drop(writer);
        self.reader.reload()
    }

    /// Removes every page fetched before `cutoff_ms` (the page cache's retention).
    pub fn prune(&self, cutoff_ms: i64) -> tantivy::Result<()> {
        let range = tantivy::query::RangeQuery::new(
            std::ops::Bound::Unbounded,
            std::ops::Bound::Excluded(Term::from_field_date(
                self.fields.fetched,
                DateTime::from_timestamp_millis(cutoff_ms),
            )),
        );
        let mut writer = self.writer()?;
        writer.delete_query(Box::new(range))?;
        writer.commit()?;
        drop(writer);
        self.reader.reload()
    }

    /// Removes everything (before a rebuild).
    pub fn clear(&self) -> tantivy::Result<()> {
        let mut writer = self.writer()?;
        writer.delete_all_documents()?;
        writer.commit()?;
        drop(writer);
        self.reader.reload()
    }

    /// How many documents hold `term` (for benchmarks and diagnostics).
    pub fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        self.reader.searcher().doc_freq(term)
    }

    /// Pages in the index.
    pub fn pages(&self) -> u64 {
        let query = TermQuery::new(Term::from_field_text(self.fields.kind, "page"), IndexRecordOption::Basic);
        query.count(&self.reader.searcher()).map_or(0, |n| n as u64)
    }

    /// The best `limit` documents for `query`, with their scores, after skipping `offset`.
    pub fn top(
        &self,
        query: &dyn TantivyQuery,
        offset: usize,
        limit: usize,
    ) -> tantivy::Result<Vec<(f32, TantivyDocument)>> {
        let searcher = self.reader.searcher();
        let top = searcher.search(query, &TopDocs::with_limit(limit).and_offset(offset).order_by_score())?;
        top.into_iter().map(|(score, address)| Ok((score, searcher.doc(address)?))).collect()
    }

    /// The documents of `query` in the order of a date field, newest first.
    pub fn newest(
        &self,
        query: &dyn TantivyQuery,
        field: &str,
        limit: usize,
    ) -> tantivy::Result<Vec<TantivyDocument>> {
        let searcher = self.reader.searcher();
        let top = searcher.search(
            query,
            &TopDocs::with_limit(limit).order_by_fast_field::<DateTime>(field, tantivy::Order::Desc),
        )?;
        top.into_iter().map(|(_, address)| searcher.doc(address)).collect()
    }

    /// The underlying tantivy index (query parsing, tokenizers).
    pub fn tantivy(&self) -> &Index {
        &self.index
    }

    /// Reads a stored text field.
    pub fn text_of(&self, document: &TantivyDocument, field: Field) -> String {
        document.get_first(field).and_then(|v| v.as_str()).unwrap_or_default().to_owned()
    }

    /// Reads a stored number field.
    pub fn number_of(&self, document: &TantivyDocument, field: Field) -> Option<u64> {
        document.get_first(field).and_then(|v| v.as_u64())
    }

    /// Reads a stored date field as epoch ms.
    pub fn date_of(&self, document: &TantivyDocument, field: Field) -> Option<i64> {
        document.get_first(field).and_then(|v| v.as_datetime()).map(|d| d.into_timestamp_millis())
    }
}

/// The index in `dir` as its writer sees it (files read into buffers, not mapped: see
/// [`ReadDirectory`]), created when missing.
fn writable(dir: &Path, schema: Schema) -> tantivy::Result<Index> {
    match Index::open_or_create(ReadDirectory::open(dir)?, schema.clone()) {
        Ok(index) => Ok(index),
        // An index of another build's layout (or damaged): it is derived data, so the
        // server starts with an empty one and keeps the old beside it; `ferrocrawl index
        // rebuild` fills the new one from the page cache.
        Err(e) => {
            let aside = dir.with_extension(format!("old-{}", crate::model::time::now_ms()));
            tracing::warn!(error = %e, kept = %aside.display(), "the search index could not be opened; starting an empty one (run `ferrocrawl index rebuild`)");
            std::fs::rename(dir, &aside)?;
            std::fs::create_dir_all(dir)?;
            Index::create(ReadDirectory::open(dir)?, schema, tantivy::IndexSettings::default())
        }
    }
}

/// The index's writer, made on a thread of lowered priority: the threads tantivy starts for
/// it (indexing, merging) inherit that priority (on Linux it belongs to each thread and
/// passes to the threads it creates).
fn low_priority_writer(index: &Index) -> tantivy::Result<IndexWriter> {
    let index = index.clone();
    std::thread::spawn(move || {
        crate::process::priority::lower(crate::process::priority::Priority::Idle);
        index.writer_with_num_threads(1, WRITER_BYTES)
    })
    .join()
    .unwrap_or_else(|_| {
        Err(tantivy::TantivyError::SystemError("the index writer's thread panicked".to_owned()))
    })
}

/// Every parent domain of the URL's host, and the host with every path prefix (up to four
/// segments): `docs.example.com`, `example.com`, `com`, `docs.example.com/api`…
fn add_site_terms(document: &mut TantivyDocument, field: Field, url: &url::Url) {
    let host = url.host_str().unwrap_or_default().trim_start_matches("www.").to_ascii_lowercase();
    // An address has no parent domains.
    let labels: Vec<&str> = match url.host() {
        Some(url::Host::Domain(_)) => host.split('.').collect(),
        _ => vec![host.as_str()],
    };
    let segments: Vec<&str> = url.path().split('/').filter(|s| !s.is_empty()).collect();
    for start in 0..labels.len() {
        let domain = labels[start..].join(".");
        let mut path = String::new();
        document.add_text(field, &domain);
        for segment in segments.iter().take(4) {
            path.push('/');
            path.push_str(&segment.to_ascii_lowercase());
            document.add_text(field, format!("{domain}{path}"));
        }
    }
}

/// The URL as words: host labels, path segments and query words.
fn url_words(url: &url::Url) -> String {
    let mut words = String::new();
    for part in [url.host_str().unwrap_or_default(), url.path(), url.query().unwrap_or_default()] {
        words.push(' ');
        words.extend(part.chars().map(|c| if c.is_alphanumeric() { c } else { ' ' }));
    }
    words
}

/// The site term `site:` looks up for `value` (`www.` dropped, lowercased).
pub fn site_term(value: &str) -> String {
    value.trim_start_matches("www.").to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_of_another_layout_is_set_aside_and_a_new_one_starts() {
        let data = tempfile::tempdir().expect("tempdir");
        let dir = data.path().join("search");
        std::fs::create_dir_all(&dir).expect("dir");
        let mut other = Schema::builder();
        other.add_text_field("something_else", STRING | STORED);
        let old = Index::create_in_dir(&dir, other.build()).expect("an index of another layout");
        drop(old);
        let index = SearchIndex::open(&dir).expect("opened anew");
        let page = IndexedPage {
            url: "http://site.test/a".into(),
            title: "A page".into(),
            fetched_ms: 1,
            ..IndexedPage::default()
        };
        index.add(&[page]).expect("add");
        index.commit().expect("commit");
        assert_eq!(index.pages(), 1);
        let kept: Vec<String> = std::fs::read_dir(data.path())
            .expect("list")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|name| name.starts_with("search.old-"))
            .collect();
        assert_eq!(kept.len(), 1, "the old index is kept beside: {kept:?}");
    }

    /// Segments merged by the writer (which reads them with positional reads, not maps)
    /// keep every page, their phrases (positions) and stored fields, and the merged index
    /// opens again.
    #[test]
    fn merged_segments_keep_every_page_and_phrase() {
        let data = tempfile::tempdir().expect("tempdir");
        let dir = data.path().join("search");
        let index = SearchIndex::open(&dir).expect("open");
        for commit in 0..6 {
            let pages: Vec<IndexedPage> = (0..50)
                .map(|n| IndexedPage {
                    url: format!("http://site.test/{commit}/{n}"),
                    title: format!("Page {n} of batch {commit}"),
                    text: format!("the quick brown fox number {n} jumps over batch {commit}"),
                    fetched_ms: 1,
                    ..IndexedPage::default()
                })
                .collect();
            index.add(&pages).expect("add");
            index.commit().expect("commit");
        }
        let segments = index.tantivy().searchable_segment_ids().expect("segments");
        assert!(segments.len() >= 2, "one segment per commit: {segments:?}");
        index.writer().expect("writer").merge(&segments).wait().expect("merge");
        index.commit().expect("commit");
        let phrase = |index: &SearchIndex, words: &[&str]| {
            let terms = words.iter().map(|w| Term::from_field_text(index.fields.text, w)).collect();
            index.top(&tantivy::query::PhraseQuery::new(terms), 0, 1000).expect("search")
        };
        let check = |index: &SearchIndex| {
            assert_eq!(index.tantivy().searchable_segment_ids().expect("segments").len(), 1);
            assert_eq!(index.pages(), 300);
            assert_eq!(phrase(index, &["quick", "brown", "fox"]).len(), 300);
            let found = phrase(index, &["number", "7", "jumps"]);
            let mut urls: Vec<String> =
                found.iter().map(|(_, d)| index.text_of(d, index.fields.url)).collect();
            urls.sort();
            assert_eq!(urls, (0..6).map(|c| format!("http://site.test/{c}/7")).collect::<Vec<_>>());
            assert!(phrase(index, &["fox", "quick"]).is_empty(), "words out of order are no phrase");
        };
        check(&index);
        drop(index);
        check(&SearchIndex::open_read_only(&dir).expect("reopened"));
    }
}
