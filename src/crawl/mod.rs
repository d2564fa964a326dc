//! Pure crawl decisions, no network: URL identity (dedup keys), scope rules for discovered
//! links, robots.txt evaluation, and sitemap parsing. The actors fetch; this module decides.

pub mod keys;
pub mod robots;
pub mod scope;
pub mod sitemap;
