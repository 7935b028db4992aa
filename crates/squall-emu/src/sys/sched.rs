//! The calling thread's scheduling: timer slack (prctl(2)), the real-time
//! class (sched_setscheduler(2)) and CPU affinity (sched_setaffinity(2)).

/// Asks the kernel to wake this thread's timers with no slack (the default
/// is 50 µs), so the early wake-up of the data plane can be short.
pub fn minimise_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer and touches no memory.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

/// Puts the calling thread in the SCHED_FIFO class at `priority` (1..=99)
/// so compiles, workloads and other processes do not preempt it (seed 000
/// §6: competing processes are what makes an emulator late). The kernel's
/// real-time throttling still leaves others 5% of each CPU.
pub fn enter_realtime_class(priority: i32) -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: `param` is a valid sched_param; 0 means the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The CPUs this thread may run on (its affinity), in order; empty if the
/// kernel does not say.
pub fn usable_cpus() -> Vec<usize> {
    let Ok(all) = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) else { return Vec::new() };
    (0..nix::sched::CpuSet::count()).filter(|&c| all.is_set(c).unwrap_or(false)).collect()
}

/// Runs this thread on `cpu` only.
pub fn pin_this_thread(cpu: usize) -> nix::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu)?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
}

/// The calling thread's CPU time so far, user and system
/// (getrusage(2) `RUSAGE_THREAD`); zero if the kernel refuses.
pub fn thread_cpu_time() -> squall_link::Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_THREAD).map_or(squall_link::Duration::ZERO, |u| {
        let us = |t: nix::sys::time::TimeVal| {
            u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000 + u64::try_from(t.tv_usec()).unwrap_or(0)
        };
        squall_link::Duration::from_micros(us(u.user_time()) + us(u.system_time()))
    })
}
