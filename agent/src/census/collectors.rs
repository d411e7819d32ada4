//! Which collectors ran between two looks, as the JVM names them in its performance data
//! (`sun.gc.collector.N.name`: "G1 young collection pauses", "G1 full collection pauses",
//! "Parallel young collection pauses"...): a lifetime's death says what kind of collection
//! reclaimed the object, which JVMTI's GC events do not.
//!
//! Read from the file HotSpot publishes that data in (`/tmp/hsperfdata_<user>/<pid>`, the one
//! `jstat` reads), not from `GarbageCollectorMXBean`s: listing those loads the JDK's management
//! classes into the application (some 100 ms, and lambdas a heap walk then counts), while the
//! file costs a read of 8 bytes per collector per look. The entries are found once; a look
//! reads each collector's `invocations` counter where it lies. Without the file
//! (`-XX:-UsePerfData`, `-XX:+PerfDisableSharedMem`) deaths name no collector.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// `PerfDataPrologue`'s magic, stored big-endian whatever the byte order.
const MAGIC: u32 = 0xcafe_c0c0;
/// Bytes of `PerfDataPrologue` and of a `PerfDataEntry`'s header.
const PROLOGUE: usize = 32;
const ENTRY_HEADER: usize = 20;
/// The most of the file read to find the entries (HotSpot's default `PerfDataMemorySize` is
/// 64 KiB; a larger one is allowed).
const MAX_FILE: u64 = 16 << 20;

pub struct Collectors {
    file: File,
    little_endian: bool,
    /// Each collector's counters, where they lie, and its count at the last look.
    counters: Vec<Counter>,
}

impl Collectors {
    /// This JVM's performance data, if it publishes it.
    pub fn open() -> Result<Collectors, PerfDataError> {
        let path = own_file(Path::new("/tmp"), std::process::id())?;
        let read = |source| PerfDataError::Read {
            path: path.clone(),
            source,
        };
        let file = File::open(&path).map_err(read)?;
        let len = file.metadata().map_err(read)?.len().min(MAX_FILE);
        let mut data = vec![0; len as usize];
        file.read_exact_at(&mut data, 0).map_err(read)?;
        let (little_endian, counters) = parse(&data)?;
        let mut collectors = Collectors {
            file,
            little_endian,
            counters,
        };
        collectors.ran();
        Ok(collectors)
    }

    /// The collectors whose count rose since the last look, joined by " + " (empty when none
    /// did).
    pub fn ran(&mut self) -> String {
        let counts: Vec<Option<u64>> = self
            .counters
            .iter()
            .map(|c| self.read(c.invocations))
            .collect();
        let mut ran = Vec::new();
        for (counter, now) in self.counters.iter_mut().zip(counts) {
            let Some(now) = now else { continue };
            if now > counter.last {
                ran.push(counter.name.as_str());
            }
            counter.last = now;
        }
        ran.join(" + ")
    }

    /// Whether the JVM collects with generational ZGC (its collectors are named "ZGC minor
    /// ..." and "ZGC major ..."; one-generation ZGC has neither), whose young collections keep
    /// what any weak reference holds until a major collection (see `Tracker::set_hold_limit`).
    pub fn generational_zgc(&self) -> bool {
        self.counters
            .iter()
            .any(|c| c.name.starts_with("ZGC minor") || c.name.starts_with("ZGC major"))
    }

    /// The collectors' names, as the JVM gives them.
    pub fn names(&self) -> Vec<&str> {
        self.counters.iter().map(|c| c.name.as_str()).collect()
    }

    /// The marking collectors' counts now, for a [`MarkingClock`] (empty when none marks).
    pub fn look(&self) -> Look {
        self.counters
            .iter()
            .filter(|c| c.marks != Marks::Nothing)
            .map(|c| {
                let count = self.read(c.invocations).unwrap_or(0);
                // In a pause when its last entry is newer than its last exit; without the
                // times, as if in one (a rise of one then proves nothing).
                let busy = match (
                    c.entered.and_then(|at| self.read(at)),
                    c.exited.and_then(|at| self.read(at)),
                ) {
                    (Some(entered), Some(exited)) => entered > exited,
                    _ => true,
                };
                (c.marks, count, busy)
            })
            .collect()
    }

    /// The 8-byte counter at `at`.
    fn read(&self, at: u64) -> Option<u64> {
        let mut bytes = [0; 8];
        self.file.read_exact_at(&mut bytes, at).ok()?;
        Some(if self.little_endian {
            u64::from_le_bytes(bytes)
        } else {
            u64::from_be_bytes(bytes)
        })
    }
}

/// Why the JVM's performance data cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum PerfDataError {
    #[error("cannot list {}: {source}", .dir.display())]
    List { dir: PathBuf, source: io::Error },
    #[error("the JVM publishes no performance data ({}/hsperfdata_*/{pid}: -XX:-UsePerfData?)", .tmp.display())]
    NotPublished { tmp: PathBuf, pid: u32 },
    #[error("cannot read {}: {source}", .path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("performance data not understood: {0}")]
    NotUnderstood(&'static str),
}

/// `/tmp/hsperfdata_<user>/<pid>`, for whichever user the JVM runs as: the folder and file of
/// that user (the JVM's effective one), not links. Anyone can make `/tmp/hsperfdata_x/<pid>`
/// for another user's pid, and feed its reader counters of their choosing.
fn own_file(tmp: &Path, pid: u32) -> Result<PathBuf, PerfDataError> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    own_file_of(tmp, pid, me)
}

fn own_file_of(tmp: &Path, pid: u32, uid: u32) -> Result<PathBuf, PerfDataError> {
    use std::os::unix::fs::MetadataExt;
    let owned = |path: &Path, dir: bool| {
        std::fs::symlink_metadata(path)
            .is_ok_and(|m| m.uid() == uid && if dir { m.is_dir() } else { m.is_file() })
    };
    let entries = std::fs::read_dir(tmp).map_err(|source| PerfDataError::List {
        dir: tmp.to_path_buf(),
        source,
    })?;
    entries
        .flatten()
        .filter(|dir| dir.file_name().to_string_lossy().starts_with("hsperfdata_"))
        .filter(|dir| owned(&dir.path(), true))
        .map(|dir| dir.path().join(pid.to_string()))
        .find(|file| owned(file, false))
        .ok_or_else(|| PerfDataError::NotPublished {
            tmp: tmp.to_path_buf(),
            pid,
        })
}

/// The byte order and each collector's counters (their offsets) in a
/// performance data file.
fn parse(data: &[u8]) -> Result<(bool, Vec<Counter>), PerfDataError> {
    let bad = PerfDataError::NotUnderstood;
    if data.len() < PROLOGUE || u32::from_be_bytes(data[0..4].try_into().unwrap()) != MAGIC {
        return Err(bad("no HotSpot prologue"));
    }
    let little = data[4] == 1;
    let int = |at: usize| -> Option<usize> {
        let b: [u8; 4] = data.get(at..at + 4)?.try_into().ok()?;
        let v = if little {
            i32::from_le_bytes(b)
        } else {
            i32::from_be_bytes(b)
        };
        usize::try_from(v).ok()
    };
    let (mut at, entries) = (
        int(24).ok_or_else(|| bad("entry offset"))?,
        int(28).ok_or_else(|| bad("entry count"))?,
    );
    let mut names: Vec<(usize, String)> = Vec::new();
    let mut invocations: Vec<(usize, u64)> = Vec::new();
    let mut entered: Vec<(usize, u64)> = Vec::new();
    let mut exited: Vec<(usize, u64)> = Vec::new();
    for _ in 0..entries {
        let (Some(length), Some(name_at), Some(data_at)) = (int(at), int(at + 4), int(at + 16))
        else {
            break;
        };
        if length < ENTRY_HEADER || at + length > data.len() {
            break;
        }
        // Offsets inside the entry, or the entry is skipped: the file is the JVM's to write,
        // and a bad offset must not stop the agent.
        let within = |from: usize| data.get(at + from..at + length);
        let Some(name_bytes) = within(name_at) else {
            at += length;
            continue;
        };
        let name = String::from_utf8_lossy(name_bytes.split(|&b| b == 0).next().unwrap_or(&[]));
        let data_type = data[at + 12];
        if let Some(rest) = name.strip_prefix("sun.gc.collector.") {
            if let Some((index, field)) = rest.split_once('.') {
                if let Ok(index) = index.parse::<usize>() {
                    match (field, data_type) {
                        ("name", b'B') => {
                            if let Some(value) = within(data_at) {
                                let value = value.split(|&b| b == 0).next().unwrap_or(&[]);
                                names.push((index, String::from_utf8_lossy(value).into_owned()));
                            }
                        }
                        ("invocations", b'J') if data_at + 8 <= length => {
                            invocations.push((index, (at + data_at) as u64));
                        }
                        ("lastEntryTime", b'J') if data_at + 8 <= length => {
                            entered.push((index, (at + data_at) as u64));
                        }
                        ("lastExitTime", b'J') if data_at + 8 <= length => {
                            exited.push((index, (at + data_at) as u64));
                        }
                        _ => {}
                    }
                }
            }
        }
        at += length;
    }
    let find = |list: &[(usize, u64)], index: usize| {
        list.iter().find(|(i, _)| *i == index).map(|&(_, at)| at)
    };
    let mut counters: Vec<Counter> = invocations
        .iter()
        .filter_map(|&(index, invocations)| {
            let name = names.iter().find(|(i, _)| *i == index)?.1.clone();
            Some(Counter {
                marks: Marks::of(&name),
                name,
                invocations,
                entered: find(&entered, index),
                exited: find(&exited, index),
                last: 0,
            })
        })
        .collect();
    counters.sort_by_key(|c| c.invocations);
    if counters.is_empty() {
        return Err(bad("no collectors' counters"));
    }
    Ok((little, counters))
}

/// What a collector's pauses say of old-generation markings (see [`MarkingClock`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marks {
    /// Each pause is a whole collection that marks the whole heap: "... full collection
    /// pauses" (Serial, Parallel, G1).
    Whole,
    /// G1's "concurrent cycle pauses": a remark and a cleanup per concurrent cycle, the remark
    /// ending its marking (weak references of what it found dead are cleared there). A rise
    /// of three since a look proves a cycle begun after it; of two, only a remark after it,
    /// perhaps of a cycle begun before.
    Pauses(u64),
    /// Pauses that mark nothing of the old generation, or that the file cannot tell apart.
    Nothing,
}

impl Marks {
    fn of(name: &str) -> Marks {
        if name.contains("full collection") {
            Marks::Whole
        } else if name.starts_with("G1 concurrent cycle") {
            Marks::Pauses(G1_CYCLE_PROOF)
        } else if name.starts_with("ZGC major collection") {
            Marks::Pauses(ZGC_MAJOR_PROOF)
        } else {
            Marks::Nothing
        }
    }
}

/// Rises of G1's concurrent-cycle pause count that prove a whole cycle since a look: the rest
/// of one under way then (its cleanup), and a new one's remark and cleanup.
const G1_CYCLE_PROOF: u64 = 3;
/// Rises of generational ZGC's major-collection pause count that prove a major collection whose
/// old marking began after a look: the rest of one under way then (at most five of its six
/// pauses: young and old mark start, mark end, relocate start), and a new one's pauses up to
/// its old relocate start, which follows the old marking and is always counted here (its old
/// mark end may be counted with the minor pauses when a minor collection runs beside it).
const ZGC_MAJOR_PROOF: u64 = 10;

/// One collector's counters in the file.
#[derive(Debug, Clone)]
struct Counter {
    name: String,
    marks: Marks,
    /// Offsets of its `invocations`, `lastEntryTime` and `lastExitTime`.
    invocations: u64,
    entered: Option<u64>,
    exited: Option<u64>,
    /// The count at the last [`Collectors::ran`].
    last: u64,
}

/// The marking collectors' counts at one look: `(marks, invocations, in a pause)`.
pub type Look = Vec<(Marks, u64, bool)>;

/// When the old generation was last marked, from the collectors' pause counts: a look is taken
/// with the sample tracker's generation at each estimate, and once a later look proves a whole
/// marking began after it (see [`Marks`]), samples born before that generation are confirmed
/// (as a canary's clearing confirms them, `canary.rs`, but without the canary's wait for its
/// tenure). Exact for full collections and G1's concurrent cycles; generational ZGC's major
/// collections by a margin; nothing for the collectors whose every cycle marks the whole heap
/// (their canaries are let go at once) or whose counts say too little (Shenandoah's one counter).
#[derive(Debug, Default)]
pub struct MarkingClock {
    /// Earlier looks and the tracker generation at each, oldest first.
    looks: std::collections::VecDeque<(u32, Look)>,
    confirmed: u32,
}

/// Looks kept: with no marking for long, the oldest are forgotten (a marking proven since a
/// newer look confirms more).
const MAX_LOOKS: usize = 256;

impl MarkingClock {
    /// Takes a look (`now`, at tracker generation `generation`) and returns the confirmation
    /// point: samples born before this generation have been met by a marking (0: none yet).
    pub fn look(&mut self, now: Look, generation: u32) -> u32 {
        let proves = |then: &Look| {
            now.iter()
                .zip(then)
                .any(|(&(marks, count, busy), &(_, before, _))| {
                    let rise = count.saturating_sub(before);
                    match marks {
                        // Counted as it starts: a rise is one begun since; over while no pause
                        // runs, or proven by a second one begun after it.
                        Marks::Whole => rise >= 2 || (rise == 1 && !busy),
                        Marks::Pauses(proof) => rise >= proof && !busy,
                        Marks::Nothing => false,
                    }
                })
        };
        if let Some(newest) = self.looks.iter().rposition(|(_, then)| proves(then)) {
            self.confirmed = self.confirmed.max(self.looks[newest].0);
            self.looks.drain(..=newest);
        }
        // A look whose collectors differ (none should) proves nothing against this one.
        if self
            .looks
            .back()
            .is_none_or(|(_, then)| then.len() == now.len())
        {
            self.looks.push_back((generation, now));
        }
        while self.looks.len() > MAX_LOOKS {
            self.looks.pop_front();
        }
        self.confirmed
    }
}

/// The tracker's generation at GC counts, noted at each look: walks advance generations as
/// well as GCs, so a confirmation point is stepped back by GCs through these (see
/// [`GcGenerations::back`]).
#[derive(Debug, Default)]
pub struct GcGenerations {
    /// `(GCs finished, generation)`, oldest first.
    seen: std::collections::VecDeque<(u32, u32)>,
}

/// Notes kept: a few times the steps asked for, one per worker look at most.
const MAX_GC_GENERATIONS: usize = 1024;

impl GcGenerations {
    pub fn note(&mut self, gcs: u32, generation: u32) {
        if self.seen.back() != Some(&(gcs, generation)) {
            self.seen.push_back((gcs, generation));
        }
        while self.seen.len() > MAX_GC_GENERATIONS {
            self.seen.pop_front();
        }
    }

    /// A generation no later than the one that was current `gcs_back` GCs before generation
    /// `point`; 0 when the notes do not go back that far.
    pub fn back(&self, point: u32, gcs_back: u32) -> u32 {
        let Some(&(at, _)) = self.seen.iter().rev().find(|&&(_, g)| g <= point) else {
            return 0;
        };
        let Some(target) = at.checked_sub(gcs_back) else {
            return 0;
        };
        self.seen
            .iter()
            .rev()
            .find(|&&(gcs, _)| gcs <= target)
            .map_or(0, |&(_, g)| g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_steps_back_by_gcs_not_by_generations() {
        let mut g = GcGenerations::default();
        assert_eq!(g.back(10, 2), 0, "nothing noted");
        // Walks advance the generation between GCs: 2 generations per GC here.
        for gcs in 0..10 {
            g.note(gcs, 2 * gcs + 1);
        }
        assert_eq!(g.back(19, 4), 11, "GC 9 at generation 19, GC 5 at 11");
        assert_eq!(
            g.back(12, 4),
            3,
            "the newest note at or before 12 is GC 5's"
        );
        assert_eq!(g.back(5, 4), 0, "not noted that far back");
        g.note(9, 19);
        assert_eq!(g.seen.len(), 10, "the same look noted once");
    }

    /// A performance data file as HotSpot lays it out: the prologue, then entries of a header,
    /// a name and a value.
    fn file(entries: &[(&str, Result<&str, u64>)]) -> Vec<u8> {
        let mut data = vec![0u8; PROLOGUE];
        data[0..4].copy_from_slice(&MAGIC.to_be_bytes());
        data[4] = 1; // little-endian
        data[24..28].copy_from_slice(&(PROLOGUE as i32).to_le_bytes());
        data[28..32].copy_from_slice(&(entries.len() as i32).to_le_bytes());
        for (name, value) in entries {
            let name_at = ENTRY_HEADER;
            let mut name_bytes = name.as_bytes().to_vec();
            name_bytes.push(0);
            while name_bytes.len() % 8 != 4 {
                name_bytes.push(0);
            }
            let (data_type, value_bytes) = match value {
                Ok(text) => {
                    let mut v = text.as_bytes().to_vec();
                    v.resize(32, 0);
                    (b'B', v)
                }
                Err(n) => (b'J', n.to_le_bytes().to_vec()),
            };
            let data_at = name_at + name_bytes.len();
            let length = data_at + value_bytes.len();
            let mut entry = vec![0u8; ENTRY_HEADER];
            entry[0..4].copy_from_slice(&(length as i32).to_le_bytes());
            entry[4..8].copy_from_slice(&(name_at as i32).to_le_bytes());
            entry[12] = data_type;
            entry[16..20].copy_from_slice(&(data_at as i32).to_le_bytes());
            entry.extend(name_bytes);
            entry.extend(value_bytes);
            data.extend(entry);
        }
        data
    }

    #[test]
    fn collectors_and_their_counters_are_found_by_name() {
        let data = file(&[
            ("sun.gc.collector.0.name", Ok("G1 young collection pauses")),
            ("sun.gc.collector.0.invocations", Err(6)),
            ("sun.gc.policy.name", Ok("GarbageFirst")),
            ("sun.gc.collector.1.name", Ok("G1 full collection pauses")),
            ("sun.gc.collector.1.invocations", Err(0)),
        ]);
        let (little, counters) = parse(&data).unwrap();
        assert!(little);
        let names: Vec<&str> = counters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            ["G1 young collection pauses", "G1 full collection pauses"]
        );
        let marks: Vec<Marks> = counters.iter().map(|c| c.marks).collect();
        assert_eq!(marks, [Marks::Nothing, Marks::Whole]);
        let at = counters[0].invocations as usize;
        assert_eq!(u64::from_le_bytes(data[at..at + 8].try_into().unwrap()), 6);
    }

    #[test]
    fn damaged_data_is_refused_not_misread() {
        assert!(parse(&[0; 8]).is_err());
        let mut data = file(&[("sun.gc.collector.0.invocations", Err(1))]);
        assert!(
            parse(&data)
                .unwrap_err()
                .to_string()
                .contains("no collectors"),
            "no name, no collector"
        );
        data[0] = 0;
        assert!(parse(&data).unwrap_err().to_string().contains("prologue"));
        // A name or value offset past its entry skips the entry.
        let mut data = file(&[
            (
                "sun.gc.collector.0.name",
                Ok("Serial young collection pauses"),
            ),
            ("sun.gc.collector.0.invocations", Err(2)),
        ]);
        data[PROLOGUE + 4..PROLOGUE + 8].copy_from_slice(&1000i32.to_le_bytes());
        assert!(
            parse(&data).is_err(),
            "the name's entry skipped: no collector"
        );
        // An entry longer than the file ends the walk through the entries.
        let mut data = file(&[
            (
                "sun.gc.collector.0.name",
                Ok("Serial young collection pauses"),
            ),
            ("sun.gc.collector.0.invocations", Err(2)),
        ]);
        let first = PROLOGUE;
        data[first..first + 4].copy_from_slice(&(1i32 << 30).to_le_bytes());
        assert!(parse(&data).is_err());
    }

    #[test]
    fn markings_are_proven_by_whole_collections_and_enough_cycle_pauses() {
        let full = |count, busy| vec![(Marks::Whole, count, busy)];
        let mut clock = MarkingClock::default();
        assert_eq!(clock.look(full(0, false), 1), 0);
        assert_eq!(clock.look(full(0, false), 2), 0, "nothing ran");
        // A full collection under way: begun after the last look, not over.
        assert_eq!(clock.look(full(1, true), 3), 0);
        // Over now: it began after the looks at generations 1 and 2, not after 3's.
        assert_eq!(clock.look(full(1, false), 4), 2);
        // Two more begun since: the first is over, whatever the second does.
        assert_eq!(clock.look(full(3, true), 5), 4);
        // A full collection under way at a look, over at the next, proves nothing of it.
        let mut clock = MarkingClock::default();
        clock.look(full(1, true), 1);
        assert_eq!(clock.look(full(1, false), 2), 0);

        // G1's concurrent cycles: three pauses since a look prove a cycle begun after it;
        // two may be the remark and cleanup of one begun before.
        let g1 = |count, busy| {
            vec![
                (Marks::Whole, 0, false),
                (Marks::Pauses(G1_CYCLE_PROOF), count, busy),
            ]
        };
        let mut clock = MarkingClock::default();
        clock.look(g1(4, false), 7);
        assert_eq!(clock.look(g1(6, false), 8), 0);
        assert_eq!(clock.look(g1(7, true), 9), 0, "a remark under way");
        assert_eq!(clock.look(g1(7, false), 10), 7);
        // Generational ZGC's major collections need their margin.
        let z = |count| vec![(Marks::Pauses(ZGC_MAJOR_PROOF), count, false)];
        let mut clock = MarkingClock::default();
        clock.look(z(0), 1);
        assert_eq!(clock.look(z(9), 2), 0);
        assert_eq!(clock.look(z(10), 3), 1);
        assert_eq!(Marks::of("ZGC minor collection pauses"), Marks::Nothing);
        assert_eq!(
            Marks::of("G1 concurrent cycle pauses"),
            Marks::Pauses(G1_CYCLE_PROOF)
        );
        assert_eq!(Marks::of("Shenandoah full"), Marks::Nothing);
        assert_eq!(Marks::of("Serial full collection pauses"), Marks::Whole);
    }

    /// The counts read where they lie, and only a rise names a collector.
    #[test]
    fn a_look_names_the_collectors_whose_count_rose() {
        let dir = tempfile::tempdir().unwrap();
        let published = dir.path().join("hsperfdata_someone");
        std::fs::create_dir(&published).unwrap();
        let path = published.join("4242");
        let data = file(&[
            (
                "sun.gc.collector.0.name",
                Ok("Parallel young collection pauses"),
            ),
            ("sun.gc.collector.0.invocations", Err(3)),
            (
                "sun.gc.collector.1.name",
                Ok("Parallel full collection pauses"),
            ),
            ("sun.gc.collector.1.invocations", Err(1)),
        ]);
        std::fs::write(&path, &data).unwrap();
        assert_eq!(own_file(dir.path(), 4242).unwrap(), path);
        assert!(own_file(dir.path(), 4243).is_err());
        // Another user's file (or folder) for this pid is not this JVM's, nor is a link.
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        assert!(own_file_of(dir.path(), 4242, me + 1).is_err());
        let planted = dir.path().join("hsperfdata_planted");
        std::fs::create_dir(&planted).unwrap();
        std::os::unix::fs::symlink(&path, planted.join("4244")).unwrap();
        assert!(own_file(dir.path(), 4244).is_err());
        let (little, counters) = parse(&data).unwrap();
        let mut c = Collectors {
            file: File::open(&path).unwrap(),
            little_endian: little,
            counters,
        };
        assert_eq!(
            c.ran(),
            "Parallel young collection pauses + Parallel full collection pauses"
        );
        assert_eq!(c.ran(), "", "nothing ran since");
        let young = c.counters[0].invocations;
        let mut bumped = data.clone();
        bumped[young as usize..young as usize + 8].copy_from_slice(&4u64.to_le_bytes());
        std::fs::write(&path, &bumped).unwrap();
        assert_eq!(c.ran(), "Parallel young collection pauses");
    }
}
