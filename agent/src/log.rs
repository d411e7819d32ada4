//! Logging to stderr with a `[memcity]` prefix. Never stdout: that belongs to the application.

use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

pub use memcity_proto::options::Level;

fn label(level: Level) -> &'static str {
    match level {
        Level::Off => "",
        Level::Error => "ERROR",
        Level::Warn => "WARN",
        Level::Info => "INFO",
        Level::Debug => "DEBUG",
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Info as u8);

pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

pub fn enabled(level: Level) -> bool {
    level != Level::Off && level as u8 <= LEVEL.load(Ordering::Relaxed)
}

/// Writes one line; errors writing to stderr are ignored (there is nowhere else to report them).
pub fn write(level: Level, args: std::fmt::Arguments<'_>) {
    if enabled(level) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "[memcity] {} {}", label(level), args);
    }
}

/// The attach (or start) this library serves now: a condition said once is said again in a
/// later session of the same JVM.
static SESSION: AtomicU64 = AtomicU64::new(0);

/// A new session starts (the agent loads or attaches again).
pub fn new_session() {
    SESSION.fetch_add(1, Ordering::Relaxed);
}

/// A condition that may come back, at every search or GC: said the first time in a session at
/// its level, then only counted, and shown each time at debug (`log=debug`). The application's
/// stderr goes to its log pipeline: the same line a hundred times is noise there.
pub struct Recurring {
    count: AtomicU64,
    session: AtomicU64,
}

impl Recurring {
    #[allow(clippy::new_without_default)] // a `static` needs a const constructor
    pub const fn new() -> Self {
        Recurring {
            count: AtomicU64::new(0),
            session: AtomicU64::new(u64::MAX),
        }
    }

    pub fn say(&self, level: Level, args: std::fmt::Arguments<'_>) {
        let session = SESSION.load(Ordering::Relaxed);
        if self.session.swap(session, Ordering::Relaxed) != session {
            self.count.store(0, Ordering::Relaxed);
        }
        let n = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        if n == 1 {
            write(
                level,
                format_args!("{args} (said once; log=debug shows each time)"),
            );
        } else {
            write(Level::Debug, format_args!("{args} (time {n})"));
        }
    }
}

/// `once!(Warn, "...", args)`: a [`Recurring`] condition of its own at this place in the code.
macro_rules! once {
    ($level:ident, $($t:tt)*) => {{
        static SAID: $crate::log::Recurring = $crate::log::Recurring::new();
        SAID.say($crate::log::Level::$level, format_args!($($t)*))
    }};
}

macro_rules! error { ($($t:tt)*) => { $crate::log::write($crate::log::Level::Error, format_args!($($t)*)) } }
macro_rules! warning { ($($t:tt)*) => { $crate::log::write($crate::log::Level::Warn, format_args!($($t)*)) } }
macro_rules! info { ($($t:tt)*) => { $crate::log::write($crate::log::Level::Info, format_args!($($t)*)) } }
macro_rules! debug { ($($t:tt)*) => { $crate::log::write($crate::log::Level::Debug, format_args!($($t)*)) } }
pub(crate) use {debug, error, info, once, warning};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recurring_condition_counts_and_starts_over_with_a_session() {
        static SAID: Recurring = Recurring::new();
        set_level(Level::Off);
        for _ in 0..3 {
            SAID.say(Level::Warn, format_args!("x"));
        }
        assert_eq!(SAID.count.load(Ordering::Relaxed), 3);
        new_session();
        SAID.say(Level::Warn, format_args!("x"));
        assert_eq!(SAID.count.load(Ordering::Relaxed), 1);
        set_level(Level::Info);
    }
}
