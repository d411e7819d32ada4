//! Files memcity makes in directories others may write too (`/tmp`, a folder another user owns,
//! a path given in an option): created only where nothing stood, never through a link, never
//! into a file someone else made, readable by their owner only; and private folders that are
//! used only when they are exactly what memcity would have made.
//!
//! The rules a security reviewer of a profiler run as root checks first: `O_CREAT | O_EXCL`
//! (which never follows a link, whatever `O_NOFOLLOW` says) for every file memcity creates,
//! names no one can guess for its temporary files, a rename to put a finished file in place
//! (a rename replaces a link; it never writes through one), and `lstat` on any folder found.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Mode of every file memcity creates: what it writes (the heap's structure, tokens, ports) is
/// its user's to share.
pub const PRIVATE_FILE: u32 = 0o600;
/// Mode of every folder memcity creates.
pub const PRIVATE_DIR: u32 = 0o700;

/// `bytes` random bytes from the kernel as hex: tokens, and names no one can guess (and so
/// plant first).
pub fn random_hex(bytes: usize) -> io::Result<String> {
    let mut buf = vec![0u8; bytes];
    File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// 64 random bits, for temporary names.
fn random_suffix() -> io::Result<String> {
    random_hex(8)
}

/// Creates `path` with `mode`, failing if anything is there already (a file, a link, a folder).
pub fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// A fresh file beside `path` (same folder, so a rename onto `path` is atomic), with a name no
/// one can guess; returns it and its path.
pub(crate) fn create_beside(path: &Path, mode: u32) -> io::Result<(File, PathBuf)> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?;
    // A few tries: the name is random, so EEXIST means someone planted the very same name.
    for _ in 0..4 {
        let mut temp_name = std::ffi::OsString::from(".");
        temp_name.push(name);
        temp_name.push(format!(".{}.memcity-tmp", random_suffix()?));
        let temp = match dir {
            Some(dir) => dir.join(&temp_name),
            None => PathBuf::from(&temp_name),
        };
        match create_new(&temp, mode) {
            Ok(file) => return Ok((file, temp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "could not create a temporary file beside it",
    ))
}

/// Puts `temp` in place of `path`, or removes it and says why not.
pub(crate) fn rename_over(temp: &Path, path: &Path) -> io::Result<()> {
    std::fs::rename(temp, path).map_err(|e| {
        let _ = std::fs::remove_file(temp);
        if e.raw_os_error() == Some(libc::EPERM) {
            // rename(2) in a sticky folder (`/tmp`) onto a file of another user.
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                "a file of another user is in the way (in a shared folder such as /tmp it can only be removed by its owner); choose another name",
            )
        } else {
            e
        }
    })
}

/// A device or a pipe already at `path` (`/dev/full`, a FIFO a reader waits on): written in
/// place, never replaced by a rename (which would put a plain file where a device node was),
/// and only when it is this user's or root's (a pipe another user planted in `/tmp` would read
/// what memcity writes). `None` when `path` is anything else, or nothing.
fn special_in_place(path: &Path) -> io::Result<Option<File>> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(None);
    };
    let kind = meta.file_type();
    if kind.is_file() || kind.is_symlink() || kind.is_dir() {
        return Ok(None);
    }
    if meta.uid() != effective_uid() && meta.uid() != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "a pipe or device of another user (uid {}) is in the way; choose another name",
                meta.uid()
            ),
        ));
    }
    // Opened without waiting: a pipe nobody reads would otherwise hold the caller (the agent's
    // server thread) in open(2) for good; it fails at once instead (ENXIO). Writes then block
    // as usual, so a reader that is slow is waited for, not lost.
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => io::Error::new(
                io::ErrorKind::NotConnected,
                "a pipe that nobody reads is in the way; start its reader first",
            ),
            _ => e,
        })?;
    let fd = std::os::unix::io::AsRawFd::as_raw_fd(&file);
    // SAFETY: fcntl on a descriptor `file` owns, with plain integer arguments.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Some(file))
}

/// Writes `contents` to `path` (mode 0600) all at once: into a private file beside it, then
/// renamed over whatever `path` was (a link is replaced, not followed), so a reader never sees
/// half of it. A device or pipe of this user's or root's is written in place.
pub fn replace(path: &Path, contents: &[u8]) -> io::Result<()> {
    if let Some(mut special) = special_in_place(path)? {
        return special.write_all(contents);
    }
    let (mut file, temp) = create_beside(path, PRIVATE_FILE)?;
    let written = file.write_all(contents).and_then(|()| file.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    rename_over(&temp, path)
}

/// A new file at `path` (mode 0600) to write as a stream (a recording): created privately
/// beside it and renamed onto `path` at once, replacing what was there (a link, or a file
/// someone made for memcity to write into, is replaced, never written through). A device or
/// pipe of this user's or root's is written in place.
pub fn create_replacing(path: &Path) -> io::Result<File> {
    if let Some(special) = special_in_place(path)? {
        return Ok(special);
    }
    let (file, temp) = create_beside(path, PRIVATE_FILE)?;
    rename_over(&temp, path)?;
    Ok(file)
}

/// What is wrong with a folder memcity found rather than made, if anything: it must be a
/// folder (not a link to one), of `owner`, open to no one else.
pub fn check_private_dir(dir: &Path, owner: u32) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    let what = if meta.file_type().is_symlink() {
        Some("a link".to_string())
    } else if !meta.is_dir() {
        Some("not a folder".to_string())
    } else if meta.uid() != owner {
        Some(format!("owned by uid {}, not {owner}", meta.uid()))
    } else if meta.mode() & 0o077 != 0 {
        Some(format!("open to others (mode {:o})", meta.mode() & 0o777))
    } else {
        None
    };
    match what {
        None => Ok(()),
        Some(what) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is {what}: memcity did not make it, and uses only a private folder of uid {owner}; remove it",
                dir.display()
            ),
        )),
    }
}

/// Creates `dir` (0700), or checks an existing one with [`check_private_dir`].
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    match DirBuilder::new().mode(PRIVATE_DIR).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            check_private_dir(dir, effective_uid())
        }
        Err(e) => Err(e),
    }
}

/// A new private folder `<base>/<prefix>.<random>` (as mkdtemp(3) makes one).
pub fn make_unique_dir(base: &Path, prefix: &str) -> io::Result<PathBuf> {
    for _ in 0..4 {
        let dir = base.join(format!("{prefix}.{}", random_suffix()?));
        match DirBuilder::new().mode(PRIVATE_DIR).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("could not create a private folder in {}", base.display()),
    ))
}

/// Reads `path` without following a link at its end.
pub fn read_no_follow(path: &Path) -> io::Result<Vec<u8>> {
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// This process's effective uid.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn new_files_refuse_anything_already_there_and_links_above_all() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("secret");
        std::fs::write(&target, "keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = create_new(&link, PRIVATE_FILE).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{err}");
        // A dangling link too: O_EXCL does not create its target.
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(create_new(&dangling, PRIVATE_FILE).is_err());
        assert!(!dir.path().join("nowhere").exists());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        let fresh = dir.path().join("fresh");
        create_new(&fresh, PRIVATE_FILE).unwrap();
        assert_eq!(mode(&fresh), 0o600);
    }

    #[test]
    fn replacing_swaps_a_planted_link_or_file_and_never_writes_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("root-file");
        std::fs::write(&target, "keep").unwrap();
        let planted = dir.path().join("port");
        std::os::unix::fs::symlink(&target, &planted).unwrap();
        replace(&planted, b"7788\n").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&planted).unwrap(), "7788\n");
        assert!(!std::fs::symlink_metadata(&planted)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(mode(&planted), 0o600);
        // A file someone made open to all, for memcity to write into: replaced by a private one.
        let open = dir.path().join("a.mcrec");
        std::fs::write(&open, "").unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).unwrap();
        let kept_open = File::open(&open).unwrap();
        let mut file = create_replacing(&open).unwrap();
        file.write_all(b"recording").unwrap();
        assert_eq!(mode(&open), 0o600);
        assert_eq!(std::fs::read_to_string(&open).unwrap(), "recording");
        // Whoever held the old file reads none of it.
        assert_eq!(kept_open.metadata().unwrap().len(), 0);
        // No temporary file is left.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
    }

    /// A device or a pipe stays what it is: `/dev/null` (and `/dev/full`, whose writes fail as
    /// a full disk's) are written, not replaced by a file of the same name.
    #[test]
    fn devices_and_pipes_are_written_in_place() {
        let null = Path::new("/dev/null");
        let mut file = create_replacing(null).unwrap();
        file.write_all(b"discarded").unwrap();
        replace(null, b"discarded").unwrap();
        let meta = std::fs::symlink_metadata(null).unwrap();
        assert!(std::os::unix::fs::FileTypeExt::is_char_device(
            &meta.file_type()
        ));
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = std::thread::spawn({
            let fifo = fifo.clone();
            move || std::fs::read(fifo).unwrap()
        });
        // Its reader has opened it (or the open below fails at once rather than waiting).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let written = loop {
            match replace(&fifo, b"7788\n") {
                Err(e) if e.kind() == io::ErrorKind::NotConnected => {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "the reader never opened"
                    );
                    std::thread::yield_now();
                }
                other => break other,
            }
        };
        written.unwrap();
        assert_eq!(reader.join().unwrap(), b"7788\n");
        // With no reader at all: an error that says so, at once.
        let err = replace(&fifo, b"x").unwrap_err();
        assert!(err.to_string().contains("nobody reads"), "{err}");
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(
            &std::fs::symlink_metadata(&fifo).unwrap().file_type()
        ));
    }

    #[test]
    fn a_folder_is_used_only_if_it_is_what_memcity_makes() {
        let base = tempfile::tempdir().unwrap();
        let me = effective_uid();
        let fresh = base.path().join("fresh");
        ensure_private_dir(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o700);
        ensure_private_dir(&fresh).unwrap();
        let open = base.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = check_private_dir(&open, me).unwrap_err().to_string();
        assert!(err.contains("open to others (mode 755)"), "{err}");
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&fresh, &link).unwrap();
        let err = ensure_private_dir(&link).unwrap_err().to_string();
        assert!(err.contains("is a link"), "{err}");
        let err = check_private_dir(&fresh, me + 1).unwrap_err().to_string();
        assert!(err.contains("owned by uid"), "{err}");
        let unique = make_unique_dir(base.path(), "memcity-1").unwrap();
        assert_eq!(mode(&unique), 0o700);
        assert!(unique
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("memcity-1."));
        assert_ne!(unique, make_unique_dir(base.path(), "memcity-1").unwrap());
    }

    #[test]
    fn reads_do_not_follow_a_final_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t");
        std::fs::write(&target, "x").unwrap();
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(read_no_follow(&link).is_err());
        assert_eq!(read_no_follow(&target).unwrap(), b"x");
    }
}
