//! When the path search runs: at most how often, how long a slice, when it counts again, when
//! a full search has gone dry; the focused searches between full ones (`Scope`), and the births
//! each waits for.

use std::time::{Duration, Instant};

/// The search's time on the worker thread per slice, and how long the worker rests after one
/// (walks, estimates and requests go between slices).
pub const SLICE: Duration = Duration::from_millis(20);
pub const SLICE_REST: Duration = Duration::from_millis(10);
/// Searches start at most this often, however cheap.
pub const MIN_SEARCH_EVERY: Duration = Duration::from_secs(2);
/// The least time between the end of a full search and one asked for out of turn to count
/// again (`Schedule::recount_allowed`): a search every 4 s of some 0.5 s on a heap of a
/// million objects is an eighth of a core at most, while the estimates are in doubt.
pub const RECOUNT_EVERY: Duration = Duration::from_secs(4);
/// The search stops once it has reached this share of its targets: a holder of more than the
/// rest is then seen, and the last roots (the JDK's statics, memcity's own) rarely hold the
/// application's objects.
pub const ENOUGH_FOUND: f64 = 0.95;
/// Fewer live samples than this are not worth a search (the merge needs numbers to agree).
pub const MIN_TARGETS: usize = 20;
/// A search cut short (`Schedule::outgrown`) ends once it has found this many: the fewest
/// through which the viewer names a holder (`memcity_city::leak::holders::MIN_SAMPLES`); fewer would
/// replace the last paths with too few to name one.
pub const ENOUGH_TO_SHOW: u64 = 5;
/// A focused search replaces the last paths once it has found this many (the samples that make
/// a growth's own evidence, `memcity_city::leak::holders::GROWTH_SAMPLES`): a holder named from four
/// or six new samples was "likely", or stopped where two fields lead to the same object (Jetty's
/// handler under both `_handler` and `_sessionHandler`). Fewer are looked for again by the next.
pub const ENOUGH_TO_KEEP: u64 = 20;
/// A focused search that has met this many objects in a root since its last find there (or the
/// root's start), and as many as up to that find, leaves the root (see `gone_dry`).
pub const DRY_FLOOR: u64 = 1 << 16;
/// The same through the roots that held the last finds (`Scope::Preferred`): where the growth
/// was found, a root is walked whole unless it is big. Leaving a root early leaves its paths
/// as first met, not the shortest (a Jetty session met through the scheduler's queue before
/// its session cache would be credited to the scheduler); below a million objects the rest
/// costs under half a second of the agent's thread.
pub const PREFERRED_DRY_FLOOR: u64 = 1 << 20;

/// Whether a focused search has gone past what it looks for in a root, `met` objects into it,
/// the last find `met_at_find` in. It looks for the objects born since the last search, newest
/// first (the last fields and elements first: a list, a deque or an array list appended to
/// holds its newest at its end, and a linked list's last node leads back through the older
/// ones), so in a structure that grows by appending its finds come first and the rest is
/// older. Once it has met as many objects again since its last find as up to it (and at least
/// `floor`: `DRY_FLOOR`, or `PREFERRED_DRY_FLOOR` through preferred roots), it leaves the root: a leak's newest samples cost what was appended since, not
/// the whole structure, and a big root whose newest objects hold none of the growth (a
/// catalog built at start-up) costs `DRY_FLOOR`. In a structure that keeps no order (a hash
/// map's table) the finds come evenly to the end, and so does the search.
pub fn gone_dry(met: u64, met_at_find: u64, floor: u64) -> bool {
    met - met_at_find > met_at_find.max(floor)
}

/// Which roots a search goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every root; the roots' enumeration (locals, JNI references) is the search's one stop.
    Full,
    /// The roots that held the last finds (`Found::top_roots`) alone, with no stop when those
    /// are statics and threads.
    Preferred,
    /// The application's static fields and every thread, with no stop: where a growth no
    /// search has placed yet usually is (a leak in a frame's local or a JDK static waits for a
    /// full search).
    StaticsAndThreads,
}

impl Scope {
    /// The least a root is walked past its last find before it is left (see `gone_dry`).
    pub(super) fn dry_floor(self) -> u64 {
        if self == Scope::Preferred {
            PREFERRED_DRY_FLOOR
        } else {
            DRY_FLOOR
        }
    }
}

/// When tracker generations began (session time), noted by the worker as it sees them: dates
/// a sample from its generation to within the worker's loop (GCs advance generations).
#[derive(Debug, Default)]
pub struct Births {
    /// `(first generation, whole seconds since the start)`, one entry per second at most.
    marks: Vec<(u32, u32)>,
}

impl Births {
    pub fn note(&mut self, generation: u32, since_start: Duration) {
        let s = since_start.as_secs().min(u64::from(u32::MAX)) as u32;
        match self.marks.last() {
            Some(&(_, last)) if last >= s => {}
            Some(&(g, _)) if g >= generation => {}
            _ => self.marks.push((generation, s)),
        }
    }

    /// The second a sample of `generation` was taken in (0 before the first note).
    pub fn seconds(&self, generation: u32) -> u32 {
        match self.marks.partition_point(|&(g, _)| g <= generation) {
            0 => 0,
            i => self.marks[i - 1].1,
        }
    }
}

/// Which search is due (`Schedule::due`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// Every root, for every live sample.
    Full,
    /// Only the roots that held the last finds, for the samples born since the last search:
    /// what a growing holder added, at the cost of that holder's objects rather than the heap's.
    Focused,
}

/// When the next search may start and the next slice may run: searches take at most their
/// share of one core on average (`paths=` option). Full searches cost the heap, focused ones
/// the leak: when both can run, each kind has half the share, so that one full search of a
/// big heap (seconds of a core) does not keep the focused ones, and with them the paths'
/// freshness, waiting for minutes. Times are passed in, so tests drive it without a clock.
#[derive(Debug)]
pub struct Schedule {
    /// The search's average share of one core, over searches and the rests between them.
    share: f64,
    /// The last search of either kind: its end and its time on the worker.
    last_end: Option<Instant>,
    last_cpu: Duration,
    /// The last full search's end and time, and the last focused search's time.
    full_end: Option<Instant>,
    full_cpu: Duration,
    focused_cpu: Duration,
    resume_at: Option<Instant>,
    /// Live objects when the last search started.
    last_objects: u64,
    /// Whether the heap was filling (`oom::filling`) when the last search started, and when.
    started_filling: bool,
    started_at: Option<Instant>,
}

impl Schedule {
    pub fn new(share: f64) -> Self {
        Schedule {
            share: share.clamp(0.001, 1.0),
            last_end: None,
            last_cpu: Duration::ZERO,
            full_end: None,
            full_cpu: Duration::ZERO,
            focused_cpu: Duration::ZERO,
            resume_at: None,
            last_objects: 0,
            started_filling: false,
            started_at: None,
        }
    }

    /// The rest after a search of `cpu` that keeps searches of its kind within `share`.
    fn rest(cpu: Duration, share: f64) -> Duration {
        cpu.div_f64(share).max(MIN_SEARCH_EVERY)
    }

    /// When each kind may start next: full and focused searches each keep to half the share.
    fn next_at(&self) -> Option<(Instant, Instant)> {
        let end = self.last_end?;
        let half = self.share / 2.0;
        let full = self
            .full_end
            .map_or(end, |full_end| full_end + Self::rest(self.full_cpu, half))
            .max(end + MIN_SEARCH_EVERY);
        Some((full, end + Self::rest(self.focused_cpu, half)))
    }

    /// Which search may start at `now` with `live_samples` to look for among `live_objects`,
    /// if any: the first at once; a full one past its rest, or, since paths found in a heap
    /// half the size cannot say who holds the other half, once the heap has doubled (at most
    /// `MIN_SEARCH_EVERY` apart: that is a logarithm of the growth's worth of extra searches);
    /// else a focused one past its own rest.
    pub fn due(&self, now: Instant, live_samples: usize, live_objects: u64) -> Option<Due> {
        if live_samples < MIN_TARGETS {
            return None;
        }
        let Some((full, focused)) = self.next_at() else {
            return Some(Due::Full);
        };
        let end = self.last_end.unwrap_or(now);
        if now >= full || (self.doubled(live_objects) && now >= end + MIN_SEARCH_EVERY) {
            Some(Due::Full)
        } else {
            (now >= focused).then_some(Due::Focused)
        }
    }

    /// Whether a full search asked for out of turn, to count again what the estimates rest
    /// on (`Estimator::births_since_count`), may start at `now`: at most one every
    /// `RECOUNT_EVERY`, since the last full search ended. (Since the last of either kind, it
    /// never came: a focused one due every 2 s that finds too few new samples to start ends
    /// at once, and so does its rest.)
    pub fn recount_allowed(&self, now: Instant, live_samples: usize) -> bool {
        live_samples >= MIN_TARGETS && self.full_end.is_none_or(|end| now >= end + RECOUNT_EVERY)
    }

    /// A search starts at `now` with `live_objects` in the heap, `filling` it or not
    /// (`oom::filling`).
    pub fn started(&mut self, now: Instant, live_objects: u64, filling: bool) {
        self.last_objects = live_objects;
        self.started_filling = filling;
        self.started_at = Some(now);
    }

    /// Whether the search under way should end at `now` with what it has found: the heap has
    /// doubled since it started, at least `MIN_SEARCH_EVERY` ago, or began filling. A search
    /// that cannot stop early (garbage among its targets, which no path reaches) walks the
    /// whole heap, and a heap growing faster than the search walks it (a fast leak, a loaded
    /// machine) keeps it going until the JVM dies of it, its finds never published (under
    /// `-XX:+ExitOnOutOfMemoryError` no agent hears of the error). A short search in a heap
    /// that doubles as it starts up ends as usual (cut, it would replace good paths with a
    /// handful: seen on Jetty), and a heap that stays full (a steady service at 80 %) does not
    /// cut its searches short: only the crossing does.
    pub fn outgrown(&self, now: Instant, live_objects: u64, filling: bool) -> bool {
        let long = self
            .started_at
            .is_some_and(|at| now >= at + MIN_SEARCH_EVERY);
        (self.doubled(live_objects) && long) || (filling && !self.started_filling)
    }

    fn doubled(&self, live_objects: u64) -> bool {
        live_objects >= 2 * self.last_objects.max(1)
    }

    /// Whether the running search's next slice may run at `now`, and if not, when.
    pub fn slice_wait(&self, now: Instant) -> Option<Duration> {
        self.resume_at.filter(|&at| at > now).map(|at| at - now)
    }

    /// A slice ended at `now`: the next one rests first.
    pub fn sliced(&mut self, now: Instant) {
        self.resume_at = Some(now + SLICE_REST);
    }

    /// A search of `kind` ended at `now` after `cpu` on the worker thread.
    pub fn ended(&mut self, now: Instant, cpu: Duration, kind: Due) {
        self.last_end = Some(now);
        self.last_cpu = cpu;
        match kind {
            Due::Full => {
                self.full_end = Some(now);
                self.full_cpu = cpu;
            }
            Due::Focused => self.focused_cpu = cpu,
        }
        self.resume_at = None;
    }

    /// How long after `now` the next search may start (`None`: only once samples exist).
    pub fn next_in(&self, now: Instant) -> Option<Duration> {
        let (full, focused) = self.next_at()?;
        Some(full.min(focused).saturating_duration_since(now))
    }
}
