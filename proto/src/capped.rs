//! A recording kept under a size, for sessions recorded for days (`memcity record
//! --max-size`). Past the size, the file is written again without about half of its older
//! snapshots, chosen as a model thins its history (`thinning.rs`: an even step in time, walks
//! and snapshots with object paths first): the session's first snapshot, every string table,
//! notice and end, and the newest snapshots (a quarter of the size) stay whole. The new file is
//! made beside the old one and renamed over it, so a reader, a crash or a full disk mid-way
//! meets one whole recording or the other; the header counts the snapshots left out
//! (`RecordingHeader.thinned_snapshots`), which a report says.
//!
//! What goes with a snapshot: its numbers and its survivors. The deaths it booked (since the
//! snapshot before it) go to the next snapshot kept ([`Deaths`]), so a thinned recording's
//! lifetimes count every death.

use std::fs::File;
use std::io::{self, BufWriter};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use prost::Message;

use crate::recording::{RecordingWriter, FRAME_HEADER_BYTES};
use crate::thinning::{self, Candidate};
use crate::v1::snapshot::Trigger;
use crate::v1::stream_message::Kind;
use crate::v1::{exactness, RecordingHeader, StreamMessage};

/// A frame written after the header: where it is, and what a thinning needs of it.
#[derive(Debug, Clone, Copy)]
struct Written {
    offset: u64,
    len: u64,
    /// What a thinning knows of a snapshot (`protected` set for the VM's start and an
    /// out-of-memory one); `None` for every other message.
    snapshot: Option<Candidate>,
}

/// Writes a recording that stays under `max` bytes, give or take the newest snapshot.
pub struct CappedWriter {
    path: PathBuf,
    header: RecordingHeader,
    max: u64,
    writer: RecordingWriter<BufWriter<File>>,
    written: Vec<Written>,
    /// The size at which the next thinning runs: `max`, or further when the last one could not
    /// get far enough under it (a file of string tables, one huge snapshot), so it is not
    /// rewritten at every snapshot.
    thin_at: u64,
    /// Why the last thinning failed, until the caller takes it ([`CappedWriter::take_trouble`]).
    trouble: Option<String>,
}

impl CappedWriter {
    /// Creates `path` as [`RecordingWriter::create`] does.
    pub fn create(path: &Path, header: &RecordingHeader, max: u64) -> io::Result<Self> {
        Ok(Self {
            path: path.to_owned(),
            header: header.clone(),
            max,
            writer: RecordingWriter::create(path, header)?,
            written: Vec::new(),
            thin_at: max,
            trouble: None,
        })
    }

    /// Appends `message`, flushed when it completes a step (`recording::completes_a_step`);
    /// past the size, after a snapshot, thins the file (flushed then). A
    /// thinning that fails (no room for the copy, a pipe for a file) leaves the file as it
    /// was, whole, with this message in it, and the recording goes on: why is kept for
    /// [`CappedWriter::take_trouble`], and the next try waits for another quarter of the size.
    pub fn write(&mut self, message: &StreamMessage) -> io::Result<()> {
        let payload = message.encode_to_vec();
        let offset = self.writer.bytes();
        self.writer.write_encoded(&payload)?;
        let snapshot = match &message.kind {
            Some(Kind::Snapshot(s)) => {
                let exact = s
                    .exactness
                    .as_ref()
                    .is_none_or(|e| e.source() != exactness::Source::Estimate);
                Some(Candidate {
                    time_ms: s.time_ms,
                    rank: thinning::rank(s.paths.is_some(), exact),
                    protected: s.out_of_memory.is_some() || s.trigger() == Trigger::Start,
                })
            }
            _ => None,
        };
        self.written.push(Written {
            offset,
            len: self.writer.bytes() - offset,
            snapshot,
        });
        // Not at the session's last snapshots: the JVM is exiting or out of memory, and the
        // agent writes them on its way out (VMDeath), where a rewrite would hold the exit.
        let last = matches!(&message.kind, Some(Kind::Snapshot(s))
            if matches!(s.trigger(), Trigger::End | Trigger::OutOfMemory));
        if snapshot.is_some() && !last && self.writer.bytes() > self.thin_at {
            if let Err(e) = self.thin() {
                self.trouble = Some(format!(
                    "cannot thin {} to stay under its size ({e}); it grows on, whole",
                    self.path.display()
                ));
                self.thin_at = self.writer.bytes() + self.max / 4;
            }
        }
        if crate::recording::completes_a_step(message) {
            self.writer.flush()?;
        }
        Ok(())
    }

    /// Why the last thinning failed, once.
    pub fn take_trouble(&mut self) -> Option<String> {
        self.trouble.take()
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }

    /// Bytes in the file now.
    pub fn bytes(&self) -> u64 {
        self.writer.bytes()
    }

    /// Snapshots left out so far.
    pub fn thinned(&self) -> u64 {
        self.header.thinned_snapshots
    }

    pub fn finish(self) -> io::Result<()> {
        self.writer.finish().map(drop)
    }

    /// Writes the file again without about half of its older snapshots (see the module).
    fn thin(&mut self) -> io::Result<()> {
        self.writer.flush()?;
        // A pipe or a device is written in place (`files::create_replacing`): nothing to copy.
        if !std::fs::symlink_metadata(&self.path)?.is_file() {
            return Err(io::Error::other("it is not a regular file"));
        }
        // The newest snapshots, within a quarter of the size (at least 16), stay whole.
        let entries: Vec<(u64, bool)> = self
            .written
            .iter()
            .map(|w| (w.len, w.snapshot.is_some()))
            .collect();
        let recent_from = thinning::newest_from(&entries, self.max);
        let older: Vec<usize> = (0..recent_from)
            .filter(|&i| self.written[i].snapshot.is_some())
            .collect();
        let candidates: Vec<Candidate> = older
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let c = self.written[i].snapshot.unwrap_or(Candidate {
                    time_ms: 0,
                    rank: 0,
                    protected: true,
                });
                Candidate {
                    // The session's start: its first snapshot.
                    protected: c.protected || k == 0,
                    ..c
                }
            })
            .collect();
        let keep_older = thinning::keep_evenly(&candidates);
        let mut keep = vec![true; self.written.len()];
        for (&i, &k) in older.iter().zip(&keep_older) {
            keep[i] = k;
        }
        let dropped = keep.iter().filter(|&&k| !k).count() as u64;
        if dropped > 0 {
            let mut header = self.header.clone();
            header.thinned_snapshots += dropped;
            let (writer, written) = self.rewrite(&header, &keep)?;
            self.writer = writer;
            self.written = written;
            self.header = header;
        }
        self.thin_at = self.max.max(self.writer.bytes() + self.max / 4);
        Ok(())
    }

    /// The kept frames, copied as they are into a new file beside the old one, renamed over it.
    fn rewrite(
        &self,
        header: &RecordingHeader,
        keep: &[bool],
    ) -> io::Result<(RecordingWriter<BufWriter<File>>, Vec<Written>)> {
        let (file, temp) = crate::files::create_beside(&self.path, crate::files::PRIVATE_FILE)?;
        let copied = (|| {
            let old = File::open(&self.path)?;
            let mut writer =
                RecordingWriter::new(BufWriter::with_capacity(256 * 1024, file), header)?;
            let mut written = Vec::with_capacity(keep.len());
            let mut payload = Vec::new();
            let mut deaths = Deaths::default();
            for (w, &k) in self.written.iter().zip(keep) {
                payload.resize((w.len - FRAME_HEADER_BYTES as u64) as usize, 0);
                old.read_exact_at(&mut payload, w.offset + FRAME_HEADER_BYTES as u64)?;
                if !k {
                    deaths.carry(&payload);
                    continue;
                }
                let offset = writer.bytes();
                writer.write_encoded(&deaths.hand_over(&payload))?;
                written.push(Written {
                    offset,
                    len: writer.bytes() - offset,
                    ..*w
                });
            }
            writer.flush()?;
            writer.get_mut().get_ref().sync_all()?;
            Ok((writer, written))
        })();
        match copied {
            Ok(done) => {
                crate::files::rename_over(&temp, &self.path)?;
                Ok(done)
            }
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                Err(e)
            }
        }
    }
}

/// A snapshot's lifetimes book the deaths since the snapshot before it: a snapshot left out
/// hands its deaths to the next one kept that carries lifetimes, so a thinned file's lifetimes
/// count every death (their own times stay with them). Past [`MAX_CARRIED_DEATHS`], an even
/// choice of them stands for all, their weights scaled up, as the agent does past its cap.
#[derive(Default)]
struct Deaths {
    deaths: Vec<crate::v1::Death>,
    booked: u64,
}

/// Deaths a kept snapshot takes on at most (the agent sends up to 2,000 per snapshot).
const MAX_CARRIED_DEATHS: usize = 8_000;

/// A stream message's lifetimes' deaths, decoded without the rest (tags as `memcity.proto`).
#[derive(Clone, PartialEq, prost::Message)]
struct SkimmedDeaths {
    #[prost(message, optional, tag = "3")]
    snapshot: Option<SnapshotDeaths>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SnapshotDeaths {
    #[prost(message, optional, tag = "16")]
    lifetimes: Option<LifetimesDeaths>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct LifetimesDeaths {
    #[prost(message, repeated, tag = "1")]
    deaths: Vec<crate::v1::Death>,
    #[prost(uint64, tag = "2")]
    deaths_booked: u64,
}

impl Deaths {
    /// A frame left out: its deaths, if it is a snapshot with lifetimes.
    fn carry(&mut self, payload: &[u8]) {
        let Some(lifetimes) = SkimmedDeaths::decode(payload)
            .ok()
            .and_then(|m| m.snapshot)
            .and_then(|s| s.lifetimes)
        else {
            return;
        };
        self.deaths.extend(lifetimes.deaths);
        self.booked += lifetimes.deaths_booked;
        if self.deaths.len() > MAX_CARRIED_DEATHS {
            // Every other one, twice the weight: the totals stay.
            let mut kept = Vec::with_capacity(self.deaths.len() / 2 + 1);
            for (i, mut death) in self.deaths.drain(..).enumerate() {
                if i % 2 == 0 {
                    death.weight *= 2.0;
                    kept.push(death);
                }
            }
            self.deaths = kept;
        }
    }

    /// A frame kept: as it was, or, when deaths wait and it is a snapshot with lifetimes, with
    /// them added to its own.
    fn hand_over<'a>(&mut self, payload: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
        if self.deaths.is_empty() && self.booked == 0 {
            return payload.into();
        }
        let Ok(mut message) = StreamMessage::decode(payload) else {
            return payload.into();
        };
        let Some(Kind::Snapshot(snapshot)) = &mut message.kind else {
            return payload.into();
        };
        let Some(lifetimes) = &mut snapshot.lifetimes else {
            return payload.into();
        };
        lifetimes.deaths.append(&mut self.deaths);
        lifetimes.deaths_booked += std::mem::take(&mut self.booked);
        message.encode_to_vec().into()
    }
}

/// What a thinning needs of a stream message, decoded without a snapshot's groups, paths or
/// lifetimes: prost passes over each of those by its length, so a 1.5 GB recording is skimmed
/// at about the speed it is read. Tags are `memcity.proto`'s.
#[derive(Clone, PartialEq, prost::Message)]
struct Skimmed {
    #[prost(message, optional, tag = "3")]
    snapshot: Option<SkimmedSnapshot>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SkimmedSnapshot {
    #[prost(uint64, tag = "2")]
    time_ms: u64,
    #[prost(int32, tag = "4")]
    trigger: i32,
    #[prost(message, optional, tag = "9")]
    exactness: Option<SkimmedExactness>,
    #[prost(message, optional, tag = "13")]
    paths: Option<Present>,
    #[prost(message, optional, tag = "15")]
    out_of_memory: Option<Present>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SkimmedExactness {
    #[prost(int32, tag = "4")]
    source: i32,
}

/// A message only known to be there.
#[derive(Clone, PartialEq, prost::Message)]
struct Present {}

/// A copy of the recording at `path` within about `target` bytes, for a reader that must hold
/// it whole (the page, in a browser's memory): the older snapshots halved on the thinning's
/// grid until it fits, the first, the VM-start one, an out-of-memory one and the newest quarter
/// of `target` kept, every other message kept, the header counting what went. `None` when the
/// file fits already. Two passes over the file: one skims (see [`Skimmed`]), one copies.
pub fn thinned_copy(
    path: &Path,
    target: u64,
) -> Result<Option<Vec<u8>>, crate::recording::RecordingError> {
    use crate::recording::{RecordingError, RecordingReader};
    let io = |source| RecordingError::Io {
        path: path.to_owned(),
        source,
    };
    // One open file for both passes: a recorder that renames a thinned file over the path
    // between them (`CappedWriter`) must not shift what the second pass copies.
    let mut file = File::open(path).map_err(io)?;
    if file.metadata().map_err(io)?.len() <= target {
        return Ok(None);
    }
    // Pass 1: every frame's size, and what a thinning needs of the snapshots.
    let mut reader = RecordingReader::new(io::BufReader::with_capacity(256 * 1024, &file), path)?;
    let mut frames: Vec<(u64, Option<Candidate>)> = Vec::new();
    while let Some(payload) = reader.next_payload().map_err(io)? {
        let len = (payload.len() + FRAME_HEADER_BYTES) as u64;
        let skimmed = Skimmed::decode(payload.as_slice()).ok();
        let candidate = skimmed.and_then(|m| m.snapshot).map(|s| {
            let exact = s
                .exactness
                .is_none_or(|e| e.source != exactness::Source::Estimate as i32);
            Candidate {
                time_ms: s.time_ms,
                rank: thinning::rank(s.paths.is_some(), exact),
                protected: s.out_of_memory.is_some()
                    || s.trigger == crate::v1::snapshot::Trigger::Start as i32,
            }
        });
        frames.push((len, candidate));
    }
    // The newest snapshots within a quarter of the target (at least 16) stay whole.
    let entries: Vec<(u64, bool)> = frames.iter().map(|f| (f.0, f.1.is_some())).collect();
    let recent_from = thinning::newest_from(&entries, target);
    let mut keep = vec![true; frames.len()];
    if let Some(first) = frames.iter().position(|f| f.1.is_some()) {
        if let Some(c) = frames[first].1.as_mut() {
            c.protected = true; // the session's start
        }
    }
    let mut size: u64 = frames.iter().map(|f| f.0).sum();
    // Halve the older snapshots until the copy fits (or nothing more goes).
    while size > target {
        let older: Vec<usize> = (0..recent_from)
            .filter(|&i| keep[i] && frames[i].1.is_some())
            .collect();
        let candidates: Vec<Candidate> = older.iter().filter_map(|&i| frames[i].1).collect();
        let kept = thinning::keep_evenly(&candidates);
        let before = size;
        for (&i, &k) in older.iter().zip(&kept) {
            if !k {
                keep[i] = false;
                size -= frames[i].0;
            }
        }
        if size == before {
            break;
        }
    }
    let dropped = keep.iter().filter(|&&k| !k).count() as u64;
    // Pass 2: the kept frames, as they were.
    drop(reader);
    io::Seek::rewind(&mut file).map_err(io)?;
    let mut reader = RecordingReader::new(io::BufReader::with_capacity(256 * 1024, &file), path)?;
    let mut header = reader.header().clone();
    header.thinned_snapshots += dropped;
    let mut writer =
        RecordingWriter::new(Vec::with_capacity(size as usize + 4096), &header).map_err(io)?;
    let mut index = 0;
    let mut deaths = Deaths::default();
    while let Some(payload) = reader.next_payload().map_err(io)? {
        if keep.get(index).copied().unwrap_or(true) {
            writer
                .write_encoded(&deaths.hand_over(&payload))
                .map_err(io)?;
        } else {
            deaths.carry(&payload);
        }
        index += 1;
    }
    writer.finish().map(Some).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::RecordingReader;
    use crate::v1::{Exactness, Node, SessionEnd, Snapshot, StringTable};

    fn snapshot(seq: u64, exact: bool) -> StreamMessage {
        StreamMessage {
            kind: Some(Kind::Snapshot(Snapshot {
                seq,
                time_ms: seq * 1000,
                exactness: Some(Exactness {
                    source: if exact {
                        exactness::Source::Walk
                    } else {
                        exactness::Source::Estimate
                    } as i32,
                    ..Default::default()
                }),
                root: Some(Node {
                    objects: seq,
                    children: (0..50)
                        .map(|c| Node {
                            name: c + 1,
                            objects: seq * c as u64,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }),
                ..Default::default()
            })),
        }
    }

    /// Days of snapshots in a file of a fixed size: the start, every string table and the end
    /// stay, the newest are whole, the rest evenly spaced with the walks kept, and the header
    /// counts what went.
    #[test]
    fn a_capped_recording_stays_under_its_size_and_keeps_its_start_and_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("capped.mcrec");
        let max = 200_000;
        let mut w = CappedWriter::create(&path, &RecordingHeader::default(), max).unwrap();
        let strings = |first_id: u32| StreamMessage {
            kind: Some(Kind::Strings(StringTable {
                sites: Vec::new(),
                first_id,
                names: vec![format!("name{first_id}")],
            })),
        };
        w.write(&strings(1)).unwrap();
        for seq in 1..=5_000 {
            w.write(&snapshot(seq, seq % 10 == 0)).unwrap();
            if seq % 1000 == 0 {
                w.write(&strings(seq as u32 / 1000 + 1)).unwrap();
            }
            assert!(w.bytes() <= max + max / 2, "{} bytes at {seq}", w.bytes());
        }
        w.write(&StreamMessage {
            kind: Some(Kind::End(SessionEnd {
                reason: "done".into(),
                snapshots: 5_000,
            })),
        })
        .unwrap();
        let thinned = w.thinned();
        w.finish().unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() <= max + max / 2);
        let mut r = RecordingReader::open(&path).unwrap();
        assert_eq!(r.header().thinned_snapshots, thinned);
        let (mut seqs, mut tables, mut ended) = (Vec::new(), 0, false);
        while let Some(m) = r.next_message().unwrap() {
            match m.kind {
                Some(Kind::Snapshot(s)) => seqs.push(s.seq),
                Some(Kind::Strings(_)) => tables += 1,
                Some(Kind::End(_)) => ended = true,
                _ => {}
            }
        }
        assert_eq!(r.tail(), Some(&crate::recording::Tail::Clean));
        assert_eq!(
            seqs.len() as u64 + thinned,
            5_000,
            "every snapshot kept or counted"
        );
        assert!(thinned > 4_000, "{thinned}");
        assert_eq!((seqs[0], *seqs.last().unwrap()), (1, 5_000));
        assert!(seqs.windows(2).all(|p| p[0] < p[1]));
        assert_eq!((tables, ended), (6, true));
        // The older snapshots (past the first, before the newest) are the walks, every tenth,
        // spaced evenly.
        let newest = seqs.windows(2).position(|p| p[1] == p[0] + 1).unwrap();
        let older = &seqs[1..newest];
        assert!(
            older.len() > 100 && older.iter().all(|s| s % 10 == 0),
            "{seqs:?}"
        );
        assert!(
            older.windows(2).all(|p| (30..=40).contains(&(p[1] - p[0]))),
            "{seqs:?}"
        );
        // The newest are whole.
        assert!(seqs.ends_with(&(4_985..=5_000).collect::<Vec<_>>()));
        // No temporary file is left beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// A copy for a reader that holds it whole: within its target, evenly thinned, the start and
    /// the newest kept, readable, and counting what went; a file that fits is not copied.
    #[test]
    fn a_thinned_copy_fits_its_target_and_keeps_start_and_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long.mcrec");
        let mut w = RecordingWriter::create(&path, &RecordingHeader::default()).unwrap();
        for seq in 1..=3_000 {
            w.write(&snapshot(seq, seq % 10 == 0)).unwrap();
        }
        w.finish().unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(thinned_copy(&path, size).unwrap().is_none(), "it fits");
        let target = size / 8;
        let copy = thinned_copy(&path, target).unwrap().expect("a copy");
        assert!(
            copy.len() as u64 <= target + target / 8,
            "{} of {target}",
            copy.len()
        );
        let mut r = RecordingReader::new(copy.as_slice(), Path::new("copy")).unwrap();
        let mut seqs = Vec::new();
        while let Some(m) = r.next_message().unwrap() {
            if let Some(Kind::Snapshot(s)) = m.kind {
                seqs.push(s.seq);
            }
        }
        assert_eq!(seqs.len() as u64 + r.header().thinned_snapshots, 3_000);
        assert_eq!((seqs[0], *seqs.last().unwrap()), (1, 3_000));
        assert!(seqs.ends_with(&(2_985..=3_000).collect::<Vec<_>>()));
    }

    /// A snapshot left out hands the deaths it booked to the next one kept: the file's
    /// lifetimes count every death, in a capped file and in the page's copy.
    #[test]
    fn deaths_of_snapshots_left_out_go_to_the_next_one_kept() {
        use crate::v1::{Death, Lifetimes};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deaths.mcrec");
        let with_a_death = |seq: u64| {
            let mut m = snapshot(seq, false);
            if let Some(Kind::Snapshot(s)) = &mut m.kind {
                s.lifetimes = Some(Lifetimes {
                    deaths: vec![Death {
                        r#type: 1,
                        weight: 1.0,
                        ..Default::default()
                    }],
                    deaths_booked: 1,
                    ..Default::default()
                });
            }
            m
        };
        let mut w = CappedWriter::create(&path, &RecordingHeader::default(), 150_000).unwrap();
        for seq in 1..=3_000 {
            w.write(&with_a_death(seq)).unwrap();
        }
        assert!(w.thinned() > 1_000, "{}", w.thinned());
        w.finish().unwrap();
        let count = |bytes: &[u8]| {
            let mut r = RecordingReader::new(bytes, Path::new("x")).unwrap();
            let (mut weight, mut booked, mut kept) = (0.0, 0, 0);
            while let Some(m) = r.next_message().unwrap() {
                if let Some(Kind::Snapshot(s)) = m.kind {
                    let l = s.lifetimes.unwrap();
                    weight += l.deaths.iter().map(|d| d.weight).sum::<f64>();
                    booked += l.deaths_booked;
                    kept += 1;
                }
            }
            (weight, booked, kept)
        };
        let file = std::fs::read(&path).unwrap();
        let (weight, booked, kept) = count(&file);
        assert!(kept < 2_000, "{kept} kept");
        assert_eq!((weight, booked), (3_000.0, 3_000), "every death, once");
        // The page's copy of the capped file keeps them too.
        let copy = thinned_copy(&path, file.len() as u64 / 3)
            .unwrap()
            .expect("a copy");
        let (weight, booked, _) = count(&copy);
        assert_eq!((weight, booked), (3_000.0, 3_000));
    }
}
