//! The recording file: the session stream written down.
//!
//! ```text
//! magic     8 bytes   0x89 "MEMCITY"   (the high byte catches 7-bit and text-mode transfers)
//! version   u32 LE    FORMAT_VERSION
//! frame*    u32 LE payload length, u32 LE CRC-32 of the payload, payload
//! ```
//! The first frame's payload is a `RecordingHeader`; every later one is a `StreamMessage`, exactly
//! as a live subscriber receives it. Writers flush after each snapshot, so a file cut off by a
//! killed JVM or a full disk opens up to its last whole frame. A damaged frame (its checksum
//! fails, its length is impossible or points past the end while more frames follow) is skipped
//! by searching forward for the next place where a whole frame's checksum holds (a message
//! frame's payload also starts with one field whose length fills it, a cheap filter before the
//! checksum), so damage in one frame, its length or the header loses only that frame.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use prost::Message;

use crate::v1::{RecordingHeader, StreamMessage};

/// First bytes of every recording.
pub const MAGIC: [u8; 8] = *b"\x89MEMCITY";
/// The format version this crate writes. Readers accept every version up to this one.
///
/// - 1 (2026-11-21): snapshots of grouping trees with their references.
/// - 2 (2026-12-07): what a version-1 reader would drop without a word: the walks' field-level
///   edges and GC roots, object paths with per-type counts (`PathTree`), lifetimes (deaths and
///   survivors), the estimates' errors and unconfirmed parts, the heap's use and an
///   OutOfMemoryError. Its messages are version 1's with more fields: a version-1 file reads
///   as one whose snapshots carry none of them (`proto/tests/data/golden-v1.mcrec`).
///
/// Not a version of its own: string tables may carry their sites' frames as ids
/// (`StringTable.sites`, 2026-12-07), which a reader that drops them still has in the sites'
/// names (`sites::split`).
pub const FORMAT_VERSION: u32 = 2;
/// Customary file extension.
pub const EXTENSION: &str = "mcrec";
/// No frame is larger than this; a length field above it means the length itself is damaged.
pub const MAX_FRAME_BYTES: u32 = 256 * 1024 * 1024;

pub(crate) const FRAME_HEADER_BYTES: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("cannot read {path}")] // the cause follows as the error source
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is empty: the recorder stopped before it wrote anything")]
    Empty { path: PathBuf },
    #[error("{path} is not a memcity recording (it does not start with the memcity magic bytes); record one with `memcity record` or the agent's record= option")]
    NotARecording { path: PathBuf },
    #[error("{path} is a memcity recording of format version {found}, but this memcity reads versions up to {supported}: upgrade memcity")]
    UnsupportedVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("{path} ends before its header is complete ({len} bytes): the recorder stopped before it wrote anything useful")]
    NoHeader { path: PathBuf, len: u64 },
    #[error("{path}: the header frame is damaged ({reason})")]
    BadHeader { path: PathBuf, reason: String },
}

/// The header of a recording of `handshake`'s session, written now by `memcity <command>`
/// (`record`, `view --record`, and the page's stream from `serve` and the agent).
pub fn header(handshake: &crate::v1::Handshake, command: &str) -> crate::v1::RecordingHeader {
    crate::v1::RecordingHeader {
        handshake: Some(handshake.clone()),
        writer: format!("memcity {command} {}", env!("CARGO_PKG_VERSION")),
        recorded_at_unix_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        thinned_snapshots: 0,
    }
}

/// Writes a recording. Used by the agent (`record=`) and by `memcity record`.
pub struct RecordingWriter<W: Write> {
    out: W,
    frames: u64,
    bytes: u64,
}

impl RecordingWriter<BufWriter<File>> {
    /// Creates `path` (mode 0600, replacing what was there: never written through a link or
    /// into a file someone else made, `files::create_replacing`) and writes magic, version and
    /// header.
    #[cfg(unix)]
    pub fn create(path: &Path, header: &RecordingHeader) -> io::Result<Self> {
        let file = crate::files::create_replacing(path)?;
        Self::new(BufWriter::with_capacity(256 * 1024, file), header)
    }
}

impl<W: Write> RecordingWriter<W> {
    pub fn new(mut out: W, header: &RecordingHeader) -> io::Result<Self> {
        out.write_all(&MAGIC)?;
        out.write_all(&FORMAT_VERSION.to_le_bytes())?;
        let mut writer = Self {
            out,
            frames: 0,
            bytes: (MAGIC.len() + 4) as u64,
        };
        writer.write_frame(&header.encode_to_vec())?;
        writer.out.flush()?;
        Ok(writer)
    }

    /// Appends one stream message as a frame, flushed when it completes what a reader should
    /// see whole ([`completes_a_step`]).
    pub fn write(&mut self, message: &StreamMessage) -> io::Result<()> {
        self.write_frame(&message.encode_to_vec())?;
        if completes_a_step(message) {
            self.flush()?;
        }
        Ok(())
    }

    /// Appends an already encoded `StreamMessage` (the agent encodes once for all subscribers).
    pub fn write_encoded(&mut self, payload: &[u8]) -> io::Result<()> {
        self.write_frame(payload)
    }

    fn write_frame(&mut self, payload: &[u8]) -> io::Result<()> {
        let len = u32::try_from(payload.len())
            .ok()
            .filter(|&len| len <= MAX_FRAME_BYTES)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "frame too large"))?;
        let mut head = [0u8; FRAME_HEADER_BYTES];
        head[..4].copy_from_slice(&len.to_le_bytes());
        head[4..].copy_from_slice(&crc32fast::hash(payload).to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(payload)?;
        self.frames += 1;
        self.bytes += (FRAME_HEADER_BYTES + payload.len()) as u64;
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The output, to take what a `Vec<u8>` holds so far (`memcity serve` sends each frame as
    /// one socket message).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Frames written so far, the header included.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Flushes and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Whether `message` completes a step of the session (a snapshot, the session's end), after
/// which a recording is flushed: a file read while it is written (a replay, a JVM killed, a
/// disk that filled) then ends with its last whole snapshot, and nothing of it waits in a
/// buffer. Every writer of recordings applies this one rule.
pub fn completes_a_step(message: &StreamMessage) -> bool {
    use crate::v1::stream_message::Kind;
    matches!(message.kind, Some(Kind::Snapshot(_) | Kind::End(_)))
}

/// How the readable part of a file ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tail {
    /// The file ends exactly after a whole frame.
    Clean,
    /// The file ends inside a frame (a killed writer or a full disk); everything before it was read.
    Truncated { offset: u64, missing_bytes: u64 },
    /// A frame length is impossible, so nothing after `offset` can be found again.
    Unreadable { offset: u64, reason: String },
}

/// Reads a recording frame by frame.
pub struct RecordingReader<R: Read> {
    input: R,
    /// After a resynchronisation: the rest of the file, read from here instead of `input`.
    pending: Option<io::Cursor<Vec<u8>>>,
    path: PathBuf,
    offset: u64,
    header: RecordingHeader,
    version: u32,
    tail: Option<Tail>,
    skipped_corrupt: u64,
    /// Bytes passed over to find the next whole frame after damage.
    skipped_bytes: u64,
    /// Why the header frame could not be read, when the rest could.
    header_damage: Option<String>,
}

impl RecordingReader<BufReader<File>> {
    /// Opens `path` and reads its magic, version and header.
    pub fn open(path: &Path) -> Result<Self, RecordingError> {
        let file = File::open(path).map_err(|source| RecordingError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::new(BufReader::with_capacity(256 * 1024, file), path)
    }
}

impl<R: Read> RecordingReader<R> {
    /// `path` only names the input in error messages.
    pub fn new(mut input: R, path: &Path) -> Result<Self, RecordingError> {
        let path = path.to_owned();
        let io_err = |source| RecordingError::Io {
            path: path.clone(),
            source,
        };
        let mut start = [0u8; 12];
        let got = read_up_to(&mut input, &mut start).map_err(io_err)?;
        if got == 0 {
            return Err(RecordingError::Empty { path });
        }
        if got < MAGIC.len() || start[..MAGIC.len()] != MAGIC {
            // A file shorter than the magic that is a prefix of it is a recording that died at once.
            if got < MAGIC.len() && got > 0 && start[..got] == MAGIC[..got] {
                return Err(RecordingError::NoHeader {
                    path,
                    len: got as u64,
                });
            }
            return Err(RecordingError::NotARecording { path });
        }
        if got < start.len() {
            return Err(RecordingError::NoHeader {
                path,
                len: got as u64,
            });
        }
        let version = u32::from_le_bytes(start[8..12].try_into().expect("4 bytes"));
        // Every version so far only adds fields to the same messages: a version-1 frame decodes
        // as it is. A version that changes a message's meaning upgrades older frames here,
        // before anything else sees them.
        if version == 0 || version > FORMAT_VERSION {
            return Err(RecordingError::UnsupportedVersion {
                path,
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let mut reader = Self {
            input,
            pending: None,
            path: path.clone(),
            offset: start.len() as u64,
            header: RecordingHeader::default(),
            version,
            tail: None,
            skipped_corrupt: 0,
            skipped_bytes: 0,
            header_damage: None,
        };
        let io_err = |source| RecordingError::Io {
            path: path.clone(),
            source,
        };
        match reader.next_frame().map_err(io_err)? {
            Frame::Whole(payload) => match RecordingHeader::decode(payload.as_slice()) {
                Ok(header) => reader.header = header,
                Err(e) => reader.header_damage = Some(e.to_string()),
            },
            // The header was damaged but frames after it were found: read those, and say the
            // JVM's details are lost.
            Frame::Corrupt => reader.header_damage = Some("its checksum fails".into()),
            Frame::End | Frame::Stop => {
                return Err(match reader.tail.take() {
                    Some(Tail::Unreadable { reason, .. }) => RecordingError::BadHeader {
                        path: reader.path.clone(),
                        reason,
                    },
                    _ => RecordingError::NoHeader {
                        path: reader.path.clone(),
                        len: reader.offset,
                    },
                })
            }
        }
        // A header frame that decodes as a stream message is not a header (a damaged file).
        if reader.header_damage.is_some() {
            reader.skipped_corrupt = 0;
        }
        Ok(reader)
    }

    pub fn header(&self) -> &RecordingHeader {
        &self.header
    }

    pub fn format_version(&self) -> u32 {
        self.version
    }

    /// The next message, or `None` at the end of the readable part (see [`RecordingReader::tail`]).
    /// Damaged frames are skipped and counted, never returned.
    pub fn next_message(&mut self) -> io::Result<Option<StreamMessage>> {
        loop {
            match self.next_frame()? {
                Frame::Whole(payload) => match StreamMessage::decode(payload.as_slice()) {
                    Ok(message) => return Ok(Some(message)),
                    // The checksum matched, so the writer wrote this: a newer writer's message
                    // this reader cannot decode. Skip it like a damaged frame.
                    Err(_) => self.skipped_corrupt += 1,
                },
                Frame::Corrupt => self.skipped_corrupt += 1,
                Frame::End | Frame::Stop => return Ok(None),
            }
        }
    }

    /// The next whole frame's payload (an encoded `StreamMessage`), undecoded; damaged frames
    /// are skipped and counted as by [`RecordingReader::next_message`].
    pub fn next_payload(&mut self) -> io::Result<Option<Vec<u8>>> {
        loop {
            match self.next_frame()? {
                Frame::Whole(payload) => return Ok(Some(payload)),
                Frame::Corrupt => self.skipped_corrupt += 1,
                Frame::End | Frame::Stop => return Ok(None),
            }
        }
    }

    /// Counts a whole frame its reader could not decode (a newer writer's message) as
    /// [`RecordingReader::next_message`] does.
    pub(crate) fn skip_undecodable(&mut self) {
        self.skipped_corrupt += 1;
    }

    /// How the file ended; `None` until [`RecordingReader::next_message`] returned `None`.
    pub fn tail(&self) -> Option<&Tail> {
        self.tail.as_ref()
    }

    /// Frames skipped because their checksum or content was damaged.
    pub fn skipped_corrupt(&self) -> u64 {
        self.skipped_corrupt
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// A one-line warning for a file that did not end cleanly, for the CLI and viewer to show.
    pub fn damage_summary(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(why) = &self.header_damage {
            parts.push(format!(
                "the header frame is damaged ({why}), so the JVM's details are unknown"
            ));
        }
        match &self.tail {
            Some(Tail::Truncated {
                offset,
                missing_bytes,
            }) => parts.push(format!(
                "the file is cut off at byte {offset} ({missing_bytes} bytes of the last frame missing; was the JVM killed or the disk full?)"
            )),
            Some(Tail::Unreadable { offset, reason }) => {
                parts.push(format!("nothing after byte {offset} could be read ({reason})"))
            }
            Some(Tail::Clean) | None => {}
        }
        if self.skipped_corrupt > 0 {
            parts.push(format!(
                "{} damaged frame(s) skipped ({} bytes passed over to find the next whole frame)",
                self.skipped_corrupt, self.skipped_bytes
            ));
        }
        if parts.is_empty() {
            None
        } else {
            Some(format!(
                "{}: {}; everything else was read",
                self.path.display(),
                parts.join(", ")
            ))
        }
    }

    fn read_bytes(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.pending {
            Some(rest) => read_up_to(rest, buf),
            None => read_up_to(&mut self.input, buf),
        }
    }

    fn next_frame(&mut self) -> io::Result<Frame> {
        if self.tail.is_some() {
            return Ok(Frame::Stop);
        }
        let frame_start = self.offset;
        let mut head = [0u8; FRAME_HEADER_BYTES];
        let got = self.read_bytes(&mut head)?;
        if got == 0 {
            self.tail = Some(Tail::Clean);
            return Ok(Frame::End);
        }
        if got < FRAME_HEADER_BYTES {
            self.offset += got as u64;
            self.tail = Some(Tail::Truncated {
                offset: frame_start,
                missing_bytes: (FRAME_HEADER_BYTES - got) as u64,
            });
            return Ok(Frame::End);
        }
        let len = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
        if len > MAX_FRAME_BYTES {
            self.offset += got as u64;
            if self.resync(frame_start, head.to_vec())? {
                return Ok(Frame::Corrupt);
            }
            self.tail = Some(Tail::Unreadable {
                offset: frame_start,
                reason: format!("frame length {len} is impossible, and no whole frame follows"),
            });
            return Ok(Frame::End);
        }
        let mut payload = vec![0u8; len as usize];
        let got_payload = self.read_bytes(&mut payload)?;
        self.offset += (got + got_payload) as u64;
        if got_payload < payload.len() {
            // Cut off, or a damaged length pointing past the end: a whole frame in what was
            // read tells them apart.
            let mut seen = head.to_vec();
            seen.extend_from_slice(&payload[..got_payload]);
            if self.resync(frame_start, seen)? {
                return Ok(Frame::Corrupt);
            }
            self.tail = Some(Tail::Truncated {
                offset: frame_start,
                missing_bytes: (payload.len() - got_payload) as u64,
            });
            return Ok(Frame::End);
        }
        if crc32fast::hash(&payload) != crc {
            let mut seen = head.to_vec();
            seen.extend_from_slice(&payload);
            if self.resync(frame_start, seen)? {
                return Ok(Frame::Corrupt);
            }
            self.tail = Some(Tail::Unreadable {
                offset: frame_start,
                reason: "a damaged frame, and no whole frame after it".into(),
            });
            return Ok(Frame::End);
        }
        Ok(Frame::Whole(payload))
    }

    /// After damage at `frame_start` (`seen`: the bytes read from there on), finds the next
    /// whole frame in the rest of the file and continues from it; false if there is none. Reads
    /// the rest of the file into memory: damage is rare, and the search needs it.
    fn resync(&mut self, frame_start: u64, mut seen: Vec<u8>) -> io::Result<bool> {
        match self.pending.take() {
            Some(mut rest) => {
                rest.read_to_end(&mut seen)?;
            }
            None => {
                self.input.read_to_end(&mut seen)?;
            }
        }
        let Some(at) = (1..seen.len()).find(|&k| is_whole_frame(&seen[k..])) else {
            self.offset = frame_start + seen.len() as u64;
            return Ok(false);
        };
        self.skipped_bytes += at as u64;
        self.offset = frame_start + at as u64;
        seen.drain(..at);
        self.pending = Some(io::Cursor::new(seen));
        Ok(true)
    }
}

/// Whether `bytes` starts with a whole message frame: a length that fits, a payload that is
/// one `StreamMessage` field filling it exactly (checked first: cheap), and a checksum that
/// holds.
fn is_whole_frame(bytes: &[u8]) -> bool {
    if bytes.len() < FRAME_HEADER_BYTES + 2 {
        return false;
    }
    let len = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    if len < 2 || len > bytes.len() - FRAME_HEADER_BYTES {
        return false;
    }
    let payload = &bytes[FRAME_HEADER_BYTES..FRAME_HEADER_BYTES + len];
    // Fields 1 to 5 of `StreamMessage`, each a length-delimited message (tag = field << 3 | 2).
    if !matches!(payload[0], 0x0a | 0x12 | 0x1a | 0x22 | 0x2a) {
        return false;
    }
    let mut value = 0usize;
    let mut used = 0;
    for (i, &b) in payload[1..].iter().take(5).enumerate() {
        value |= usize::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            used = i + 1;
            break;
        }
    }
    used > 0 && 1 + used + value == len && crc32fast::hash(payload) == crc
}

impl<R: Read> Iterator for RecordingReader<R> {
    type Item = io::Result<StreamMessage>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_message().transpose()
    }
}

enum Frame {
    Whole(Vec<u8>),
    Corrupt,
    /// End of the readable part reached just now.
    End,
    /// End was reached earlier.
    Stop,
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_up_to<R: Read>(input: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Why a recording arriving in pieces cannot be read on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// It does not start as a recording of a version this reader reads.
    NotARecording(String),
    /// A frame's length or checksum is impossible: on a reliable transport, not a recording.
    Damaged(String),
}

/// Where a [`FrameDecoder`] is in the recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Preamble,
    Header,
    Messages,
}

/// Decodes a recording that arrives in pieces (the page's socket: the preamble and header, then
/// one frame per message), as [`RecordingReader`] reads a file, but with nothing to search for
/// after damage: a transport that delivers in order either delivers whole frames or fails. The
/// header's handshake comes out as the first message, as a live subscriber receives it.
#[derive(Debug)]
pub struct FrameDecoder {
    buffer: Vec<u8>,
    /// Bytes of `buffer` already decoded.
    at: usize,
    part: Part,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameDecoder {
    pub fn new() -> Self {
        Self {
            buffer: Vec::new(),
            at: 0,
            part: Part::Preamble,
        }
    }

    /// Appends the next piece.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.at > 0 && self.at == self.buffer.len() {
            self.buffer.clear();
            self.at = 0;
        }
        self.buffer.extend_from_slice(bytes);
    }

    /// The next whole message, `None` until more bytes come.
    pub fn next_message(&mut self) -> Result<Option<StreamMessage>, FrameError> {
        loop {
            let rest = &self.buffer[self.at..];
            if self.part == Part::Preamble {
                let n = rest.len().min(MAGIC.len());
                if rest[..n] != MAGIC[..n] {
                    return Err(FrameError::NotARecording(
                        "the stream is not a memcity recording (it does not start with the memcity magic bytes)".into(),
                    ));
                }
                if rest.len() < MAGIC.len() + 4 {
                    return Ok(None);
                }
                let version = u32::from_le_bytes(rest[8..12].try_into().expect("4 bytes"));
                if version == 0 || version > FORMAT_VERSION {
                    return Err(FrameError::NotARecording(format!(
                        "the stream is a memcity recording of format version {version}, but this viewer reads versions up to {FORMAT_VERSION}: upgrade memcity"
                    )));
                }
                self.at += MAGIC.len() + 4;
                self.part = Part::Header;
                continue;
            }
            let Some(head) = rest.get(..FRAME_HEADER_BYTES) else {
                return Ok(None);
            };
            let len = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
            let crc = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
            if len > MAX_FRAME_BYTES {
                return Err(FrameError::Damaged(format!(
                    "a frame of {len} bytes, past the most a recording holds ({MAX_FRAME_BYTES})"
                )));
            }
            let Some(payload) = rest.get(FRAME_HEADER_BYTES..FRAME_HEADER_BYTES + len as usize)
            else {
                return Ok(None);
            };
            if crc32fast::hash(payload) != crc {
                return Err(FrameError::Damaged("a frame's checksum fails".into()));
            }
            let message = if self.part == Part::Header {
                let header = RecordingHeader::decode(payload)
                    .map_err(|e| FrameError::Damaged(format!("the header frame: {e}")))?;
                self.part = Part::Messages;
                header.handshake.map(|h| StreamMessage {
                    kind: Some(crate::v1::stream_message::Kind::Handshake(h)),
                })
            } else {
                // As in a file: a message this reader cannot decode is a newer writer's, skipped.
                StreamMessage::decode(payload).ok()
            };
            self.at += FRAME_HEADER_BYTES + len as usize;
            if let Some(message) = message {
                return Ok(Some(message));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1::{stream_message::Kind, Handshake, Snapshot, StringTable};

    fn header() -> RecordingHeader {
        RecordingHeader {
            handshake: Some(Handshake {
                protocol_version: crate::PROTOCOL_VERSION,
                agent_version: "0.1.0".into(),
                pid: 42,
                jvm_version: "17".into(),
                classifiers: vec!["package".into(), "type".into()],
                ..Default::default()
            }),
            writer: "test".into(),
            recorded_at_unix_ms: 1,
            thinned_snapshots: 0,
        }
    }

    fn snapshot(seq: u64) -> StreamMessage {
        StreamMessage {
            kind: Some(Kind::Snapshot(Snapshot {
                seq,
                time_ms: seq * 100,
                ..Default::default()
            })),
        }
    }

    fn write_sample(snapshots: u64) -> Vec<u8> {
        let mut w = RecordingWriter::new(Vec::new(), &header()).unwrap();
        w.write(&StreamMessage {
            kind: Some(Kind::Strings(StringTable {
                sites: Vec::new(),
                first_id: 1,
                names: vec!["java.lang".into()],
            })),
        })
        .unwrap();
        for seq in 0..snapshots {
            w.write(&snapshot(seq)).unwrap();
        }
        w.finish().unwrap()
    }

    fn read_all(bytes: &[u8]) -> (Vec<StreamMessage>, RecordingReader<&[u8]>) {
        let mut r = RecordingReader::new(bytes, Path::new("mem.mcrec")).unwrap();
        let mut out = Vec::new();
        while let Some(m) = r.next_message().unwrap() {
            out.push(m);
        }
        (out, r)
    }

    fn seqs(messages: &[StreamMessage]) -> Vec<u64> {
        messages
            .iter()
            .filter_map(|m| match &m.kind {
                Some(Kind::Snapshot(s)) => Some(s.seq),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn round_trip() {
        let bytes = write_sample(3);
        let (messages, r) = read_all(&bytes);
        assert_eq!(r.header(), &header());
        assert_eq!(r.format_version(), FORMAT_VERSION);
        assert_eq!(messages.len(), 4);
        assert_eq!(seqs(&messages), [0, 1, 2]);
        assert_eq!(r.tail(), Some(&Tail::Clean));
        assert!(r.damage_summary().is_none());
    }

    #[test]
    fn truncated_file_opens_up_to_its_last_whole_frame() {
        let bytes = write_sample(3);
        // Cut off every possible number of trailing bytes inside the last frame.
        let full = read_all(&bytes).1.offset() as usize;
        let last_frame_len = bytes.len() - write_sample(2).len();
        for cut in 1..last_frame_len {
            let (messages, r) = read_all(&bytes[..full - cut]);
            assert_eq!(seqs(&messages), [0, 1], "cut {cut}");
            assert!(
                matches!(r.tail(), Some(Tail::Truncated { .. })),
                "cut {cut}"
            );
            assert!(r.damage_summary().unwrap().contains("cut off"));
        }
    }

    #[test]
    fn corrupted_frame_is_skipped_and_counted() {
        let mut bytes = write_sample(3);
        let second_snapshot_end = write_sample(2).len();
        // Flip a byte inside the payload of snapshot 1 (the frame before that end).
        bytes[second_snapshot_end - 2] ^= 0xff;
        let (messages, r) = read_all(&bytes);
        assert_eq!(seqs(&messages), [0, 2]);
        assert_eq!(r.skipped_corrupt(), 1);
        assert!(r.damage_summary().unwrap().contains("1 damaged frame"));
    }

    #[test]
    fn impossible_length_stops_reading_with_a_reason() {
        let mut bytes = write_sample(2);
        let at = write_sample(1).len();
        bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let (messages, r) = read_all(&bytes);
        assert_eq!(seqs(&messages), [0]);
        assert!(matches!(r.tail(), Some(Tail::Unreadable { .. })));
    }

    /// The byte offset of the frame holding snapshot `seq` in `write_sample(n)` (n > seq).
    fn frame_of(seq: u64) -> usize {
        write_sample(seq).len()
    }

    #[test]
    fn a_damaged_length_loses_only_its_frame() {
        for damaged in [
            (frame_of(1), 3u32),       // a little longer: the checksum fails
            (frame_of(1), 1u32 << 27), // far past the end, but below the impossible bound
        ] {
            let mut bytes = write_sample(4);
            let at = damaged.0;
            let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
            let wrong = if damaged.1 == 3 { len + 3 } else { damaged.1 };
            bytes[at..at + 4].copy_from_slice(&wrong.to_le_bytes());
            let (messages, r) = read_all(&bytes);
            assert_eq!(seqs(&messages), [0, 2, 3], "length {wrong}");
            assert_eq!(r.skipped_corrupt(), 1);
            assert_eq!(r.tail(), Some(&Tail::Clean), "not called cut off");
            assert!(r.damage_summary().unwrap().contains("1 damaged frame"));
        }
    }

    #[test]
    fn a_damaged_header_loses_only_the_jvm_details() {
        let mut bytes = write_sample(3);
        bytes[12 + FRAME_HEADER_BYTES + 3] ^= 0x40; // inside the header's payload
        let (messages, r) = read_all(&bytes);
        assert_eq!(seqs(&messages), [0, 1, 2]);
        assert_eq!(r.header(), &RecordingHeader::default());
        let summary = r.damage_summary().unwrap();
        assert!(summary.contains("header frame is damaged"), "{summary}");
    }

    /// Every single-bit flip after the version: no panic, and at most the frame it hits is lost
    /// (the strings table, the header's details, or one snapshot).
    #[test]
    fn any_flipped_bit_loses_at_most_one_frame() {
        let clean = write_sample(10);
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..400 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let bit = 12 * 8 + (seed % ((clean.len() as u64 - 12) * 8)) as usize;
            let mut bytes = clean.clone();
            bytes[bit / 8] ^= 1 << (bit % 8);
            let (messages, r) = read_all(&bytes);
            let read = seqs(&messages).len();
            assert!(
                read >= 9,
                "bit {bit}: {read} snapshots read; {:?}",
                r.damage_summary()
            );
        }
    }

    #[test]
    fn foreign_and_empty_and_future_files_get_clear_errors() {
        let path = Path::new("x.mcrec");
        let err = RecordingReader::new(&b"{\"time\": 1}"[..], path)
            .err()
            .unwrap();
        assert!(matches!(err, RecordingError::NotARecording { .. }));
        assert!(err.to_string().contains("not a memcity recording"));

        let err = RecordingReader::new(&b""[..], path).err().unwrap();
        assert!(matches!(err, RecordingError::Empty { .. }));
        assert!(err.to_string().contains("is empty"), "{err}");

        let err = RecordingReader::new(&MAGIC[..5], path).err().unwrap();
        assert!(matches!(err, RecordingError::NoHeader { .. }));

        let mut future = MAGIC.to_vec();
        future.extend_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
        let err = RecordingReader::new(future.as_slice(), path).err().unwrap();
        assert!(err.to_string().contains("upgrade memcity"), "{err}");

        let bytes = write_sample(0);
        let err = RecordingReader::new(&bytes[..20], path).err().unwrap();
        assert!(matches!(err, RecordingError::NoHeader { .. }), "{err}");
    }

    #[test]
    fn file_writer_and_reader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.mcrec");
        let mut w = RecordingWriter::create(&path, &header()).unwrap();
        w.write(&snapshot(7)).unwrap();
        w.flush().unwrap();
        // A reader sees the flushed prefix while the writer is still open.
        let seen: Vec<_> = RecordingReader::open(&path)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(seqs(&seen), [7]);
        drop(w);
        let err = RecordingReader::open(&dir.path().join("missing.mcrec"))
            .err()
            .unwrap();
        assert!(matches!(err, RecordingError::Io { .. }));
    }

    #[test]
    fn a_recording_in_pieces_decodes_as_the_file_reads() {
        let header = RecordingHeader {
            handshake: Some(crate::v1::Handshake {
                pid: 42,
                ..Default::default()
            }),
            ..Default::default()
        };
        let messages: Vec<StreamMessage> = (0..3)
            .map(|seq| StreamMessage {
                kind: Some(crate::v1::stream_message::Kind::Snapshot(
                    crate::v1::Snapshot {
                        seq,
                        ..Default::default()
                    },
                )),
            })
            .collect();
        let mut writer = RecordingWriter::new(Vec::new(), &header).unwrap();
        for m in &messages {
            writer.write(m).unwrap();
        }
        let bytes = writer.finish().unwrap();
        // Any cut: byte by byte, and in one piece.
        for piece in [1, 7, bytes.len()] {
            let mut decoder = FrameDecoder::new();
            let mut out = Vec::new();
            for chunk in bytes.chunks(piece) {
                decoder.push(chunk);
                while let Some(m) = decoder.next_message().unwrap() {
                    out.push(m);
                }
            }
            assert_eq!(out.len(), 4, "pieces of {piece}");
            assert!(
                matches!(&out[0].kind, Some(crate::v1::stream_message::Kind::Handshake(h)) if h.pid == 42)
            );
            assert_eq!(&out[1..], &messages[..]);
        }
        let mut damaged = bytes.clone();
        let last = damaged.len() - 1;
        damaged[last] ^= 0xff;
        let mut decoder = FrameDecoder::new();
        decoder.push(&damaged);
        let mut result = Ok(None);
        for _ in 0..5 {
            result = decoder.next_message();
            if result.is_err() {
                break;
            }
        }
        assert_eq!(
            result,
            Err(FrameError::Damaged("a frame's checksum fails".into()))
        );
        let mut text = FrameDecoder::new();
        text.push(b"<html>");
        assert!(matches!(
            text.next_message(),
            Err(FrameError::NotARecording(_))
        ));
    }

    /// A recording read while it is written ends with its last whole snapshot: the writer
    /// flushes after each, and after the session's end, and not after what leads up to one.
    #[test]
    fn a_file_read_while_written_holds_each_snapshot_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.mcrec");
        let mut w = RecordingWriter::create(&path, &RecordingHeader::default()).unwrap();
        let on_disk = || std::fs::metadata(&path).unwrap().len();
        let after_header = on_disk();
        assert_eq!(after_header, w.bytes(), "the header is flushed at once");
        w.write(&StreamMessage {
            kind: Some(Kind::Strings(StringTable {
                sites: Vec::new(),
                first_id: 1,
                names: vec!["app.Leak".into()],
            })),
        })
        .unwrap();
        assert_eq!(
            on_disk(),
            after_header,
            "names alone wait for their snapshot"
        );
        w.write(&StreamMessage {
            kind: Some(Kind::Snapshot(Snapshot::default())),
        })
        .unwrap();
        assert_eq!(on_disk(), w.bytes(), "the snapshot is on disk");
        w.write(&StreamMessage {
            kind: Some(Kind::End(crate::v1::SessionEnd::default())),
        })
        .unwrap();
        assert_eq!(on_disk(), w.bytes(), "and the end");
    }
}
