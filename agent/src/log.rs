//! Logging to stderr with a `[memcity]` prefix. Never stdout: that belongs to the application.

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

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

macro_rules! error { ($($t:tt)*) => { $crate::log::write($crate::log::Level::Error, format_args!($($t)*)) } }
macro_rules! warning { ($($t:tt)*) => { $crate::log::write($crate::log::Level::Warn, format_args!($($t)*)) } }
macro_rules! info { ($($t:tt)*) => { $crate::log::write($crate::log::Level::Info, format_args!($($t)*)) } }
macro_rules! debug { ($($t:tt)*) => { $crate::log::write($crate::log::Level::Debug, format_args!($($t)*)) } }
pub(crate) use {debug, error, info, warning};
