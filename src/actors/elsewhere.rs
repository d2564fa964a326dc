//! How this node's actors reach the other nodes of its cluster ([`Elsewhere`]): the layer
//! that carries messages between nodes implements it; the actors know no message, channel
//! or protocol version.

use std::sync::Arc;

use futures::future::BoxFuture;
use url::Url;

use super::fetch::{DocumentOutcome, FetchOutcome, FetchTask};
use crate::model::JobId;
use crate::teams::Teams;

/// How this node's site actors reach the other nodes of its cluster: implemented by the
/// layer that carries messages between nodes (`remote`). Each site is owned by one node
/// (placement by host over the live members); a request for a site this node owns is not
/// the implementation's to answer (`None`).
pub trait Elsewhere: Send + Sync + std::fmt::Debug {
    /// `task` fetched on the node that owns site `origin`, when that is another node; `None`
    /// when this node owns it. With `teams`, the page holds one of its team's concurrency
    /// slots on that node while its request is out. A page whose node leaves meanwhile is
    /// sent to the site's next owner; `Moved` when that node let the site go first.
    fn fetch<'a>(
        &'a self,
        origin: &'a Url,
        task: &'a mut FetchTask,
        teams: Option<&'a Arc<Teams>>,
    ) -> BoxFuture<'a, Option<FetchOutcome>>;

    /// The sitemaps robots.txt of `origin` names, asked of the node that owns the site:
    /// `None` when this node owns it; `Some(None)` when that node let the site go first or
    /// did not answer (ask again).
    fn sitemaps<'a>(&'a self, origin: &'a Url) -> BoxFuture<'a, Option<Option<Vec<String>>>>;

    /// Document `url` (a sitemap) of job `job` read through the actor of its site `origin`
    /// on the node that owns it: as for [`Elsewhere::sitemaps`].
    fn document<'a>(
        &'a self,
        job: JobId,
        url: &'a Url,
        origin: &'a Url,
    ) -> BoxFuture<'a, Option<Option<DocumentOutcome>>>;

    /// Tells every other node that job `job` was cancelled, so their site actors drop its
    /// requests (best effort).
    fn cancel(&self, job: JobId);

    /// Resolves once every other node has let site `origin` go (or could not answer): this
    /// node's actor of it is about to start.
    fn claim<'a>(&'a self, origin: &'a str) -> BoxFuture<'a, ()>;

    /// How this node's site actors' redirect hops get their turn at sites other nodes own.
    fn turns(&self) -> crate::scrape::engine::pace::Elsewhere;
}
