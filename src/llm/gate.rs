//! A counting gate whose waiters are served round-robin by team: with `n` places taken,
//! the next free place goes to the team after the one served last, so a crawl queueing a
//! thousand pages for the model does not starve another team's single scrape. A waiter that
//! gives up (its deadline passed) leaves its turn to the next.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// The gate.
#[derive(Debug, Clone)]
pub struct FairGate {
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    free: usize,
    waiting: HashMap<String, VecDeque<oneshot::Sender<Permit>>>,
    turns: VecDeque<String>,
}

/// A place in the gate, given back when dropped.
#[derive(Debug)]
pub struct Permit {
    state: Arc<Mutex<State>>,
}

impl FairGate {
    /// A gate of `places` places.
    pub fn new(places: usize) -> Self {
        let state = State { free: places, waiting: HashMap::new(), turns: VecDeque::new() };
        Self { state: Arc::new(Mutex::new(state)) }
    }

    /// Waits for a place for `team`.
    pub async fn enter(&self, team: &str) -> Permit {
        let receiver = {
            let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if state.free > 0 && state.turns.is_empty() {
                state.free -= 1;
                return Permit { state: Arc::clone(&self.state) };
            }
            let (sender, receiver) = oneshot::channel();
            let queue = state.waiting.entry(team.to_owned()).or_default();
            queue.push_back(sender);
            if queue.len() == 1 {
                state.turns.push_back(team.to_owned());
            }
            receiver
        };
        match receiver.await {
            Ok(permit) => permit,
            // The gate is gone with its last permit; nothing is left to wait for.
            Err(_) => Permit { state: Arc::clone(&self.state) },
        }
    }

    /// Places free now (for tests and metrics).
    pub fn free(&self) -> usize {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).free
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let next = {
            let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            loop {
                let Some(team) = state.turns.pop_front() else {
                    state.free += 1;
                    break None;
                };
                let queue = state.waiting.get_mut(&team).expect("a team in turn has waiters");
                let sender = queue.pop_front().expect("a team in turn has waiters");
                if queue.is_empty() {
                    state.waiting.remove(&team);
                } else {
                    state.turns.push_back(team);
                }
                if !sender.is_closed() {
                    break Some(sender);
                }
            }
        };
        if let Some(sender) = next {
            // A waiter that went away just now drops the permit, which passes it on.
            let _ = sender.send(Permit { state: Arc::clone(&self.state) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn waiters_are_served_round_robin_by_team() {
        let gate = FairGate::new(1);
        let first = gate.enter("a").await;
        let served = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (i, team) in ["a", "a", "a", "b"].into_iter().enumerate() {
            let (gate, served) = (gate.clone(), Arc::clone(&served));
            tasks.push(tokio::spawn(async move {
                let _permit = gate.enter(team).await;
                served.lock().expect("lock").push(format!("{team}{i}"));
                tokio::time::sleep(Duration::from_millis(5)).await;
            }));
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(first);
        for task in tasks {
            task.await.expect("task");
        }
        // b's one call goes second, not after a's queue.
        assert_eq!(*served.lock().expect("lock"), ["a0", "b3", "a1", "a2"]);
        assert_eq!(gate.free(), 1);
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_passes_its_turn_on() {
        let gate = FairGate::new(1);
        let held = gate.enter("a").await;
        let gave_up = tokio::time::timeout(Duration::from_millis(10), gate.enter("b")).await;
        assert!(gave_up.is_err());
        let waiting = tokio::spawn({
            let gate = gate.clone();
            async move { drop(gate.enter("c").await) }
        });
        tokio::time::sleep(Duration::from_millis(5)).await;
        drop(held);
        tokio::time::timeout(Duration::from_secs(1), waiting).await.expect("c served").expect("task");
        assert_eq!(gate.free(), 1);
    }
}
