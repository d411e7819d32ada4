//! The dump's bytes, plain or gzip-compressed, read front to back with big-endian helpers.
//!
//! A dump is read twice, sequentially (objects and roots come in no useful order, §1.6 of
//! docs/heap-dumps-research.md), so the input never seeks: a `-gz` dump is decompressed twice
//! rather than held. Offsets in errors are offsets in the uncompressed stream, as `hexdump` of
//! the gunzipped file shows them.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use crate::DumpError;

/// Large reads: the decoder and the kernel both work best on big blocks, and a sub-record is at
/// most an object's fields or array (long arrays are skipped, never buffered whole).
const BUFFER: usize = 4 << 20;

pub struct Input {
    source: Box<dyn Read + Send>,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    /// Uncompressed bytes consumed before `buf[0]`.
    base: u64,
    eof: bool,
    id_size: usize,
    compressed: bool,
}

impl Input {
    /// Opens `path`, decompressing it when it starts with gzip's magic.
    pub fn open(path: &Path) -> Result<Self, DumpError> {
        let io = |source| DumpError::Io {
            path: path.to_owned(),
            source,
        };
        let mut file = File::open(path).map_err(io)?;
        let mut magic = [0u8; 2];
        let got = read_full(&mut file, &mut magic).map_err(io)?;
        let file = File::open(path).map_err(io)?;
        let compressed = got == 2 && magic == [0x1f, 0x8b];
        let source: Box<dyn Read + Send> = if compressed {
            // Not `GzDecoder`: it stops after the first member, 1 MiB into a `-gz` dump.
            Box::new(MultiGzDecoder::new(io::BufReader::with_capacity(
                1 << 20,
                file,
            )))
        } else {
            Box::new(file)
        };
        Ok(Self::new(source, compressed))
    }

    /// A dump held in memory, plain or gzip-compressed.
    pub fn from_bytes(data: &[u8]) -> Self {
        let compressed = data.starts_with(&[0x1f, 0x8b]);
        let bytes = io::Cursor::new(data.to_vec());
        let source: Box<dyn Read + Send> = if compressed {
            Box::new(MultiGzDecoder::new(bytes))
        } else {
            Box::new(bytes)
        };
        Self::new(source, compressed)
    }

    pub fn new(source: Box<dyn Read + Send>, compressed: bool) -> Self {
        Self {
            source,
            buf: vec![0; BUFFER],
            pos: 0,
            len: 0,
            base: 0,
            eof: false,
            id_size: 8,
            compressed,
        }
    }

    pub fn compressed(&self) -> bool {
        self.compressed
    }

    pub fn set_id_size(&mut self, size: usize) {
        self.id_size = size;
    }

    pub fn id_size(&self) -> usize {
        self.id_size
    }

    /// Offset of the next byte in the uncompressed stream.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Makes at least `n` bytes (n <= BUFFER) available, or fewer at the end of the stream.
    fn fill(&mut self, n: usize) -> io::Result<usize> {
        if self.len - self.pos >= n {
            return Ok(self.len - self.pos);
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.len, 0);
            self.base += self.pos as u64;
            self.len -= self.pos;
            self.pos = 0;
        }
        while self.len < n && !self.eof {
            let got = match self.source.read(&mut self.buf[self.len..]) {
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if got == 0 {
                self.eof = true;
            }
            self.len += got;
        }
        Ok(self.len - self.pos)
    }

    /// Whether the stream has no byte left.
    pub fn at_end(&mut self) -> Result<bool, DumpError> {
        let available = self.fill(1).map_err(|e| self.read_error(e))?;
        Ok(available == 0)
    }

    /// The next `n` bytes (n <= 4 MiB), or an error naming where the dump ends.
    pub fn bytes(&mut self, n: usize, what: &str) -> Result<&[u8], DumpError> {
        debug_assert!(n <= BUFFER);
        let available = self.fill(n).map_err(|e| self.read_error(e))?;
        if available < n {
            return Err(self.truncated(what));
        }
        let start = self.pos;
        self.pos += n;
        Ok(&self.buf[start..start + n])
    }

    pub fn skip(&mut self, mut n: u64, what: &str) -> Result<(), DumpError> {
        while n > 0 {
            let available = self.fill(1).map_err(|e| self.read_error(e))?;
            if available == 0 {
                return Err(self.truncated(what));
            }
            let step = (available as u64).min(n) as usize;
            self.pos += step;
            n -= step as u64;
        }
        Ok(())
    }

    pub fn u8(&mut self, what: &str) -> Result<u8, DumpError> {
        Ok(self.bytes(1, what)?[0])
    }

    pub fn u16(&mut self, what: &str) -> Result<u16, DumpError> {
        let b = self.bytes(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub fn u32(&mut self, what: &str) -> Result<u32, DumpError> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self, what: &str) -> Result<u64, DumpError> {
        let b = self.bytes(8, what)?;
        Ok(u64::from_be_bytes(b.try_into().expect("8 bytes")))
    }

    /// An object or symbol id: an address, 4 or 8 bytes as the header says.
    pub fn id(&mut self, what: &str) -> Result<u64, DumpError> {
        if self.id_size == 8 {
            self.u64(what)
        } else {
            self.u32(what).map(u64::from)
        }
    }

    fn truncated(&self, what: &str) -> DumpError {
        DumpError::Truncated {
            offset: self.base + self.len as u64,
            what: what.to_owned(),
        }
    }

    fn read_error(&self, source: io::Error) -> DumpError {
        // A gzip member cut short or corrupt surfaces here, from the decoder.
        DumpError::Read {
            offset: self.offset(),
            compressed: self.compressed,
            source,
        }
    }
}

/// Whether the file at `path` starts with gzip's magic (for spilling's estimate, Unix only).
#[cfg(unix)]
pub fn is_gzip(path: &Path) -> bool {
    let mut magic = [0u8; 2];
    File::open(path)
        .and_then(|mut f| read_full(&mut f, &mut magic))
        .is_ok_and(|n| n == 2 && magic == [0x1f, 0x8b])
}

/// Reads until `buf` is full or the file ends: how many bytes it holds.
fn read_full(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
