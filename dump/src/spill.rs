//! Dumps larger than memory: while a dump that needs more memory than is free is read, every
//! allocation of 32 MiB or more (the per-object and per-reference arrays, nothing else is that
//! big) is a shared mapping of an unlinked file beside the dump, instead of anonymous memory.
//! The kernel writes such pages back to their file and drops them under memory pressure, as it
//! would swap, without the machine having swap: the arrays may be larger than memory, at the
//! cost of the disk's speed where they do not fit. Smaller allocations, and every allocation
//! when the dump fits, go to the system allocator.
//!
//! The binaries that read dumps install [`Spill`] as their global allocator; the library turns
//! it on ([`prepare`]) for a dump it judges too big, and off after.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Allocations from this size on are spilled while spilling is on: every per-object array of a
/// dump of 250,000 objects or more, and few others (names, classes and maps are smaller).
pub const THRESHOLD: usize = 1 << 20;

/// What memcity needs while it reads a dump, per byte of the (uncompressed) dump: 75 bytes an
/// object at the peak (BENCHMARKS.md, "Heap dumps") against at least 25 bytes of dump an
/// object (an object's record with its id, class and one reference).
const NEED_PER_DUMP_BYTE: u64 = 3;
/// `-gz` dumps compress about five to one.
const GZ_RATIO: u64 = 5;

static ON: AtomicBool = AtomicBool::new(false);
/// The folder the files go in, as a C string (leaked: set once per spilled read, a few bytes).
static DIR: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());
/// Spilled blocks' addresses, so `dealloc` tells them from the system allocator's: at most
/// this many at once (a read holds a few dozen large arrays).
const SLOTS: usize = 4096;
static BLOCKS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
/// Their sizes, for the flusher (set before the address, cleared after).
static SIZES: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
/// Spilled blocks alive now: while none is, freeing a big block (the window's, a recording's)
/// looks in no registry.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// Bytes spilled so far, for the report.
static SPILLED: AtomicUsize = AtomicUsize::new(0);
/// Big blocks in memory now, and how many bytes of them fit before new ones spill: what is
/// free stays in use, and only the excess goes to files.
static IN_MEMORY: AtomicUsize = AtomicUsize::new(0);
static BUDGET: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The global allocator of a binary that reads dumps.
pub struct Spill;

// SAFETY: every block is either the system allocator's (passed through unchanged) or a fresh
// shared mapping of at least `layout.size()` bytes, page-aligned (so aligned for any layout up
// to a page, the largest asked here), registered until `dealloc` unmaps it.
unsafe impl GlobalAlloc for Spill {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if let Some(p) = spilled(layout) {
            return p;
        }
        counted(layout.size(), true);
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // A new file's pages read as zeros.
        if let Some(p) = spilled(layout) {
            return p;
        }
        counted(layout.size(), true);
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() >= THRESHOLD && unregister(ptr) {
            // SAFETY: a mapping `spilled` made of this size, no longer registered, so unmapped
            // once.
            unsafe { libc::munmap(ptr.cast(), layout.size()) };
            return;
        }
        counted(layout.size(), false);
        // SAFETY: not a spilled block, so the system allocator's, with the caller's layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let was_spilled = layout.size() >= THRESHOLD && is_registered(ptr);
        let spill_now = new_size >= THRESHOLD && ON.load(Ordering::Relaxed);
        if !was_spilled && !spill_now {
            counted(layout.size(), false);
            counted(new_size, true);
            // SAFETY: the caller's contract for `realloc`, on a system block.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        // SAFETY: the layout of the new size is valid: `realloc`'s contract says so.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: a valid, non-zero layout.
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are live and at least this long, and distinct.
            unsafe { std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size)) };
            // SAFETY: the old block, with its layout, freed once.
            unsafe { self.dealloc(ptr, layout) };
        }
        new
    }
}

/// Keeps the count of big blocks in memory (`add`: one more of `size`, else one less).
fn counted(size: usize, add: bool) {
    if size >= THRESHOLD {
        if add {
            IN_MEMORY.fetch_add(size, Ordering::Relaxed);
        } else {
            IN_MEMORY.fetch_sub(size, Ordering::Relaxed);
        }
    }
}

/// A new spilled block for `layout`, when spilling is on, it is big enough and memory's share
/// is used up.
fn spilled(layout: Layout) -> Option<*mut u8> {
    if layout.size() < THRESHOLD || layout.align() > 4096 || !ON.load(Ordering::Relaxed) {
        return None;
    }
    let in_memory = IN_MEMORY.load(Ordering::Relaxed);
    if in_memory.saturating_add(layout.size()) <= BUDGET.load(Ordering::Relaxed) {
        return None;
    }
    let dir = DIR.load(Ordering::Acquire);
    if dir.is_null() {
        return None;
    }
    // SAFETY: `dir` is a NUL-terminated string leaked by `enable`, never freed; the file is
    // made unlinked (O_TMPFILE), sized, mapped, and its descriptor closed (the mapping keeps
    // the file until it is unmapped).
    let p = unsafe {
        let fd = libc::open(dir, libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC, 0o600);
        if fd < 0 {
            return None;
        }
        // Reserved, not just sized: a sparse file whose disk fills would make a later write
        // to the mapping a SIGBUS; a refusal now is memory instead.
        let sized = libc::posix_fallocate(fd, 0, layout.size() as libc::off_t) == 0;
        let p = if sized {
            libc::mmap(
                std::ptr::null_mut(),
                layout.size(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        } else {
            libc::MAP_FAILED
        };
        libc::close(fd);
        p
    };
    if p == libc::MAP_FAILED {
        // No room in the folder: memory it is, as without spilling.
        return None;
    }
    if !register(p.cast(), layout.size()) {
        // SAFETY: the mapping just made, of this size, not handed out.
        unsafe { libc::munmap(p, layout.size()) };
        return None;
    }
    SPILLED.fetch_add(layout.size(), Ordering::Relaxed);
    Some(p.cast())
}

fn register(p: *mut u8, size: usize) -> bool {
    LIVE.fetch_add(1, Ordering::AcqRel);
    let registered = BLOCKS.iter().zip(&SIZES).any(|(slot, bytes)| {
        let taken = slot
            .compare_exchange(0, p as usize, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok();
        if taken {
            bytes.store(size, Ordering::Release);
        }
        taken
    });
    if !registered {
        LIVE.fetch_sub(1, Ordering::AcqRel);
    }
    registered
}

fn unregister(p: *mut u8) -> bool {
    if LIVE.load(Ordering::Acquire) == 0 {
        return false;
    }
    let found = BLOCKS.iter().any(|slot| {
        slot.compare_exchange(p as usize, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    });
    if found {
        LIVE.fetch_sub(1, Ordering::AcqRel);
    }
    found
}

fn is_registered(p: *mut u8) -> bool {
    LIVE.load(Ordering::Acquire) != 0
        && BLOCKS
            .iter()
            .any(|slot| slot.load(Ordering::Acquire) == p as usize)
}

/// Reads of dumps that spill, one at a time (the switch and folder are global).
static READING: Mutex<()> = Mutex::new(());

/// Spilling for the read of one dump: on while it lives, if the dump needs it.
pub struct Prepared {
    _reading: Option<std::sync::MutexGuard<'static, ()>>,
    /// Where the files go, when spilling.
    pub dir: Option<PathBuf>,
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if self.dir.is_some() {
            ON.store(false, Ordering::Release);
        }
    }
}

/// Turns spilling on for reading `dump` when it needs more memory than is free (or when
/// `MEMCITY_SPILL=always`; never with `MEMCITY_SPILL=never`), into `MEMCITY_SPILL_DIR` or the
/// dump's own folder (on a disk, where `/tmp` may be memory).
pub fn prepare(dump: &Path, compressed: bool) -> Prepared {
    let choice = std::env::var("MEMCITY_SPILL").unwrap_or_default();
    let size = std::fs::metadata(dump).map_or(0, |m| m.len());
    let need = size * NEED_PER_DUMP_BYTE * if compressed { GZ_RATIO } else { 1 };
    let free = available_memory();
    let spill = match choice.as_str() {
        "always" => true,
        "never" => false,
        _ => free.is_some_and(|free| need > free),
    };
    if !spill {
        return Prepared {
            _reading: None,
            dir: None,
        };
    }
    let dir = std::env::var_os("MEMCITY_SPILL_DIR")
        .map(PathBuf::from)
        .or_else(|| dump.parent().map(Path::to_path_buf))
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."));
    let guard = READING.lock().unwrap_or_else(|e| e.into_inner());
    let Ok(c) = CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return Prepared {
            _reading: None,
            dir: None,
        };
    };
    // Leaked: a few bytes per spilled read, and the allocator may read it at any time.
    DIR.store(c.into_raw(), Ordering::Release);
    // Half of what is free now is memory's share (the rest is for what is not a big array,
    // and for the spilled pages the kernel keeps); `always` spills every big block.
    let budget = match (choice.as_str(), free) {
        ("always", _) | (_, None) => 0,
        (_, Some(free)) => (free / 2) as usize,
    };
    BUDGET.store(
        IN_MEMORY.load(Ordering::Relaxed).saturating_add(budget),
        Ordering::Release,
    );
    ON.store(true, Ordering::Release);
    start_flusher();
    Prepared {
        _reading: Some(guard),
        dir: Some(dir),
    }
}

/// Writes the spilled blocks' dirty pages to their files every 50 ms, so that the kernel can
/// drop them when memory is short: without it, a control group (v1) whose limit the dirty
/// pages fill kills the process before their writeback starts, as it does not throttle
/// writers. Started once; idle when nothing is spilled.
fn start_flusher() {
    static STARTED: AtomicBool = AtomicBool::new(false);
    if STARTED.swap(true, Ordering::AcqRel) {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("memcity-spill-flush".into())
        .spawn(|| loop {
            std::thread::sleep(std::time::Duration::from_millis(50));
            if LIVE.load(Ordering::Acquire) == 0 {
                continue;
            }
            for (slot, bytes) in BLOCKS.iter().zip(&SIZES) {
                let (p, size) = (slot.load(Ordering::Acquire), bytes.load(Ordering::Acquire));
                if p != 0 && size != 0 {
                    // SAFETY: msync only writes pages back; on a range unmapped meanwhile it
                    // fails with ENOMEM, and on one mapped anew it flushes that mapping: both
                    // harmless.
                    unsafe { libc::msync(p as *mut libc::c_void, size, libc::MS_SYNC) };
                }
            }
        });
    if spawned.is_err() {
        // No thread: spilling still works where the kernel throttles dirty pages itself.
        STARTED.store(false, Ordering::Release);
    }
}

/// Bytes of blocks spilled so far in this process.
pub fn spilled_bytes() -> u64 {
    SPILLED.load(Ordering::Relaxed) as u64
}

/// Memory free for this process: the system's available memory, or its control group's
/// headroom when that is smaller (a container's limit).
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let system = meminfo
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| kb * 1024)?;
    Some(cgroup_headroom().map_or(system, |room| room.min(system)))
}

/// The control group's limit less its usage (v2 `memory.max`, v1 `memory.limit_in_bytes`).
fn cgroup_headroom() -> Option<u64> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let read = |p: String| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let (limit, usage) = if controllers.is_empty() {
            let base = format!("/sys/fs/cgroup{path}");
            (
                read(format!("{base}/memory.max")),
                read(format!("{base}/memory.current")),
            )
        } else if controllers.split(',').any(|c| c == "memory") {
            let base = format!("/sys/fs/cgroup/memory{path}");
            (
                read(format!("{base}/memory.limit_in_bytes")),
                read(format!("{base}/memory.usage_in_bytes")),
            )
        } else {
            continue;
        };
        if let (Some(limit), Some(usage)) = (limit, usage) {
            // An unlimited v1 group reads as a huge number.
            if limit < 1 << 60 {
                return Some(limit.saturating_sub(usage));
            }
        }
    }
    None
}
