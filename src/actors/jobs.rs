//! `JobSupervisor`: starts one [`CrawlJob`] per running crawl or batch, resumes every
//! unfinished job from the store when the server starts, and restarts a job actor that
//! fails (its state is in the store, so nothing is lost). A job that keeps failing is
//! marked failed rather than restarted forever.

use std::collections::HashMap;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};

use super::Services;
use super::crawl_job::{CrawlJob, CrawlJobArgs, CrawlJobMsg};
use super::sites::Sites;
use crate::model::{JobId, JobStatus};
use crate::store::JobStore;

/// Restarts allowed per job before it is marked failed.
const MAX_RESTARTS: u32 = 5;

/// Messages of the [`JobSupervisor`].
#[derive(Debug)]
pub enum JobsMsg {
    /// Run a job that was just stored (`volatile`: it lives in the memory-only store).
    Start(JobId, bool),
    /// Stop a running job.
    Cancel(JobId),
    /// Resume every unfinished job of the persistent store.
    ResumeAll,
    /// The running job actors' ids.
    Running(RpcReplyPort<Vec<JobId>>),
    /// Fail a job's actor on purpose (tests of supervision).
    #[cfg(test)]
    Crash(JobId),
}

/// Arguments of the [`JobSupervisor`].
#[derive(Debug, Clone)]
pub struct JobsArgs {
    /// Shared services.
    pub services: Services,
    /// The site actors.
    pub sites: Sites,
}

/// Mutable state of the [`JobSupervisor`].
#[derive(Debug)]
pub struct JobsState {
    services: Services,
    sites: Sites,
    running: HashMap<JobId, (ActorRef<CrawlJobMsg>, JobStore)>,
    by_actor: HashMap<ActorId, JobId>,
    restarts: HashMap<JobId, u32>,
}

/// The supervisor of job actors.
#[derive(Debug)]
pub struct JobSupervisor;

impl JobsState {
    async fn spawn(&mut self, myself: &ActorRef<JobsMsg>, id: JobId, jobs: JobStore) {
        if self.running.contains_key(&id) {
            return;
        }
        let args = CrawlJobArgs {
            id,
            jobs: jobs.clone(),
            services: self.services.clone(),
            sites: self.sites.clone(),
        };
        match Actor::spawn_linked(None, CrawlJob, args, myself.get_cell()).await {
            Ok((actor, _)) => {
                self.by_actor.insert(actor.get_id(), id);
                self.running.insert(id, (actor, jobs));
            }
            Err(e) => {
                tracing::error!(job = %id, error = %e, "job could not start");
                let error = format!("the job could not start: {e}");
                let _ = super::events::end(&jobs, id, JobStatus::Failed, Some(&error));
                self.services.webhooks.notify_one();
                self.services.taps.close(id);
            }
        }
    }

    /// After job `id`'s actor ended: runs the job again if it was reopened or its actor
    /// failed (up to [`MAX_RESTARTS`] times, then the job is marked failed).
    async fn after_exit(
        &mut self,
        myself: &ActorRef<JobsMsg>,
        id: JobId,
        jobs: JobStore,
        failure: Option<ActorProcessingErr>,
    ) -> Result<(), ActorProcessingErr> {
        let Some(err) = failure else {
            self.restarts.remove(&id);
            // A job reopened (URLs appended) while its actor was finishing runs again.
            if jobs.record(id)?.is_some_and(|r| r.status == JobStatus::Scraping) {
                self.spawn(myself, id, jobs).await;
            }
            return Ok(());
        };
        let count = self.restarts.entry(id).or_insert(0);
        *count += 1;
        if *count > MAX_RESTARTS {
            tracing::error!(job = %id, error = %err, "job failed repeatedly; giving up");
            super::events::end(
                &jobs,
                id,
                JobStatus::Failed,
                Some(&format!("the job failed repeatedly: {err}")),
            )?;
            self.services.webhooks.notify_one();
            self.restarts.remove(&id);
            return Ok(());
        }
        tracing::warn!(job = %id, error = %err, restart = *count, "job actor failed; restarting it from the store");
        if jobs.record(id)?.is_some_and(|r| r.status == JobStatus::Scraping) {
            self.spawn(myself, id, jobs).await;
        }
        Ok(())
    }
}

impl Actor for JobSupervisor {
    type Msg = JobsMsg;
    type State = JobsState;
    type Arguments = JobsArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<JobsMsg>,
        args: JobsArgs,
    ) -> Result<JobsState, ActorProcessingErr> {
        myself.cast(JobsMsg::ResumeAll)?;
        Ok(JobsState {
            services: args.services,
            sites: args.sites,
            running: HashMap::new(),
            by_actor: HashMap::new(),
            restarts: HashMap::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<JobsMsg>,
        msg: JobsMsg,
        state: &mut JobsState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            JobsMsg::Start(id, volatile) => {
                let jobs = if volatile {
                    state.services.volatile_jobs()?
                } else {
                    state.services.store.jobs.clone()
                };
                state.spawn(&myself, id, jobs).await;
            }
            JobsMsg::Cancel(id) => {
                if let Some((actor, _)) = state.running.get(&id) {
                    let _ = actor.cast(CrawlJobMsg::Cancel);
                }
            }
            JobsMsg::ResumeAll => {
                let jobs = state.services.store.jobs.clone();
                let all = tokio::task::spawn_blocking({
                    let jobs = jobs.clone();
                    move || jobs.all()
                })
                .await??;
                let mut resumed = 0;
                for (id, record) in all {
                    if record.status == JobStatus::Scraping {
                        state.spawn(&myself, id, jobs.clone()).await;
                        resumed += 1;
                    }
                }
                if resumed > 0 {
                    tracing::info!(jobs = resumed, "resumed unfinished jobs");
                }
            }
            JobsMsg::Running(reply) => {
                let _ = reply.send(state.running.keys().copied().collect());
            }
            #[cfg(test)]
            JobsMsg::Crash(id) => {
                if let Some((actor, _)) = state.running.get(&id) {
                    let _ = actor.cast(CrawlJobMsg::Panic);
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<JobsMsg>,
        event: SupervisionEvent,
        state: &mut JobsState,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, failure) = match event {
            SupervisionEvent::ActorTerminated(cell, _, _) => (cell, None),
            SupervisionEvent::ActorFailed(cell, err) => (cell, Some(err)),
            _ => return Ok(()),
        };
        let Some(id) = state.by_actor.remove(&cell.get_id()) else {
            return Ok(());
        };
        let Some((_, jobs)) = state.running.remove(&id) else {
            return Ok(());
        };
        let result = state.after_exit(&myself, id, jobs, failure).await;
        if !state.running.contains_key(&id) {
            // The job has no actor any more: whoever reads its pages in this process is done.
            state.services.taps.close(id);
        }
        result
    }

    async fn post_stop(&self, _: ActorRef<JobsMsg>, state: &mut JobsState) -> Result<(), ActorProcessingErr> {
        for (actor, _) in state.running.values() {
            actor.stop(Some("shutting down".into()));
        }
        Ok(())
    }
}
