//! What crosses between the nodes of a cluster, and what it means: the messages
//! ([`messages`]), the side that asks and the side that answers, and the table of protocol
//! versions ([`compat`]). [`crate::cluster`] below carries the bytes (membership, the wire,
//! TLS, placement); the layers below this one reach other nodes only through traits they
//! own, which this module implements:
//!
//! - [`sites`]: the site actors' [`crate::actors::elsewhere::Elsewhere`] (a page fetched on its
//!   site's node, sitemaps, claiming a site, a job's cancel told everywhere) and
//!   [`turns`], a redirect hop's turn lent by the node that owns the hop's site;
//! - [`jobs`]: the job service's [`crate::service::JobNodes`] (another node's job read,
//!   listed or cancelled);
//! - [`cache`]: the scraper's [`crate::scrape::shared_cache::PageKeeper`] (a page cached
//!   on its site's node);
//! - [`teams`]: the team policy's [`crate::teams::TeamNodes`] (keys, credits, tokens,
//!   concurrency slots and the request rate held for the whole cluster) with its answering
//!   side, and the scraper's [`crate::scrape::profiles::ProfileKeeper`];
//! - [`http`] and [`tunnel`]: API requests, DevTools connections and screen streams for a
//!   browser session or a scrape's page state another node holds (the API decides what to
//!   pass on);
//! - [`members`]: what the operator's view of the cluster asks of each member;
//! - [`answer`]: this node's answers on the `Jobs` channel.

pub mod answer;
pub mod cache;
pub mod compat;
pub mod http;
pub mod jobs;
pub mod members;
pub mod messages;
pub mod sites;
pub mod teams;
pub mod tunnel;
mod turns;

use std::sync::Arc;
use std::time::Duration;

use messages::jobs::{Request, Response};
use messages::{decode, encode};

use crate::cluster::{Channel, Cluster};
use crate::store::Store;

/// This node's part in its cluster, as the layers below reach the other nodes.
#[derive(Debug, Clone)]
pub struct Joined {
    /// The cluster.
    pub cluster: Cluster,
    /// The team policy's other nodes.
    pub teams: Arc<teams::TeamsOnNodes>,
}

impl Joined {
    /// Joins `cluster` with this node's `store`: starts reporting its teams' use to their
    /// owners.
    pub fn new(cluster: Cluster, store: &Store) -> Self {
        let teams = teams::TeamsOnNodes::start(cluster.clone(), store.clone());
        Self { cluster, teams }
    }

    /// The scraper reading and saving its profiles and cached pages on the nodes that keep
    /// them.
    pub fn scraper(&self, scraper: crate::scrape::Scraper, store: &Store) -> crate::scrape::Scraper {
        let profiles = teams::ProfilesOnNodes::new(self.cluster.clone(), store.clone());
        scraper
            .with_profiles(Arc::new(profiles))
            .with_pages(Arc::new(cache::SiteCaches(self.cluster.clone())))
    }

    /// The actors' services, their site actors reaching the sites other nodes own.
    pub fn services(&self, services: crate::actors::Services) -> crate::actors::Services {
        services.in_cluster(self.cluster.clone(), Arc::new(sites::SiteNodes(self.cluster.clone())))
    }

    /// The job service, reaching the jobs other nodes own.
    pub fn jobs(&self, runtime: crate::actors::Runtime) -> crate::service::JobService {
        crate::service::JobService::in_cluster(runtime, Arc::new(jobs::JobsOnNodes(self.cluster.clone())))
    }

    /// Answers the other nodes' questions about teams with `policy`.
    pub fn serve_teams(&self, policy: Arc<crate::teams::Teams>) {
        self.cluster.serve(Channel::Teams, teams::TeamsHandler::new(policy, Arc::clone(&self.teams)));
    }

    /// Answers the other nodes' questions about sites and jobs with `jobs`, and their API
    /// requests, DevTools connections and screen streams with this node's API at `api`
    /// (`host:port`).
    pub fn serve(&self, jobs: crate::service::JobService, api: &str) -> Result<(), String> {
        self.cluster.serve(Channel::Jobs, answer::JobsHandler::new(jobs));
        self.cluster.serve(Channel::Http, http::Handler::new(format!("http://{api}"))?);
        self.cluster.serve(Channel::Tunnel, tunnel::Handler::new(api.to_owned())?);
        Ok(())
    }
}

/// Asks `node` `request` on the `Jobs` channel, waiting `timeout` at most, and reads its
/// answer.
pub async fn ask(
    cluster: &Cluster,
    node: &str,
    request: &Request,
    timeout: Duration,
) -> Result<Response, String> {
    let answer =
        cluster.call(node, Channel::Jobs, encode(request), timeout).await.map_err(|e| e.to_string())?;
    decode(&answer)
}
