//! What the disk does to writes and syncs now, and the one thread that does the held ones.
//!
//! The FUSE session thread never waits for a stall: a write-side operation that must wait is
//! queued here with its arrival time (the backing syscall and the reply together), and the
//! helper thread runs the queue in arrival order, each entry when it is due. A single queue keeps
//! the order of every write-side operation, so work on one file keeps its order too.

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the disk does to writes and syncs now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stall {
    /// Writes and syncs are passed through at once.
    None,
    /// Every write-side operation is done and answered this long after it arrived.
    Delay(Duration),
    /// Write-side operations are held until the stall changes, then done in arrival order.
    Freeze,
}

/// A handle on one mount's stall (cheap to clone, `Send + Sync`).
///
/// The write-side operations are write, fsync, fsyncdir, fallocate, truncate (a setattr that
/// changes the size), create, mkdir, unlink and rename. Reads, lookups, attributes and
/// directory listings are never held. The handle stays usable after its mount is gone, but
/// then changes nothing.
#[derive(Clone)]
pub struct DiskControl {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the helper thread (a new entry, a new stall, closing) and anyone waiting for the
    /// queue to empty.
    wake: Condvar,
    ops: AtomicU64,
    stalled: AtomicU64,
}

struct State {
    stall: Stall,
    queue: VecDeque<Held>,
    /// The helper thread is doing an entry it has taken off the queue.
    running: bool,
    /// The mount is gone: the queue is run out and new operations are done at once.
    closed: bool,
}

struct Held {
    arrived: Instant,
    work: Box<dyn FnOnce() + Send>,
}

/// Whether an arriving write-side operation is done now, on the calling thread, or later.
pub(crate) enum Admission<'a> {
    /// No stall and nothing queued before it: do it now.
    Now,
    /// Hand the work to [`Later::run`].
    Later(Later<'a>),
}

/// A place in the queue, taken when the operation arrived (the queue stays locked until the
/// work is handed over, so no later operation can overtake it).
pub(crate) struct Later<'a> {
    state: MutexGuard<'a, State>,
    shared: &'a Shared,
    arrived: Instant,
}

impl Later<'_> {
    /// Queues `work` (the backing syscall and the reply) for the helper thread.
    pub(crate) fn run(mut self, work: impl FnOnce() + Send + 'static) {
        self.state.queue.push_back(Held {
            arrived: self.arrived,
            work: Box::new(work),
        });
        drop(self.state);
        self.shared.wake.notify_all();
    }
}

impl DiskControl {
    /// A control with no stall, and its helper thread (which ends after [`DiskControl::close`]).
    pub(crate) fn start() -> io::Result<(DiskControl, JoinHandle<()>)> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                stall: Stall::None,
                queue: VecDeque::new(),
                running: false,
                closed: false,
            }),
            wake: Condvar::new(),
            ops: AtomicU64::new(0),
            stalled: AtomicU64::new(0),
        });
        let helper = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("slowdisk-held".into())
            .spawn(move || helper.run_held())?;
        Ok((DiskControl { shared }, thread))
    }

    /// Sets the stall. [`Stall::None`] releases every held operation at once (they are done in
    /// arrival order); a new delay applies to the operations already waiting too.
    pub fn set(&self, stall: Stall) {
        self.shared.lock().stall = stall;
        self.shared.wake.notify_all();
    }

    /// The stall now.
    pub fn stall(&self) -> Stall {
        self.shared.lock().stall
    }

    /// Operations (write, fsync, fsyncdir, fallocate, setattr-with-size i.e. truncate, create,
    /// mkdir, unlink, rename; flush is not counted) that were delayed or held since the mount:
    /// the evidence the fault took effect.
    pub fn stalled_ops(&self) -> u64 {
        self.shared.stalled.load(Ordering::Relaxed)
    }

    /// Write-side operations served since the mount (stalled or not).
    pub fn ops(&self) -> u64 {
        self.shared.ops.load(Ordering::Relaxed)
    }

    /// Counts an arriving write-side operation and says whether it is done now or queued.
    pub(crate) fn admit(&self) -> Admission<'_> {
        self.shared.ops.fetch_add(1, Ordering::Relaxed);
        let state = self.shared.lock();
        if state.closed || (state.stall == Stall::None && state.queue.is_empty() && !state.running)
        {
            return Admission::Now;
        }
        if state.stall != Stall::None {
            self.shared.stalled.fetch_add(1, Ordering::Relaxed);
        }
        Admission::Later(Later {
            state,
            shared: &self.shared,
            arrived: Instant::now(),
        })
    }

    /// Waits until nothing is queued or running, at most `timeout`; true when idle.
    pub(crate) fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut state = self.shared.lock();
        while !state.queue.is_empty() || state.running {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            state = self
                .shared
                .wake
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    /// Ends the stall for good: the helper thread runs out the queue and exits, and operations
    /// that arrive later are done at once.
    pub(crate) fn close(&self) {
        let mut state = self.shared.lock();
        state.stall = Stall::None;
        state.closed = true;
        drop(state);
        self.shared.wake.notify_all();
    }

    /// Whether two handles control the same mount.
    pub(crate) fn same(&self, other: &DiskControl) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl fmt::Debug for DiskControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("DiskControl")
            .field("stall", &state.stall)
            .field("held", &state.queue.len())
            .field("ops", &self.ops())
            .field("stalled_ops", &self.stalled_ops())
            .finish()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The helper thread: runs the queue's front entry when it is due, until closed and empty.
    fn run_held(&self) {
        let mut state = self.lock();
        loop {
            let Some(front) = state.queue.front() else {
                if state.closed {
                    return;
                }
                state = self.wait(state, None);
                continue;
            };
            let stall = if state.closed {
                Stall::None
            } else {
                state.stall
            };
            let due = match stall {
                Stall::None => Some(front.arrived),
                Stall::Delay(delay) => Some(front.arrived + delay),
                Stall::Freeze => None,
            };
            let Some(due) = due else {
                state = self.wait(state, None);
                continue;
            };
            let now = Instant::now();
            if due > now {
                state = self.wait(state, Some(due - now));
                continue;
            }
            let Some(held) = state.queue.pop_front() else {
                continue;
            };
            state.running = true;
            drop(state);
            // A panic drops the reply, which answers EIO; the thread goes on with the queue.
            if catch_unwind(AssertUnwindSafe(held.work)).is_err() {
                tracing::error!("a held write-side operation panicked; it was answered EIO");
            }
            state = self.lock();
            state.running = false;
            self.wake.notify_all();
        }
    }

    fn wait<'a>(
        &self,
        state: MutexGuard<'a, State>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, State> {
        match timeout {
            None => self
                .wake
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner),
            Some(timeout) => {
                self.wake
                    .wait_timeout(state, timeout)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn submit(control: &DiskControl, tx: &mpsc::Sender<u32>, n: u32) {
        let tx = tx.clone();
        match control.admit() {
            Admission::Now => tx.send(n).unwrap(),
            Admission::Later(later) => later.run(move || tx.send(n).unwrap()),
        }
    }

    #[test]
    fn freeze_holds_in_order_and_none_releases() {
        let (control, thread) = DiskControl::start().unwrap();
        let (tx, rx) = mpsc::channel();
        control.set(Stall::Freeze);
        for n in 0..3 {
            submit(&control, &tx, n);
        }
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
        control.set(Stall::None);
        // A fourth operation arriving while the first three drain is queued behind them.
        submit(&control, &tx, 3);
        let got: Vec<u32> = (0..4)
            .map(|_| rx.recv_timeout(Duration::from_secs(1)).unwrap())
            .collect();
        assert_eq!(got, [0, 1, 2, 3]);
        assert_eq!(control.ops(), 4);
        assert_eq!(control.stalled_ops(), 3);
        control.close();
        thread.join().unwrap();
    }

    #[test]
    fn delay_is_counted_from_arrival() {
        let (control, thread) = DiskControl::start().unwrap();
        let (tx, rx) = mpsc::channel();
        control.set(Stall::Delay(Duration::from_millis(150)));
        let start = Instant::now();
        submit(&control, &tx, 7);
        assert_eq!(rx.recv_timeout(Duration::from_secs(1)).unwrap(), 7);
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(150), "{took:?}");
        assert!(took < Duration::from_millis(500), "{took:?}");
        control.close();
        thread.join().unwrap();
    }

    #[test]
    fn close_runs_out_the_queue() {
        let (control, thread) = DiskControl::start().unwrap();
        let (tx, rx) = mpsc::channel();
        control.set(Stall::Freeze);
        submit(&control, &tx, 1);
        control.close();
        thread.join().unwrap();
        assert_eq!(rx.try_recv().unwrap(), 1);
        // After closing, operations are done at once.
        submit(&control, &tx, 2);
        assert_eq!(rx.try_recv().unwrap(), 2);
    }
}
