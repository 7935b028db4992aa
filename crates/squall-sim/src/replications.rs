//! A scenario's replications (`scenario.replications` of them; replication
//! `i` uses seed `scenario.seed + i`), run on several threads. Each run is
//! independent and deterministic, so the results do not depend on the
//! number of threads.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use squall_scenario::Scenario;

use crate::{RunOptions, RunResult, SimError, run};

/// Every replication's result, in replication order.
pub fn run_replications(scenario: &Scenario, options: RunOptions, jobs: usize) -> Result<Vec<RunResult>, SimError> {
    run_replications_with(scenario, options, jobs, |_, result| result)
}

/// Runs every replication on up to `jobs` threads and hands each result,
/// as soon as it is ready, to `consume(replication, result)` on the thread
/// that made it (so results need not all be held in memory at once).
/// Returns what `consume` returned, in replication order, or the error of
/// the first replication that failed (no new replication starts after a
/// failure).
pub fn run_replications_with<T, F>(
    scenario: &Scenario,
    options: RunOptions,
    jobs: usize,
    consume: F,
) -> Result<Vec<T>, SimError>
where
    T: Send,
    F: Fn(u32, RunResult) -> T + Sync,
{
    for_each_replication(scenario, jobs, |i| {
        run(scenario, scenario.replication_seed(i), options).map(|r| consume(i, r))
    })
}

/// Runs `each(replication)` for every replication on up to `jobs` threads;
/// returns what it returned, in replication order, or the first error (no
/// new replication starts after a failure).
pub fn for_each_replication<T, F>(scenario: &Scenario, jobs: usize, each: F) -> Result<Vec<T>, SimError>
where
    T: Send,
    F: Fn(u32) -> Result<T, SimError> + Sync,
{
    let count = scenario.replications;
    let next = AtomicU32::new(0);
    let failed = AtomicBool::new(false);
    // Outcomes as they finish, with their replication: memory grows with
    // the replications run, never with the number asked for up front.
    let outcomes: Mutex<Vec<(u32, Result<T, SimError>)>> = Mutex::new(Vec::new());
    let worker = || {
        while !failed.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= count {
                break;
            }
            let outcome = each(i);
            if outcome.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            outcomes.lock().unwrap_or_else(|e| e.into_inner()).push((i, outcome));
        }
    };
    let threads = jobs.clamp(1, count.max(1) as usize);
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(worker);
        }
        worker();
    });
    let mut outcomes = outcomes.into_inner().unwrap_or_else(|e| e.into_inner());
    outcomes.sort_unstable_by_key(|(i, _)| *i);
    // Replications after a failure may not have run: the first error wins.
    outcomes.into_iter().map(|(_, outcome)| outcome).collect()
}
