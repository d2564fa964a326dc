//! Engines that fetch a page: the HTTP engine (reqwest) with the address policy enforced on
//! every hop, and the browser engine (a Chromium pool) for pages that need one.

pub mod browser;
pub mod charset;
pub mod guard;
pub mod http;
pub mod js_shell;
pub mod pace;
pub mod paced;

pub use guard::AddressPolicy;
pub use http::{FetchError, FetchRequest, Fetched, HttpEngine};
pub use pace::{PACE, Pace};
