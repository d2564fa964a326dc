//! The members as the operator's view needs them, the asking side: how much each live
//! member holds, and a forgotten member told to every live member. The answering side is
//! [`super::answer`].

use std::time::Duration;

use super::ask;
use super::messages::jobs::{Request, Response};
use crate::actors::NodeCounts;
use crate::cluster::{Cluster, MemberView};

/// How much each of `members` holds (`None` for a member not up, or that did not answer
/// within two seconds), in order; this node's own is `own`.
pub async fn counts(cluster: &Cluster, members: &[MemberView], own: NodeCounts) -> Vec<Option<NodeCounts>> {
    let asks = members.iter().map(|m| async move {
        match m.state {
            "self" => Some(own),
            "up" => match ask(cluster, &m.name, &Request::Counts, Duration::from_secs(2)).await.ok()? {
                Response::Counts(counts) => Some(counts),
                _ => None,
            },
            _ => None,
        }
    });
    futures::future::join_all(asks).await
}

/// Tells every other live member to forget member `name` (this node forgot it already):
/// each member's name, with why it did not when it did not.
pub async fn forget_everywhere(cluster: &Cluster, name: &str) -> Vec<(String, Result<(), String>)> {
    let request = Request::Forget(name.to_owned());
    let others: Vec<String> = cluster.live().iter().filter(|m| *m != cluster.name()).cloned().collect();
    let asks = others.iter().map(|member| {
        let request = &request;
        async move {
            match ask(cluster, member, request, Duration::from_secs(5)).await? {
                Response::Done => Ok(()),
                Response::Failed { message, .. } => Err(message),
                other => Err(format!("unexpected answer: {other:?}")),
            }
        }
    });
    let answers = futures::future::join_all(asks).await;
    others.iter().cloned().zip(answers).collect()
}
