//! Pure crawl decisions, no network: URL identity (dedup keys), scope rules for discovered
//! links, robots.txt evaluation, sitemap parsing, and crawl options read from a prompt
//! without a model. The actors fetch; this module decides.

pub mod keys;
pub mod prompt;
pub mod robots;
pub mod scope;
pub mod sitemap;
