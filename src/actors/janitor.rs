//! `Janitor`: deletes what has expired, on a timer — jobs past their `expiresAt` (running
//! ones are cancelled first), stored scrape results past their lifetime, and cached pages
//! older than the retention. Sweeps run on the blocking pool, never on the actor's thread.

use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::Services;
use super::jobs::JobsMsg;
use crate::model::time;

/// Messages of the [`Janitor`].
#[derive(Debug)]
pub enum JanitorMsg {
    /// Sweep now.
    Sweep,
}

/// Arguments of the [`Janitor`].
#[derive(Debug, Clone)]
pub struct JanitorArgs {
    /// Shared services.
    pub services: Services,
    /// Where running jobs are cancelled.
    pub jobs: ActorRef<JobsMsg>,
}

/// The clean-up actor.
#[derive(Debug)]
pub struct Janitor;

/// What one sweep removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// Jobs deleted.
    pub jobs: usize,
    /// Scrape results deleted.
    pub scrapes: usize,
    /// Cached pages deleted.
    pub cached: usize,
    /// Activity records deleted.
    pub activity: usize,
    /// Scrape replay contexts deleted.
    pub replays: usize,
    /// Screenshots and PDFs deleted.
    pub files: usize,
    /// Extract and agent jobs deleted.
    pub llm_jobs: usize,
}

/// Activity records are kept for a day (spec §4.11).
const ACTIVITY_WINDOW_MS: u64 = 24 * 3_600_000;

impl Actor for Janitor {
    type Msg = JanitorMsg;
    type State = JanitorArgs;
    type Arguments = JanitorArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<JanitorMsg>,
        args: JanitorArgs,
    ) -> Result<JanitorArgs, ActorProcessingErr> {
        let every = Duration::from_secs(args.services.settings.janitor.interval_secs);
        myself.send_interval(every, || JanitorMsg::Sweep);
        Ok(args)
    }

    async fn handle(
        &self,
        _: ActorRef<JanitorMsg>,
        msg: JanitorMsg,
        state: &mut JanitorArgs,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            JanitorMsg::Sweep => {
                let services = state.services.clone();
                let jobs = state.jobs.clone();
                let swept =
                    tokio::task::spawn_blocking(move || sweep(&services, &jobs, time::now_ms())).await??;
                if swept != Swept::default() {
                    tracing::info!(
                        jobs = swept.jobs,
                        scrapes = swept.scrapes,
                        cached = swept.cached,
                        files = swept.files,
                        model_jobs = swept.llm_jobs,
                        "expired data deleted"
                    );
                }
            }
        }
        Ok(())
    }
}

/// One sweep at `now_ms`.
pub fn sweep(
    services: &Services,
    jobs: &ActorRef<JobsMsg>,
    now_ms: u64,
) -> Result<Swept, crate::store::StoreError> {
    let store = &services.store;
    let mut swept = Swept::default();
    let mut job_stores = vec![store.jobs.clone()];
    if let Some(volatile) = services.volatile_jobs_if_open() {
        job_stores.push(volatile);
    }
    for job_store in job_stores {
        for (id, record) in job_store.all()? {
            if record.expires_ms > now_ms {
                continue;
            }
            if !record.status.is_terminal() {
                let _ = jobs.cast(JobsMsg::Cancel(id));
                super::events::end(&job_store, id, crate::model::JobStatus::Cancelled, None)?;
            }
            job_store.delete(id)?;
            swept.jobs += 1;
        }
    }
    swept.scrapes = store.scrapes.purge_expired(now_ms)?;
    swept.replays = store.replays.purge_expired(now_ms)?;
    swept.files = store.files.purge_expired(now_ms)?;
    swept.llm_jobs = store.llm_jobs.purge_expired(now_ms)?;
    swept.activity = store.activity.purge_older_than(now_ms.saturating_sub(ACTIVITY_WINDOW_MS))?;
    let retention_ms = services.settings.janitor.cache_retention_secs.saturating_mul(1000);
    swept.cached = store.cache.purge_older_than(now_ms.saturating_sub(retention_ms))?;
    if let Some(index) = services.scraper.search_index() {
        // The index keeps what the page cache keeps.
        index.prune(i64::try_from(now_ms.saturating_sub(retention_ms)).unwrap_or(i64::MAX));
    }
    Ok(swept)
}
