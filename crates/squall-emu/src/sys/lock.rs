//! Advisory locks on whole files (flock(2)): held until the descriptor is
//! closed, and released by the kernel however the process ends, SIGKILL
//! included.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Takes an exclusive lock on `file` without waiting; whether it was taken.
pub fn try_lock_exclusive(file: &File) -> bool {
    // SAFETY: flock on a descriptor `file` owns.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Takes an exclusive lock on `file`, waiting for other holders to close.
pub fn lock_exclusive(file: &File) -> io::Result<()> {
    // SAFETY: flock on a descriptor `file` owns; released when it is closed.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
