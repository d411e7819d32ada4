//! One dump or a series of them as a session: a handshake, then per dump its new names and
//! its snapshot, in the order the dumps were taken (each header's time), so a series replays
//! as a recording of a few snapshots does.

use std::path::{Path, PathBuf};
use std::time::Instant;

use memcity_proto::strings::StringInterner;
use memcity_proto::v1::{stream_message::Kind, DumpInfo, Handshake, StreamMessage};

use crate::grouping::Level;
use crate::snapshot::{self, Analysis, DEFAULT_LEVELS};
use crate::{heap, DumpError};

/// A dump that could not be read, named.
#[derive(Debug, thiserror::Error)]
#[error("{}", path.display())] // the cause follows as the error's source
pub struct SeriesError {
    pub path: PathBuf,
    #[source]
    pub source: DumpError,
}

/// Reads one dump held in memory into a session's messages (`name` stands for it).
pub fn session_bytes(name: &str, data: &[u8]) -> Result<Vec<StreamMessage>, DumpError> {
    let time = crate::records::header_time(&mut crate::input::Input::from_bytes(data))?;
    let heap = crate::read_bytes(data)?;
    let mut strings = StringInterner::new();
    let mut messages = vec![StreamMessage {
        kind: Some(Kind::Handshake(handshake(
            &[(time, PathBuf::from(name))],
            time,
            &DEFAULT_LEVELS,
        ))),
    }];
    let place = Place {
        file: name,
        file_bytes: data.len() as u64,
        seq: 0,
        time_ms: 0,
        started: Instant::now(),
    };
    messages.extend(analysed(&heap, place, &mut strings, &DEFAULT_LEVELS)?);
    Ok(messages)
}

/// Where a dump stands in its session: its file, number and time.
struct Place<'a> {
    file: &'a str,
    file_bytes: u64,
    seq: u64,
    time_ms: u64,
    /// When its reading began (for `DumpInfo.read_ms`).
    started: Instant,
}

/// The messages of one read dump: its new names, then its snapshot.
fn analysed(
    heap: &heap::Heap,
    place: Place,
    strings: &mut StringInterner,
    levels: &[Level],
) -> Result<Vec<StreamMessage>, DumpError> {
    let analysis = Analysis::new(heap)?;
    let (unreachable_objects, unreachable_bytes) = analysis.unreachable();
    let mut info = DumpInfo {
        file: place.file.to_owned(),
        file_bytes: place.file_bytes,
        compressed: heap.compressed,
        objects: heap.objects() as u64,
        references: heap.edges.len() as u64,
        unreachable_objects,
        unreachable_bytes,
        layout: analysis.sizes.layout.name.to_owned(),
        sizes_confirmed: analysis.sizes.confirmed as f64 / heap.objects().max(1) as f64,
        dangling_references: heap.dangling,
        read_ms: 0,
        retainers: Vec::new(),
        spilled_bytes: 0,
    };
    let mut phases = crate::phases::Phases::start();
    let mut snap = snapshot::snapshot(
        &analysis,
        strings,
        place.seq,
        place.time_ms,
        DumpInfo::default(),
        levels,
    );
    phases.done("snapshot");
    info.retainers = snapshot::retainers(&analysis, strings);
    phases.done("retainers");
    info.read_ms = place.started.elapsed().as_millis() as u64;
    snap.dump = Some(info);
    let mut out = Vec::new();
    if let Some(table) = strings.take_new() {
        out.push(StreamMessage {
            kind: Some(Kind::Strings(table)),
        });
    }
    out.push(StreamMessage {
        kind: Some(Kind::Snapshot(snap)),
    });
    Ok(out)
}

/// Reads `paths` (dumps, in any order) into a session's messages.
pub fn session(paths: &[PathBuf], levels: &[Level]) -> Result<Vec<StreamMessage>, SeriesError> {
    let mut heaps = Vec::with_capacity(paths.len());
    for path in paths {
        let at = |source| SeriesError {
            path: path.clone(),
            source,
        };
        // Read one at a time and keep only the messages: a dump's graph is freed before the
        // next one is read.
        let time = dump_time(path).map_err(at)?;
        heaps.push((time, path.clone()));
    }
    heaps.sort_by_key(|(time, _)| *time);
    let start = heaps.first().map_or(0, |(time, _)| *time);
    let mut strings = StringInterner::new();
    let mut messages = vec![StreamMessage {
        kind: Some(Kind::Handshake(handshake(&heaps, start, levels))),
    }];
    for (seq, (time, path)) in heaps.iter().enumerate() {
        let at = |source| SeriesError {
            path: path.clone(),
            source,
        };
        let started = Instant::now();
        #[cfg(unix)]
        let (_spilling, spilled_before) = (
            crate::spill::prepare(path, crate::input::is_gzip(path)),
            crate::spill::spilled_bytes(),
        );
        let heap = crate::read(path).map_err(at)?;
        let file_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        let name = path.display().to_string();
        messages.extend(
            analysed(
                &heap,
                Place {
                    file: &name,
                    file_bytes,
                    seq: seq as u64,
                    time_ms: time - start,
                    started,
                },
                &mut strings,
                levels,
            )
            .map_err(at)?,
        );
        #[cfg(unix)]
        if let Some(Kind::Snapshot(s)) = messages.last_mut().and_then(|m| m.kind.as_mut()) {
            if let Some(d) = s.dump.as_mut() {
                d.spilled_bytes = crate::spill::spilled_bytes() - spilled_before;
            }
        }
    }
    Ok(messages)
}

/// The session of `paths` as a recording's bytes (for the page, which reads recordings): the
/// same messages, framed as `memcity record` frames them, and an end.
pub fn recording(paths: &[PathBuf], levels: &[Level]) -> Result<Vec<u8>, SeriesError> {
    let messages = session(paths, levels)?;
    let Some(Kind::Handshake(handshake)) = messages.first().and_then(|m| m.kind.clone()) else {
        unreachable!("a session starts with its handshake")
    };
    let header = memcity_proto::recording::header(&handshake, "(heap dumps)");
    let written = (|| {
        let mut writer = memcity_proto::recording::RecordingWriter::new(Vec::new(), &header)?;
        let mut snapshots = 0;
        for message in &messages[1..] {
            snapshots += u64::from(matches!(message.kind, Some(Kind::Snapshot(_))));
            writer.write(message)?;
        }
        writer.write(&StreamMessage {
            kind: Some(Kind::End(memcity_proto::v1::SessionEnd {
                reason: "the last heap dump".into(),
                snapshots,
            })),
        })?;
        writer.finish()
    })();
    // Writing to memory fails only if memory does.
    Ok(written.expect("a recording is written to memory"))
}

fn handshake(heaps: &[(u64, PathBuf)], start: u64, levels: &[Level]) -> Handshake {
    let files: Vec<String> = heaps.iter().map(|(_, p)| p.display().to_string()).collect();
    Handshake {
        protocol_version: memcity_proto::PROTOCOL_VERSION,
        agent_version: format!("heap dump read by memcity {}", env!("CARGO_PKG_VERSION")),
        pid: 0,
        jvm_version: String::new(),
        jvm_vendor: String::new(),
        jvm_name: String::new(),
        gc_name: String::new(),
        command_line: files.join(" "),
        classifiers: levels.iter().map(|l| l.name().to_owned()).collect(),
        sampling_interval: 0,
        start_time_unix_ms: start,
        pause_budget: 0.0,
        lifetimes: 0,
    }
}

/// The time a dump was taken (its header's), without reading past the header.
fn dump_time(path: &Path) -> Result<u64, DumpError> {
    let mut input = crate::input::Input::open(path)?;
    crate::records::header_time(&mut input)
}

/// Whether `path` holds a heap dump (plain or gzip-compressed): the commands that open
/// recordings open dumps too, told apart by their first bytes, not their names.
pub fn is_dump(path: &Path) -> bool {
    crate::input::Input::open(path)
        .and_then(|mut input| Ok(input.bytes(13, "the header")? == b"JAVA PROFILE "))
        .unwrap_or(false)
}

/// Whether `path` is named as HotSpot names dumps (`.hprof`, `.hprof.gz`, and the `.1`, `.2`
/// of later dumps at an OutOfMemoryError).
pub fn named_as_dump(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let name = name
        .trim_end_matches(|c: char| c.is_ascii_digit())
        .trim_end_matches('.');
    name.ends_with(".hprof") || name.ends_with(".hprof.gz")
}

/// The dumps of a folder, by name; empty when it holds none.
pub fn dumps_in(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && is_dump(p))
        .collect();
    found.sort();
    found
}
