//! HotSpot heap dumps (`jcmd PID GC.heap_dump`, `-XX:+HeapDumpOnOutOfMemoryError`, `.hprof` or
//! `.hprof.gz`) read into memcity's snapshots, so that one dump or a series opens like a
//! recording: exact counts per type, exact paths from GC roots to what grows, and the dominator
//! tree's retained sizes.
//!
//! The reader is memcity's own (docs/heap-dumps-research.md §5: no crate reads `-gz` dumps'
//! many gzip members, keeps the graph in dense arrays and knows HotSpot's mirrors and roots).

pub mod dominators;
mod grouping;
mod heap;
mod input;
mod paths;
mod phases;
mod records;
mod series;
mod sizes;
mod snapshot;
#[cfg(unix)]
pub mod spill;
#[doc(hidden)]
pub mod synthetic;
mod threads;

use std::path::{Path, PathBuf};

pub use grouping::{parse as parse_levels, Level};
pub use heap::Heap;
pub use series::{
    dumps_in, is_dump, named_as_dump, recording, session, session_bytes, SeriesError,
};
pub use sizes::Sizes;
pub use snapshot::{Analysis, DEFAULT_LEVELS};

/// Reads a dump from `path`: its objects, references, roots and threads' names.
pub fn read(path: &Path) -> Result<Heap, DumpError> {
    read_with(&|| input::Input::open(path))
}

/// Reads a dump held in memory (the fuzz targets'; a dump dropped on the page).
pub fn read_bytes(data: &[u8]) -> Result<Heap, DumpError> {
    read_with(&|| Ok(input::Input::from_bytes(data)))
}

/// Reads the dump `open` gives: two passes for the graph, a third for the threads' names.
fn read_with(open: &dyn Fn() -> Result<input::Input, DumpError>) -> Result<Heap, DumpError> {
    let mut heap = heap::read_graph(open)?;
    let mut phases = phases::Phases::start();
    heap.thread_names = threads::thread_names(&heap, open)?;
    phases.done("threads' names");
    Ok(heap)
}

/// Why a dump could not be read. Offsets are in the uncompressed stream.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    #[error("cannot read {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the dump could not be read at offset {offset}{}", if *.compressed { " (of the decompressed stream: the gzip data is damaged or cut short)" } else { "" })]
    Read {
        offset: u64,
        compressed: bool,
        #[source]
        source: std::io::Error,
    },
    #[error("the dump ends at offset {offset}, inside {what}: it was cut short (a full disk, a copy stopped early, or a JVM killed while dumping); take it again")]
    Truncated { offset: u64, what: String },
    #[error("the dump is damaged at offset {offset}: {what}")]
    Malformed { offset: u64, what: String },
    #[error("not a Java heap dump (it does not start with \"JAVA PROFILE\")")]
    NotADump,
    #[error("unsupported heap dump: {0}")]
    Unsupported(String),
    #[error("the dump holds {objects} objects: memcity numbers objects with 32 bits, up to 4,294,967,293")]
    TooBig { objects: usize },
    #[error("the dump changed while memcity read it ({0}): read a finished dump, or a copy of it")]
    Changed(String),
}

#[cfg(test)]
mod tests;
