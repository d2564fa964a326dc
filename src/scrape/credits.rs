//! What a scrape costs, following Firecrawl's billing (contract §14.7, spec §8): one credit
//! per page, five for a page with the `json` format (or change tracking's json mode), four
//! more for each of `question`/`query` and `highlights`, four more through the enhanced
//! proxy or from a lockdown cache hit, plus one for zero data retention.

use crate::model::{ProxyUsed, ScrapeOptions};

/// Credits for one successful page; a PDF converted with the `pdf` parser costs one per
/// page converted instead of one.
pub fn for_page(options: &ScrapeOptions, proxy_used: ProxyUsed, pdf_pages: Option<u32>) -> u32 {
    let mut credits = pdf_pages.unwrap_or(1).max(1);
    let formats = &options.formats;
    if formats.json.is_some() || formats.change_tracking.as_ref().is_some_and(|c| c.json.is_some()) {
        credits = credits.max(5);
    }
    if formats.question.is_some() || formats.query.is_some() {
        credits += 4;
    }
    if formats.highlights.is_some() {
        credits += 4;
    }
    if options.lockdown || proxy_used == ProxyUsed::Stealth {
        credits += 4;
    }
    if options.zero_data_retention && !options.lockdown {
        credits += 1;
    }
    credits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn billing_rules() {
        let plain = ScrapeOptions::default();
        assert_eq!(for_page(&plain, ProxyUsed::Basic, None), 1);
        assert_eq!(for_page(&plain, ProxyUsed::Basic, Some(12)), 12);
        assert_eq!(for_page(&plain, ProxyUsed::Stealth, None), 5);
        let lockdown = ScrapeOptions { lockdown: true, zero_data_retention: true, ..Default::default() };
        assert_eq!(for_page(&lockdown, ProxyUsed::Basic, None), 5);
        let zdr = ScrapeOptions { zero_data_retention: true, ..Default::default() };
        assert_eq!(for_page(&zdr, ProxyUsed::Basic, None), 2);
        let mut asked = ScrapeOptions::default();
        asked.formats.json = Some(crate::model::JsonSpec::default());
        assert_eq!(for_page(&asked, ProxyUsed::Basic, None), 5);
        asked.formats.question = Some("why?".into());
        asked.formats.highlights = Some("prices".into());
        assert_eq!(for_page(&asked, ProxyUsed::Basic, None), 13);
    }
}
