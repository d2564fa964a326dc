//! `WebhookDispatcher`: delivers queued job events from the outbox (at least once). Each
//! job's events go out one at a time and in order; any 2xx acknowledges an event, anything
//! else (or no answer) schedules a retry after a pause that doubles from one second, with
//! jitter, up to `webhooks.max_backoff_secs`, until `webhooks.retry_window_secs` has passed.
//! Deliveries are signed with the team's secret (`X-Service-Signature`, and the same value
//! in `X-Firecrawl-Signature`), carry the moment the event happened in `X-Service-Event-Time`
//! (epoch milliseconds; a receiver can measure its lag, or order retried deliveries), go through the outbound address policy, and survive
//! restarts because the outbox is in the store.

use std::collections::HashSet;
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use sha2::Sha256;
use url::Url;

use super::Services;
use crate::model::{JobId, TeamId, time};
use crate::store::outbox::{Delivery, EventKey};
use crate::store::{Outbox, StoreError};

/// Header with the epoch milliseconds at which the delivered event happened.
pub const EVENT_TIME_HEADER: &str = "X-Service-Event-Time";

/// Messages of the [`WebhookDispatcher`].
#[derive(Debug)]
pub enum WebhookMsg {
    /// Look for events that are due.
    Scan,
    /// An attempt ended.
    Attempted {
        /// Which outbox (0: the database's, 1: the memory-only one).
        outbox: usize,
        /// The event.
        key: EventKey,
        /// Its delivery state before the attempt.
        delivery: Box<Delivery>,
        /// Whether the receiver acknowledged it.
        acknowledged: bool,
        /// What went wrong otherwise.
        detail: String,
        /// The address policy refuses the receiver: retrying cannot help.
        refused: bool,
    },
    /// Fail on purpose (tests of supervision).
    #[cfg(test)]
    Fail,
}

/// Mutable state of the [`WebhookDispatcher`].
#[derive(Debug)]
pub struct WebhookState {
    services: Services,
    in_flight: HashSet<JobId>,
}

/// The delivery actor.
#[derive(Debug)]
pub struct WebhookDispatcher;

/// `sha256=<hex HMAC-SHA256(secret, body)>`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes())
        .expect("HMAC accepts keys of any length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Pause before attempt `attempts + 1`: 2^attempts seconds, capped, ±25% jitter.
fn backoff(attempts: u32, cap: Duration) -> Duration {
    let base = Duration::from_secs(1u64 << attempts.min(20)).min(cap);
    let mut byte = [0u8; 1];
    let jitter = if getrandom::fill(&mut byte).is_ok() { f64::from(byte[0]) / 255.0 } else { 0.5 };
    base.mul_f64(0.75 + jitter * 0.5)
}

impl WebhookState {
    fn outboxes(&self) -> Vec<Outbox> {
        let mut out = vec![self.services.store.outbox.clone()];
        if let Some(volatile) = self.services.volatile_jobs_if_open() {
            out.push(volatile.outbox().clone());
        }
        out
    }

    /// The team's signing secret (made and stored on first use when none was set).
    fn secret_of(&self, team: &str) -> Option<String> {
        let configured = self.services.settings.team(team).webhook_secret;
        let team = TeamId::parse(team).ok()?;
        match self.services.store.teams.webhook_secret(&team, configured.as_deref()) {
            Ok(secret) => Some(secret),
            Err(e) => {
                tracing::error!(error = %e, team = %team.as_str(), "webhook secret unavailable; delivering unsigned");
                None
            }
        }
    }

    /// Starts every job's next event that is due and not already on its way.
    fn scan(&mut self, myself: &ActorRef<WebhookMsg>) -> Result<(), StoreError> {
        let now = time::now_ms();
        for (index, outbox) in self.outboxes().into_iter().enumerate() {
            for (key, delivery) in outbox.heads()? {
                if delivery.next_attempt_ms > now || self.in_flight.contains(&delivery.job) {
                    continue;
                }
                let Some(body) = outbox.body(key)? else {
                    outbox.remove(key)?;
                    continue;
                };
                self.in_flight.insert(delivery.job);
                self.start(myself, index, key, delivery, body);
            }
        }
        Ok(())
    }

    fn start(
        &self,
        myself: &ActorRef<WebhookMsg>,
        outbox: usize,
        key: EventKey,
        delivery: Delivery,
        body: Vec<u8>,
    ) {
        let mut headers = delivery.headers.clone();
        headers.push((EVENT_TIME_HEADER.into(), delivery.created_ms.to_string()));
        if let Some(secret) = self.secret_of(&delivery.team) {
            let signed = signature(&secret, &body);
            headers.push(("X-Service-Signature".into(), signed.clone()));
            headers.push(("X-Firecrawl-Signature".into(), signed));
        }
        let engine = self.services.scraper.engine().clone();
        let timeout = Duration::from_millis(self.services.settings.webhooks.timeout_ms);
        let myself = myself.clone();
        tokio::spawn(async move {
            let result = match Url::parse(&delivery.url) {
                Ok(url) => engine.post_json(&url, &headers, body, timeout).await.map_err(|e| {
                    let refused = matches!(e, crate::scrape::engine::FetchError::Blocked { .. });
                    (e.to_string(), refused)
                }),
                Err(e) => Err((format!("invalid URL: {e}"), true)),
            };
            let (acknowledged, detail, refused) = match result {
                Ok(status) if (200..300).contains(&status) => (true, String::new(), false),
                Ok(status) => (false, format!("answered {status}"), false),
                Err((e, refused)) => (false, e, refused),
            };
            let delivery = Box::new(delivery);
            let _ =
                myself.cast(WebhookMsg::Attempted { outbox, key, delivery, acknowledged, detail, refused });
        });
    }

    fn settle(
        &mut self,
        outbox: usize,
        key: EventKey,
        mut delivery: Delivery,
        outcome: (bool, &str, bool),
    ) -> Result<(), StoreError> {
        let (acknowledged, detail, refused) = outcome;
        self.in_flight.remove(&delivery.job);
        let Some(store) = self.outboxes().into_iter().nth(outbox) else { return Ok(()) };
        let lag = time::now_ms().saturating_sub(delivery.created_ms) as f64 / 1000.0;
        let result = match (acknowledged, refused) {
            (true, _) => "delivered",
            (false, true) => "refused",
            (false, false) => "failed",
        };
        metrics::counter!("webhook_deliveries_total", "result" => result).increment(1);
        if acknowledged {
            // From the event to its acknowledged delivery.
            metrics::histogram!("webhook_delivery_lag_seconds").record(lag);
            return store.remove(key);
        }
        if refused {
            tracing::warn!(webhook_id = %delivery.webhook_id, job = %delivery.job, error = detail, "webhook event dropped: the receiver's address is not allowed");
            return store.remove(key);
        }
        let settings = &self.services.settings.webhooks;
        let now = time::now_ms();
        let window_ms = settings.retry_window_secs.saturating_mul(1000);
        if now.saturating_sub(delivery.created_ms) >= window_ms {
            tracing::warn!(webhook_id = %delivery.webhook_id, job = %delivery.job, attempts = delivery.attempts + 1, error = detail, "webhook event dropped after its retry window");
            return store.remove(key);
        }
        let pause = backoff(delivery.attempts, Duration::from_secs(settings.max_backoff_secs));
        delivery.attempts += 1;
        delivery.next_attempt_ms = now + u64::try_from(pause.as_millis()).unwrap_or(u64::MAX);
        tracing::debug!(webhook_id = %delivery.webhook_id, attempts = delivery.attempts, error = detail, "webhook delivery failed; retrying");
        store.reschedule(key, &delivery)
    }
}

impl Actor for WebhookDispatcher {
    type Msg = WebhookMsg;
    type State = WebhookState;
    type Arguments = Services;

    async fn pre_start(
        &self,
        myself: ActorRef<WebhookMsg>,
        services: Services,
    ) -> Result<WebhookState, ActorProcessingErr> {
        myself.send_interval(Duration::from_millis(services.settings.webhooks.poll_ms), || WebhookMsg::Scan);
        let bell = std::sync::Arc::clone(&services.webhooks);
        let me = myself.clone();
        tokio::spawn(async move {
            loop {
                bell.notified().await;
                if me.cast(WebhookMsg::Scan).is_err() {
                    break;
                }
            }
        });
        myself.cast(WebhookMsg::Scan)?;
        Ok(WebhookState { services, in_flight: HashSet::new() })
    }

    async fn handle(
        &self,
        myself: ActorRef<WebhookMsg>,
        msg: WebhookMsg,
        state: &mut WebhookState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            WebhookMsg::Scan => {}
            WebhookMsg::Attempted { outbox, key, delivery, acknowledged, detail, refused } => {
                state.settle(outbox, key, *delivery, (acknowledged, &detail, refused))?;
            }
            #[cfg(test)]
            WebhookMsg::Fail => return Err("failed on purpose".into()),
        }
        state.scan(&myself)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_hmac_sha256_hex() {
        // RFC 4231 test case 2.
        let sig = signature("Jefe", b"what do ya want for nothing?");
        assert_eq!(sig, "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }

    #[test]
    fn backoff_doubles_within_jitter_and_caps() {
        let cap = Duration::from_secs(300);
        for attempts in 0..12 {
            let wait = backoff(attempts, cap);
            let base = Duration::from_secs(1 << attempts).min(cap);
            assert!(wait >= base.mul_f64(0.74) && wait <= base.mul_f64(1.26), "{attempts}: {wait:?}");
        }
    }
}
