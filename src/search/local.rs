//! The `local` provider: answers from the server's own index ([`super::index`]).
//!
//! Plain words must all match (in the title, the description or the text; when none of
//! the pages has them all, any of them will do), ranked by BM25 with the title weighing
//! most; "phrases" match in order; site:, filetype:, inurl:, intitle: and their negations
//! are exact filters, never a ranking hint, so a result never breaks them. `related:`
//! ranks pages by the words of the named page's title and description, its site first.
//! Images come from the indexed pages' images (alt text, size where the page gave it),
//! news from pages that declare themselves articles with a date.

use std::ops::Bound;
use std::sync::Arc;

use futures::future::BoxFuture;
use tantivy::TantivyDocument;
use tantivy::query::{
    BooleanQuery, BoostQuery, Occur, PhraseQuery, Query as TantivyQuery, RangeQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DateTime, Term};

use super::index::{SearchIndex, site_term};
use super::query::Part;
use super::{Category, Found, ImageResult, NewsResult, Provider, SearchRequest, Source, WebResult};
use crate::model::time;

type Clause = (Occur, Box<dyn TantivyQuery>);

/// The local index as a provider.
#[derive(Debug)]
pub struct Local {
    index: Arc<SearchIndex>,
}

impl Local {
    /// The provider over `index`.
    pub fn new(index: Arc<SearchIndex>) -> Self {
        Self { index }
    }
}

impl Provider for Local {
    fn name(&self) -> &'static str {
        "local"
    }

    fn reaches_web(&self) -> bool {
        false
    }

    fn search<'a>(&'a self, request: &'a SearchRequest) -> BoxFuture<'a, Result<Found, String>> {
        let (index, request) = (Arc::clone(&self.index), request.clone());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || search(&index, &request).map_err(|e| e.to_string()))
                .await
                .map_err(|e| e.to_string())?
        })
    }
}

/// Runs `request` against `index`.
pub fn search(index: &SearchIndex, request: &SearchRequest) -> tantivy::Result<Found> {
    let mut found = Found::default();
    for source in &request.sources {
        match source {
            Source::Web => found.web = web(index, request, false)?.into_iter().map(|(r, _)| r).collect(),
            Source::News => found.news = news(index, request)?,
            Source::Images => found.images = images(index, request)?,
        }
    }
    Ok(found)
}

fn web(
    index: &SearchIndex,
    request: &SearchRequest,
    articles: bool,
) -> tantivy::Result<Vec<(WebResult, TantivyDocument)>> {
    let f = index.fields;
    let mut filters = filters(index, request, "page")?;
    if articles {
        filters.push((
            Occur::Must,
            Box::new(TermQuery::new(Term::from_field_u64(f.article, 1), IndexRecordOption::Basic)),
        ));
        filters
            .push((Occur::Must, Box::new(tantivy::query::ExistsQuery::new("published".to_owned(), false))));
    }
    let documents = ranked(index, request, filters)?;
    Ok(documents
        .into_iter()
        .filter_map(|document| {
            let url = index.text_of(&document, f.url);
            let file_type = index.text_of(&document, f.file_type);
            let category = match request.categories.as_slice() {
                [] => None,
                categories => {
                    Some(categories.iter().find(|c| c.matches(&url, &file_type))?.name().to_owned())
                }
            };
            let title = index.text_of(&document, f.title);
            let description = index.text_of(&document, f.description);
            Some((WebResult { url, title, description, category }, document))
        })
        .collect())
}

fn news(index: &SearchIndex, request: &SearchRequest) -> tantivy::Result<Vec<NewsResult>> {
    let f = index.fields;
    Ok(web(index, request, true)?
        .into_iter()
        .map(|(result, document)| NewsResult {
            title: result.title,
            snippet: result.description,
            url: result.url,
            date: index
                .date_of(&document, f.published)
                .and_then(|ms| u64::try_from(ms).ok())
                .map(time::iso_ms),
            image_url: Some(index.text_of(&document, f.image_url)).filter(|u| !u.is_empty()),
        })
        .collect())
}

fn images(index: &SearchIndex, request: &SearchRequest) -> tantivy::Result<Vec<ImageResult>> {
    let f = index.fields;
    let mut filters = filters(index, request, "image")?;
    if let Some((w, h)) = request.query.image_size {
        filters.push((
            Occur::Must,
            Box::new(TermQuery::new(Term::from_field_u64(f.width, u64::from(w)), IndexRecordOption::Basic)),
        ));
        filters.push((
            Occur::Must,
            Box::new(TermQuery::new(Term::from_field_u64(f.height, u64::from(h)), IndexRecordOption::Basic)),
        ));
    }
    if let Some((w, h)) = request.query.larger_than {
        for (field, at_least) in [(f.width, w), (f.height, h)] {
            let range = RangeQuery::new(
                Bound::Excluded(Term::from_field_u64(field, u64::from(at_least))),
                Bound::Unbounded,
            );
            filters.push((Occur::Must, Box::new(range)));
        }
    }
    Ok(ranked(index, request, filters)?
        .into_iter()
        .map(|document| ImageResult {
            title: index.text_of(&document, f.title),
            image_url: index.text_of(&document, f.image_url),
            image_width: index.number_of(&document, f.width).and_then(|w| u32::try_from(w).ok()),
            image_height: index.number_of(&document, f.height).and_then(|h| u32::try_from(h).ok()),
            url: index.text_of(&document, f.url),
        })
        .collect())
}

/// The documents of `kind` passing the request's filters and operators, best first:
/// every word required, or, when that finds nothing, any.
fn ranked(
    index: &SearchIndex,
    request: &SearchRequest,
    filters: Vec<Clause>,
) -> tantivy::Result<Vec<TantivyDocument>> {
    let limit = request.limit;
    let words: Vec<&str> = request
        .query
        .must
        .iter()
        .filter_map(|p| if let Part::Word(w) = p { Some(w.as_str()) } else { None })
        .collect();
    let related = match &request.query.related {
        Some(target) => Some(related(index, target)?),
        None => None,
    };
    let attempt = |occur: Occur| -> tantivy::Result<Vec<TantivyDocument>> {
        let mut clauses: Vec<Clause> = filters.iter().map(|(o, q)| (*o, q.box_clone())).collect();
        for word in &words {
            if let Some(q) = text_query(index, word) {
                clauses.push((occur, q));
            }
        }
        if let Some((query, exclude)) = &related {
            clauses.push((Occur::Must, query.box_clone()));
            clauses.push((Occur::MustNot, exclude.box_clone()));
        }
        let query = BooleanQuery::new(clauses);
        if request.tbs.by_date || (words.is_empty() && related.is_none() && !has_phrases(request)) {
            index.newest(&query, "date", limit)
        } else {
            Ok(index.top(&query, 0, limit)?.into_iter().map(|(_, d)| d).collect())
        }
    };
    let all = attempt(Occur::Must)?;
    if all.is_empty() && words.len() > 1 { attempt(Occur::Should) } else { Ok(all) }
}

fn has_phrases(request: &SearchRequest) -> bool {
    request.query.must.iter().any(|p| matches!(p, Part::Phrase(_) | Part::InTitle(_)))
}

/// Filters of the request: the kind, operators other than plain words, domains,
/// categories, time, and a preference for the request's language.
fn filters(index: &SearchIndex, request: &SearchRequest, kind: &str) -> tantivy::Result<Vec<Clause>> {
    let f = index.fields;
    let mut clauses: Vec<Clause> = vec![(Occur::Must, term(f.kind, kind))];
    // Web pages, and the asking team's own uploaded files: the private pages of other
    // teams (few) are left out.
    let mut others: Vec<Clause> = vec![(Occur::Must, term(f.team, super::index::PRIVATE))];
    if let Some(team) = &request.team {
        others.push((Occur::MustNot, term(f.team, team)));
    }
    clauses.push((Occur::MustNot, Box::new(BooleanQuery::new(others))));
    for part in &request.query.must {
        if let Some(q) = part_query(index, part) {
            clauses.push((Occur::Must, q));
        }
    }
    for part in &request.query.must_not {
        let q = match part {
            Part::Word(w) => text_query(index, w),
            other => part_query(index, other),
        };
        if let Some(q) = q {
            clauses.push((Occur::MustNot, q));
        }
    }
    if !request.include_domains.is_empty() {
        let any: Vec<Clause> =
            request.include_domains.iter().map(|d| (Occur::Should, term(f.site, &site_term(d)))).collect();
        clauses.push((Occur::Must, Box::new(BooleanQuery::new(any))));
    }
    for domain in &request.exclude_domains {
        clauses.push((Occur::MustNot, term(f.site, &site_term(domain))));
    }
    if !request.categories.is_empty() {
        let mut any: Vec<Clause> = Vec::new();
        for category in &request.categories {
            match category {
                Category::Pdf => any.push((Occur::Should, term(f.file_type, "pdf"))),
                other => any.extend(other.hosts().iter().map(|h| (Occur::Should, term(f.site, h)))),
            }
        }
        clauses.push((Occur::Must, Box::new(BooleanQuery::new(any))));
    }
    let date = |ms: i64| Term::from_field_date(f.date, DateTime::from_timestamp_millis(ms));
    if request.tbs.since_ms.is_some() || request.tbs.until_ms.is_some() {
        let lower = request.tbs.since_ms.map_or(Bound::Unbounded, |ms| Bound::Included(date(ms)));
        let upper = request.tbs.until_ms.map_or(Bound::Unbounded, |ms| Bound::Included(date(ms)));
        clauses.push((Occur::Must, Box::new(RangeQuery::new(lower, upper))));
    }
    if !request.language.is_empty() {
        let prefer = BoostQuery::new(term(f.language, &request.language), 0.5);
        clauses.push((Occur::Should, Box::new(prefer)));
    }
    Ok(clauses)
}

/// An operator's query (plain words are ranked, not filtered: see [`ranked`]).
fn part_query(index: &SearchIndex, part: &Part) -> Option<Box<dyn TantivyQuery>> {
    let f = index.fields;
    match part {
        Part::Word(_) => None,
        Part::Phrase(p) => {
            let any: Vec<Clause> = [f.title, f.description, f.text]
                .into_iter()
                .filter_map(|field| phrase(index, field, p).map(|q| (Occur::Should, q)))
                .collect();
            (!any.is_empty()).then(|| Box::new(BooleanQuery::new(any)) as Box<dyn TantivyQuery>)
        }
        Part::Site(site) => Some(term(f.site, &site_term(site))),
        Part::FileType(kind) => Some(term(f.file_type, kind)),
        Part::InUrl(word) => {
            let words = analyzed(index, f.url_words, word);
            all_of(words.into_iter().map(|w| term(f.url_words, &w)).collect())
        }
        Part::InTitle(text) => phrase(index, f.title, text),
    }
}

/// A word in the title, the description or the text, the title counting most.
fn text_query(index: &SearchIndex, word: &str) -> Option<Box<dyn TantivyQuery>> {
    let f = index.fields;
    let mut any: Vec<Clause> = Vec::new();
    for (field, boost) in [(f.title, 3.0), (f.description, 1.5), (f.text, 1.0), (f.url_words, 0.5)] {
        for token in analyzed(index, field, word) {
            let q = TermQuery::new(Term::from_field_text(field, &token), IndexRecordOption::WithFreqs);
            any.push((Occur::Should, Box::new(BoostQuery::new(Box::new(q), boost))));
        }
    }
    (!any.is_empty()).then(|| Box::new(BooleanQuery::new(any)) as Box<dyn TantivyQuery>)
}

/// `text`'s words in order in `field` (one word: that word).
fn phrase(index: &SearchIndex, field: Field, text: &str) -> Option<Box<dyn TantivyQuery>> {
    let terms: Vec<Term> =
        analyzed(index, field, text).iter().map(|t| Term::from_field_text(field, t)).collect();
    match terms.len() {
        0 => None,
        1 => Some(Box::new(TermQuery::new(terms[0].clone(), IndexRecordOption::WithFreqs))),
        _ => Some(Box::new(PhraseQuery::new(terms))),
    }
}

/// Pages like `target` (a URL or a host): its site's pages and pages sharing the words of
/// its title and description; with the page itself to leave out.
fn related(
    index: &SearchIndex,
    target: &str,
) -> tantivy::Result<(Box<dyn TantivyQuery>, Box<dyn TantivyQuery>)> {
    let f = index.fields;
    let with_scheme = if target.contains("://") { target.to_owned() } else { format!("http://{target}") };
    let host =
        url::Url::parse(&with_scheme).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
    let mut any: Vec<Clause> =
        vec![(Occur::Should, Box::new(BoostQuery::new(term(f.site, &site_term(&host)), 2.0)))];
    let page =
        index.top(&*term(f.url, &with_scheme), 0, 1)?.into_iter().next().map(|(_, d)| d).or_else(|| {
            let slash = format!("{with_scheme}/");
            index.top(&*term(f.url, &slash), 0, 1).ok()?.into_iter().next().map(|(_, d)| d)
        });
    if let Some(page) = &page {
        let words = format!("{} {}", index.text_of(page, f.title), index.text_of(page, f.description));
        for word in words.split_whitespace().take(32) {
            if let Some(q) = text_query(index, word) {
                any.push((Occur::Should, q));
            }
        }
    }
    let exclude = page.map_or_else(|| term(f.url, ""), |p| term(f.url, &index.text_of(&p, f.url)));
    Ok((Box::new(BooleanQuery::new(any)), exclude))
}

fn term(field: Field, text: &str) -> Box<dyn TantivyQuery> {
    Box::new(TermQuery::new(Term::from_field_text(field, text), IndexRecordOption::Basic))
}

fn all_of(queries: Vec<Box<dyn TantivyQuery>>) -> Option<Box<dyn TantivyQuery>> {
    (!queries.is_empty()).then(|| {
        Box::new(BooleanQuery::new(queries.into_iter().map(|q| (Occur::Must, q)).collect()))
            as Box<dyn TantivyQuery>
    })
}

/// `text` through `field`'s analyzer (lowercased, stemmed for the text fields).
fn analyzed(index: &SearchIndex, field: Field, text: &str) -> Vec<String> {
    let Ok(mut analyzer) = index.tantivy().tokenizer_for_field(field) else {
        return Vec::new();
    };
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}
