//! This node's share of a team's concurrency slots in a cluster (its **lease**): the team's
//! owner grants slots, and this node uses them locally like a single node's gate, without a
//! message per page; slots it does not use, or holds over its share, go back. The owner's
//! side, which keeps every node's holding within the team's limit, is `remote::teams`.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use tokio::sync::{Notify, Semaphore};

/// The owner's answer to a node's report of what it holds and wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Grant {
    /// Slots added to what the node holds.
    pub grant: u32,
    /// The most the node may hold now (it gives back the rest as pages finish).
    pub keep: u32,
}

/// This node's share of a team's slots in a cluster.
#[derive(Debug, Default)]
pub struct Lease {
    /// Slots the owner granted this node (in use or free in the gate's semaphore).
    pub held: AtomicU32,
    /// Slots to give back as pages finish (a finished page's slot is dropped, not freed).
    debt: AtomicU32,
    /// Rung when a page starts waiting, so the report goes out at once.
    pub wake: Notify,
}

impl Lease {
    /// Whether a finished page's slot is given back instead of freed.
    pub(super) fn take_debt(&self) -> bool {
        let taken = self.debt.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |d| d.checked_sub(1)).is_ok();
        if taken {
            self.held.fetch_sub(1, Ordering::SeqCst);
        }
        taken
    }

    /// Applies the owner's answer: the granted slots become usable; free slots nobody waits
    /// for, and slots over `keep`, are given back (free ones now, busy ones as they finish).
    pub(super) fn apply(&self, slots: &Semaphore, waiting: &AtomicUsize, answer: Grant) {
        if answer.grant > 0 {
            self.held.fetch_add(answer.grant, Ordering::SeqCst);
            slots.add_permits(answer.grant as usize);
        }
        let idle = u32::try_from(slots.available_permits()).unwrap_or(u32::MAX);
        let held = self.held.load(Ordering::SeqCst);
        let over = held.saturating_sub(answer.keep);
        let unused = if waiting.load(Ordering::SeqCst) == 0 { idle } else { 0 };
        let back_now = over.max(unused).min(idle);
        if back_now > 0
            && let Ok(permits) = slots.try_acquire_many(back_now)
        {
            permits.forget();
            self.held.fetch_sub(back_now, Ordering::SeqCst);
        }
        self.debt.store(over.saturating_sub(back_now), Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_gives_back_what_it_does_not_use() {
        let lease = Lease::default();
        let slots = Semaphore::new(0);
        let waiting = AtomicUsize::new(1);
        lease.apply(&slots, &waiting, Grant { grant: 3, keep: 3 });
        assert_eq!((lease.held.load(Ordering::SeqCst), slots.available_permits()), (3, 3));
        let (first, second) = (slots.try_acquire().expect("in use"), slots.try_acquire().expect("in use"));
        // Asked to keep 1: the free slot goes back now, one busy one when it finishes.
        lease.apply(&slots, &waiting, Grant { grant: 0, keep: 1 });
        assert_eq!((lease.held.load(Ordering::SeqCst), slots.available_permits()), (2, 0));
        assert!(lease.take_debt());
        first.forget();
        assert!(!lease.take_debt());
        drop(second);
        assert_eq!((lease.held.load(Ordering::SeqCst), slots.available_permits()), (1, 1));
        // Nobody waiting: free slots go back.
        waiting.store(0, Ordering::SeqCst);
        lease.apply(&slots, &waiting, Grant { grant: 0, keep: 3 });
        assert_eq!((lease.held.load(Ordering::SeqCst), slots.available_permits()), (0, 0));
    }
}
