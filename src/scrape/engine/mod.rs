//! Engines that fetch a page. Today: the HTTP engine (reqwest) with the address policy
//! enforced on every hop; the browser engine joins it later, chosen per request.

pub mod charset;
pub mod guard;
pub mod http;

pub use guard::AddressPolicy;
pub use http::{FetchError, FetchRequest, Fetched, HttpEngine};
