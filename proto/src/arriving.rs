//! A recording read as its bytes arrive (the page's fetch of a served recording, a file dropped
//! on it), exactly as [`RecordingReader`] reads a file, damage included, without holding the
//! whole file: a 192 MiB recording held whole in a browser tab beside the model it becomes
//! was twice its size in the tab's memory (the fetched copy, then the copy handed to the
//! viewer).
//!
//! The reader is only asked for a frame once that frame has arrived whole (its length
//! possible, its bytes all there, its checksum holding), so it never mistakes "not yet" for
//! the file's end. Damage is another matter: finding the next whole frame after it searches the
//! rest of the file, so from the first damaged frame on, the bytes are kept until the last has
//! come, and then read as a file's are.

use std::cell::RefCell;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use prost::Message;

use crate::recording::{
    RecordingError, RecordingReader, FORMAT_VERSION, FRAME_HEADER_BYTES, MAGIC, MAX_FRAME_BYTES,
};
use crate::v1::StreamMessage;

/// Consumed bytes are given back once they are this many and half of what is held.
const COMPACT_AT: usize = 1 << 20;

/// The bytes that have arrived and are not read yet, shared by the pusher and the reader.
#[derive(Default)]
struct Arrived {
    bytes: Vec<u8>,
    /// Bytes of `bytes` already read.
    read: usize,
}

impl Arrived {
    fn unread(&self) -> &[u8] {
        &self.bytes[self.read..]
    }
}

/// The reader's input: what has arrived, read from the front.
struct Queue(Rc<RefCell<Arrived>>);

impl Read for Queue {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut arrived = self.0.borrow_mut();
        let rest = arrived.unread();
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        arrived.read += n;
        Ok(n)
    }
}

/// What the next frame's bytes say so far.
#[derive(Debug, PartialEq, Eq)]
enum Ahead {
    Whole,
    /// Its length is possible and not all of it has come.
    Partial,
    /// Its length is impossible or its checksum fails.
    Damaged,
}

fn frame_ahead(bytes: &[u8]) -> Ahead {
    let Some(head) = bytes.get(..FRAME_HEADER_BYTES) else {
        return Ahead::Partial;
    };
    let len = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
    let crc = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
    if len > MAX_FRAME_BYTES {
        return Ahead::Damaged;
    }
    match bytes.get(FRAME_HEADER_BYTES..FRAME_HEADER_BYTES + len as usize) {
        None => Ahead::Partial,
        Some(payload) if crc32fast::hash(payload) == crc => Ahead::Whole,
        Some(_) => Ahead::Damaged,
    }
}

/// A recording read as its bytes arrive: [`ArrivingRecording::push`] them, take the messages
/// whole so far with [`ArrivingRecording::next_message`], and say [`ArrivingRecording::end`]
/// when the last has come; the messages after that are the file's last.
pub struct ArrivingRecording {
    arrived: Rc<RefCell<Arrived>>,
    name: PathBuf,
    /// Once the preamble and header have come.
    reader: Option<RecordingReader<Queue>>,
    ended: bool,
    /// A damaged frame lies ahead: nothing more is read until the end.
    damaged: bool,
}

impl ArrivingRecording {
    /// `name` only names the recording in messages.
    pub fn new(name: &Path) -> Self {
        Self {
            arrived: Rc::default(),
            name: name.to_owned(),
            reader: None,
            ended: false,
            damaged: false,
        }
    }

    /// The next bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        let mut arrived = self.arrived.borrow_mut();
        if arrived.read >= COMPACT_AT && arrived.read * 2 >= arrived.bytes.len() {
            let read = arrived.read;
            arrived.bytes.drain(..read);
            arrived.read = 0;
        }
        arrived.bytes.extend_from_slice(bytes);
    }

    /// No more bytes come.
    pub fn end(&mut self) {
        self.ended = true;
    }

    /// The reader, once the recording's header has come (its header, its damage).
    pub fn reader(&self) -> Option<&RecordingReader<impl Read>> {
        self.reader.as_ref()
    }

    /// The next message, `None` until more bytes come (or, after [`ArrivingRecording::end`],
    /// at the end of the readable part). An error is the recording's start: not a recording,
    /// of a newer format, or without a header.
    pub fn next_message(&mut self) -> Result<Option<StreamMessage>, RecordingError> {
        if self.reader.is_none() {
            if !self.header_has_come() {
                return Ok(None);
            }
            self.reader = Some(RecordingReader::new(
                Queue(self.arrived.clone()),
                &self.name,
            )?);
        }
        let reader = self.reader.as_mut().expect("made above");
        let io = |source| RecordingError::Io {
            path: self.name.clone(),
            source,
        };
        if self.ended {
            return reader.next_message().map_err(io);
        }
        loop {
            if self.damaged {
                return Ok(None);
            }
            match frame_ahead(self.arrived.borrow().unread()) {
                Ahead::Whole => {}
                Ahead::Partial => return Ok(None),
                Ahead::Damaged => {
                    self.damaged = true;
                    return Ok(None);
                }
            }
            // Whole and its checksum holds: the reader reads exactly it.
            let Some(payload) = reader.next_payload().map_err(io)? else {
                return Ok(None);
            };
            match StreamMessage::decode(payload.as_slice()) {
                Ok(message) => return Ok(Some(message)),
                // As in a file: a newer writer's message, skipped and counted.
                Err(_) => reader.skip_undecodable(),
            }
        }
    }

    /// Whether the reader can be made without mistaking "not yet" for a short file: the
    /// preamble and a whole header frame have come, or what came is no recording, or all has.
    fn header_has_come(&self) -> bool {
        let arrived = self.arrived.borrow();
        let bytes = arrived.unread();
        let preamble = MAGIC.len() + 4;
        let known = bytes.len().min(MAGIC.len());
        // A version this reader cannot read is said at once, not after its header has come
        // (a newer format may frame it otherwise).
        let unreadable = bytes.get(MAGIC.len()..preamble).is_some_and(|v| {
            let version = u32::from_le_bytes(v.try_into().expect("4 bytes"));
            version == 0 || version > FORMAT_VERSION
        });
        self.ended
            || bytes[..known] != MAGIC[..known]
            || unreadable
            || (bytes.len() >= preamble && frame_ahead(&bytes[preamble..]) == Ahead::Whole)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::RecordingWriter;
    use crate::v1::{stream_message::Kind, Handshake, RecordingHeader, Snapshot};

    fn recording(snapshots: u64) -> Vec<u8> {
        let header = RecordingHeader {
            handshake: Some(Handshake {
                pid: 42,
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut writer = RecordingWriter::new(Vec::new(), &header).unwrap();
        for id in 0..snapshots {
            writer
                .write(&StreamMessage {
                    kind: Some(Kind::Snapshot(Snapshot {
                        seq: id,
                        time_ms: id * 1_000,
                        ..Default::default()
                    })),
                })
                .unwrap();
        }
        writer.finish().unwrap()
    }

    /// The snapshot ids read from `bytes` handed over in `piece`-byte pieces, and the damage
    /// said at the end.
    fn read_in_pieces(bytes: &[u8], piece: usize) -> (Vec<u64>, Option<String>) {
        let mut arriving = ArrivingRecording::new(Path::new("r.mcrec"));
        let mut ids = Vec::new();
        let mut take = |arriving: &mut ArrivingRecording| {
            while let Some(message) = arriving.next_message().unwrap() {
                if let Some(Kind::Snapshot(s)) = message.kind {
                    ids.push(s.seq);
                }
            }
        };
        for chunk in bytes.chunks(piece) {
            arriving.push(chunk);
            take(&mut arriving);
        }
        arriving.end();
        take(&mut arriving);
        let damage = arriving.reader().and_then(|r| r.damage_summary());
        (ids, damage)
    }

    fn read_whole(bytes: &[u8]) -> (Vec<u64>, Option<String>) {
        let mut reader =
            RecordingReader::new(std::io::Cursor::new(bytes), Path::new("r.mcrec")).unwrap();
        let mut ids = Vec::new();
        while let Some(message) = reader.next_message().unwrap() {
            if let Some(Kind::Snapshot(s)) = message.kind {
                ids.push(s.seq);
            }
        }
        (ids, reader.damage_summary())
    }

    #[test]
    fn pieces_of_any_size_read_as_the_whole_file() {
        let bytes = recording(50);
        for piece in [1, 7, 64, 1000, bytes.len()] {
            assert_eq!(
                read_in_pieces(&bytes, piece),
                ((0..50).collect(), None),
                "{piece}-byte pieces"
            );
        }
    }

    #[test]
    fn damage_and_a_cut_read_as_in_a_file() {
        let whole = recording(40);
        let mut damaged = whole.clone();
        // A byte inside some frame in the middle.
        let at = whole.len() / 2;
        damaged[at] ^= 0xff;
        let mut cut = whole.clone();
        cut.truncate(whole.len() - 5);
        let mut bad_length = whole.clone();
        // The first message frame's length, past the most a frame may be.
        let header_len = u32::from_le_bytes(whole[12..16].try_into().unwrap()) as usize;
        let first = 12 + FRAME_HEADER_BYTES + header_len;
        bad_length[first + 3] = 0xff;
        for (what, bytes) in [
            ("damaged", damaged),
            ("cut", cut),
            ("bad length", bad_length),
        ] {
            let expected = read_whole(&bytes);
            assert!(expected.1.is_some(), "{what}: the premise");
            for piece in [3, 100, 4096] {
                assert_eq!(read_in_pieces(&bytes, piece), expected, "{what}, {piece}");
            }
        }
    }

    #[test]
    fn what_is_no_recording_is_refused_before_it_all_comes() {
        let mut arriving = ArrivingRecording::new(Path::new("notes.json"));
        arriving.push(b"{\"trees\": [");
        assert!(matches!(
            arriving.next_message(),
            Err(RecordingError::NotARecording { .. })
        ));
        let mut newer = ArrivingRecording::new(Path::new("n.mcrec"));
        newer.push(&MAGIC);
        newer.push(&(FORMAT_VERSION + 1).to_le_bytes());
        assert!(matches!(
            newer.next_message(),
            Err(RecordingError::UnsupportedVersion { .. })
        ));
        let mut empty = ArrivingRecording::new(Path::new("e.mcrec"));
        assert!(empty.next_message().unwrap().is_none(), "not yet");
        empty.end();
        assert!(matches!(
            empty.next_message(),
            Err(RecordingError::Empty { .. })
        ));
    }

    #[test]
    fn what_was_read_is_given_back() {
        let bytes = recording(300_000);
        assert!(bytes.len() > 4 * COMPACT_AT, "the premise: {}", bytes.len());
        let mut arriving = ArrivingRecording::new(Path::new("r.mcrec"));
        let mut most = 0;
        for chunk in bytes.chunks(64 << 10) {
            arriving.push(chunk);
            while arriving.next_message().unwrap().is_some() {}
            most = most.max(arriving.arrived.borrow().bytes.capacity());
        }
        assert!(most <= 3 * COMPACT_AT, "held {most} of {}", bytes.len());
    }
}
