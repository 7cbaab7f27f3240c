//! Loom model of the doorbell: a worker that finds no work and parks is always woken by a
//! producer that publishes work and rings (no lost wake-up). Exhaustive within
//! `LOOM_MAX_PREEMPTIONS`; a lost wake-up shows as loom's deadlock report.

use super::Doorbell;
use crate::sync::{spawn_named, Arc, AtomicBool, Ordering};

#[test]
fn a_parked_worker_always_sees_published_work() {
    loom::model(|| {
        let bell = Arc::new(Doorbell::new());
        let work = Arc::new(AtomicBool::new(false));
        let producer = {
            let (bell, work) = (Arc::clone(&bell), Arc::clone(&work));
            spawn_named(String::new(), move || {
                // Release: pairs with the worker's Acquire load (the queue push's role).
                work.store(true, Ordering::Release);
                bell.ring();
            })
            .unwrap()
        };
        // The worker: look for work, park when there is none.
        // Acquire: pairs with the producer's Release store.
        while !work.load(Ordering::Acquire) {
            bell.wait(None);
        }
        producer.join().unwrap();
    });
}

#[test]
fn two_rounds_of_work_are_both_seen() {
    loom::model(|| {
        let bell = Arc::new(Doorbell::new());
        let work = Arc::new(crate::sync::AtomicUsize::new(0));
        let producer = {
            let (bell, work) = (Arc::clone(&bell), Arc::clone(&work));
            spawn_named(String::new(), move || {
                for _ in 0..2 {
                    // Release: pairs with the worker's Acquire load.
                    work.fetch_add(1, Ordering::Release);
                    bell.ring();
                }
            })
            .unwrap()
        };
        let mut seen = 0;
        while seen < 2 {
            // Acquire: pairs with the producer's Release increment.
            let now = work.load(Ordering::Acquire);
            if now == seen {
                bell.wait(None);
            }
            seen = now;
        }
        producer.join().unwrap();
    });
}
