//! Where a running agent says where it listens and which token it wants, for local clients.
//!
//! Each agent writes `<run dir>/<pid>` (mode 0600) in a run directory only its user can enter
//! (`$TMPDIR/memcity-<uid>`, mode 0700): `pid=`, `port=` and `token=` lines, and `page=` (the
//! agent's web page, without its token) and `metrics=` (its Prometheus endpoint) when it serves
//! them. A client on the same
//! machine and user finds the token for a port by itself; a remote client is given it
//! (`--token` or `MEMCITY_TOKEN`). The token makes the port useless to other users of the
//! machine and to anyone on the network who can reach it: heap structure, class and thread
//! names are not theirs to read, and requests that stop the JVM are not theirs to make.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// gRPC metadata key that carries the token.
pub const TOKEN_HEADER: &str = "memcity-token";

/// One agent's registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    pub pid: u32,
    pub port: u16,
    pub token: String,
    /// The agent's web page (`http=PORT`), e.g. `http://127.0.0.1:8081/`; it takes the token.
    pub page: Option<String>,
    /// The agent's Prometheus metrics (`metrics=PORT`), e.g. `http://127.0.0.1:9404/metrics`.
    pub metrics: Option<String>,
}

impl Registration {
    fn to_text(&self) -> String {
        let mut text = format!(
            "pid={}\nport={}\ntoken={}\n",
            self.pid, self.port, self.token
        );
        if let Some(page) = &self.page {
            text.push_str(&format!("page={page}\n"));
        }
        if let Some(metrics) = &self.metrics {
            text.push_str(&format!("metrics={metrics}\n"));
        }
        text
    }

    fn parse(text: &str) -> Option<Self> {
        let mut pid = None;
        let mut port = None;
        let mut token = None;
        let mut page = None;
        let mut metrics = None;
        for line in text.lines() {
            match line.split_once('=') {
                Some(("pid", v)) => pid = v.trim().parse().ok(),
                Some(("port", v)) => port = v.trim().parse().ok(),
                Some(("token", v)) => token = Some(v.trim().to_string()),
                Some(("page", v)) => page = Some(v.trim().to_string()),
                Some(("metrics", v)) => metrics = Some(v.trim().to_string()),
                _ => {}
            }
        }
        Some(Registration {
            pid: pid?,
            port: port?,
            token: token.filter(|t| !t.is_empty())?,
            page: page.filter(|p| !p.is_empty()),
            metrics: metrics.filter(|m| !m.is_empty()),
        })
    }

    /// The page's address with its token, to open in a browser.
    pub fn page_url(&self) -> Option<String> {
        self.page
            .as_ref()
            .map(|page| format!("{page}?token={}", self.token))
    }
}

/// This user's run directory (not created).
pub fn run_dir() -> PathBuf {
    let uid = std::fs::metadata("/proc/self").map_or(0, |m| m.uid());
    std::env::temp_dir().join(format!("memcity-{uid}"))
}

/// Whether `given` is `token`, compared in constant time: the answer must not tell how much of
/// a guess was right.
pub fn same_token(given: &[u8], token: &[u8]) -> bool {
    given.len() == token.len()
        && given
            .iter()
            .zip(token)
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

/// A fresh random token: 128 bits from the kernel, as hex.
pub fn new_token() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Creates the run directory (0700) or checks that an existing one is ours and closed to
/// others: a directory another user made, or one others can write, could feed clients a
/// wrong token or read ours.
fn ensure_run_dir(dir: &Path) -> io::Result<()> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    let me = std::fs::metadata("/proc/self")?.uid();
    if !meta.is_dir() || meta.uid() != me || meta.permissions().mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a private directory of this user (owner {}, mode {:o}); remove it",
                dir.display(),
                meta.uid(),
                meta.permissions().mode() & 0o777
            ),
        ));
    }
    Ok(())
}

/// This user's run directory, created (0700) or checked to be private to this user: for what
/// else an agent keeps there (the JFR repository of its GC counts).
pub fn private_run_dir() -> io::Result<PathBuf> {
    let dir = run_dir();
    ensure_run_dir(&dir)?;
    Ok(dir)
}

/// Writes this agent's registration (atomically, mode 0600); returns its path.
pub fn register(registration: &Registration) -> io::Result<PathBuf> {
    let dir = private_run_dir()?;
    remove_stale(&dir);
    let path = dir.join(registration.pid.to_string());
    let tmp = dir.join(format!(".{}.tmp", registration.pid));
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(registration.to_text().as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

/// Removes the registrations of processes that are gone (a killed JVM cannot remove its own),
/// so the directory does not grow and a later process with a reused pid is not taken for one.
fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Removes this agent's registration (best effort: a killed JVM leaves it, and clients skip
/// registrations of processes that are gone).
pub fn unregister(pid: u32) {
    let _ = std::fs::remove_file(run_dir().join(pid.to_string()));
}

/// The registration in `file`, if it holds one.
pub fn read(file: &Path) -> Option<Registration> {
    Registration::parse(&std::fs::read_to_string(file).ok()?)
}

/// The registrations of live agents of this user.
pub fn registrations() -> Vec<Registration> {
    let Ok(entries) = std::fs::read_dir(run_dir()) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|text| Registration::parse(&text))
        .filter(|r| Path::new(&format!("/proc/{}", r.pid)).exists())
        .collect()
}

/// The token of the local agent listening on `port`, if this user runs one.
pub fn token_for_port(port: u16) -> Option<String> {
    registrations()
        .into_iter()
        .find(|r| r.port == port)
        .map(|r| r.token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registrations_round_trip_and_reject_partial_ones() {
        let mut r = Registration {
            pid: 42,
            port: 7788,
            token: "00ff".into(),
            page: None,
            metrics: None,
        };
        assert_eq!(Registration::parse(&r.to_text()), Some(r.clone()));
        r.page = Some("http://127.0.0.1:8081/".into());
        r.metrics = Some("http://127.0.0.1:9404/metrics".into());
        assert_eq!(Registration::parse(&r.to_text()), Some(r.clone()));
        assert_eq!(
            r.page_url().as_deref(),
            Some("http://127.0.0.1:8081/?token=00ff")
        );
        assert_eq!(Registration::parse("pid=1\nport=2\n"), None);
        assert_eq!(Registration::parse("pid=1\nport=x\ntoken=a\n"), None);
        assert_eq!(Registration::parse(""), None);
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same_token(b"00ff", b"00ff"));
        assert!(!same_token(b"00fe", b"00ff"));
        assert!(!same_token(b"00f", b"00ff"));
        assert!(!same_token(b"", b"00ff"));
    }

    #[test]
    fn tokens_are_random_hex() {
        let a = new_token().unwrap();
        let b = new_token().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn a_run_dir_open_to_others_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = ensure_run_dir(&open).unwrap_err();
        assert!(err.to_string().contains("not a private directory"), "{err}");
        let fresh = dir.path().join("fresh");
        ensure_run_dir(&fresh).unwrap();
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        ensure_run_dir(&fresh).unwrap();
    }

    #[test]
    fn registrations_of_gone_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        // Pids above the kernel's maximum (4,194,304) never run.
        for name in [me.to_string(), "4194305".to_string(), "notes".to_string()] {
            std::fs::write(dir.path().join(&name), "x").unwrap();
        }
        remove_stale(dir.path());
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, [me.to_string(), "notes".to_string()]);
    }
}
