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

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::files;

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

/// This user's run directory (not created): `$TMPDIR/memcity-<uid>`. An agent that finds it
/// made by someone else uses a private folder of its own beside it ([`private_run_dir`]).
pub fn run_dir() -> PathBuf {
    run_dir_in(&std::env::temp_dir(), files::effective_uid())
}

fn run_dir_in(tmp: &Path, uid: u32) -> PathBuf {
    tmp.join(format!("memcity-{uid}"))
}

/// Where agents of user `uid` whose temporary folder is `tmp` register: the run directory, and
/// the folders `memcity-<uid>.<random>` agents made when another user had taken its name
/// first. Only folders of `uid` closed to others count: anything else could hand a client a
/// port and token of someone else's choosing.
pub fn run_dirs(tmp: &Path, uid: u32) -> Vec<PathBuf> {
    let main = run_dir_in(tmp, uid);
    let prefix = format!("memcity-{uid}.");
    let mut dirs = vec![main];
    if let Ok(entries) = std::fs::read_dir(tmp) {
        let mut others: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.path())
            .collect();
        others.sort();
        dirs.extend(others);
    }
    dirs.retain(|dir| files::check_private_dir(dir, uid).is_ok());
    dirs
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
    files::random_hex(16)
}

/// The run directory this process uses: [`run_dir`], made private (0700) or checked to be; or,
/// when another user made a folder of that name first, a private folder of this process's own
/// beside it (`memcity-<uid>.<random>`), which clients find as well ([`run_dirs`]). Chosen
/// once per process; `Err` only when neither can be made.
pub fn private_run_dir() -> io::Result<PathBuf> {
    static CHOSEN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    CHOSEN
        .get_or_init(|| choose_run_dir(&std::env::temp_dir()).map_err(|e| e.to_string()))
        .clone()
        .map_err(io::Error::other)
}

/// Where this process registers, for messages that point there: [`private_run_dir`], or
/// [`run_dir`] when no private one could be made (registering then fails and says why).
pub fn run_dir_in_use() -> PathBuf {
    private_run_dir().unwrap_or_else(|_| run_dir())
}

/// Why this process's run directory is not [`run_dir`], if it is not (for the agent to say).
pub fn run_dir_refused() -> Option<String> {
    let dir = private_run_dir().ok()?;
    (dir != run_dir()).then(|| {
        files::check_private_dir(&run_dir(), files::effective_uid())
            .err()
            .map_or_else(|| "it was taken".into(), |e| e.to_string())
    })
}

fn choose_run_dir(tmp: &Path) -> io::Result<PathBuf> {
    let uid = files::effective_uid();
    let main = run_dir_in(tmp, uid);
    match files::ensure_private_dir(&main) {
        Ok(()) => Ok(main),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            files::make_unique_dir(tmp, &format!("memcity-{uid}"))
        }
        Err(e) => Err(e),
    }
}

/// Writes this agent's registration (atomically, mode 0600); returns its path.
pub fn register(registration: &Registration) -> io::Result<PathBuf> {
    let dir = private_run_dir()?;
    remove_stale(&dir);
    let path = dir.join(registration.pid.to_string());
    files::replace(&path, registration.to_text().as_bytes())?;
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
/// registrations of processes that are gone), and a folder of its own once empty.
pub fn unregister(pid: u32) {
    let Ok(dir) = private_run_dir() else {
        return;
    };
    let _ = std::fs::remove_file(dir.join(pid.to_string()));
    if dir != run_dir() {
        let _ = std::fs::remove_dir(&dir);
    }
}

/// The registration in `file`, if it holds one (a link is not followed).
pub fn read(file: &Path) -> Option<Registration> {
    Registration::parse(&String::from_utf8(files::read_no_follow(file).ok()?).ok()?)
}

/// The registration of the agent in process `pid` among those of user `uid` under `tmp`.
pub fn find(tmp: &Path, uid: u32, pid: u32) -> Option<Registration> {
    run_dirs(tmp, uid)
        .iter()
        .find_map(|dir| read(&dir.join(pid.to_string())))
        .filter(|r| r.pid == pid)
}

/// The registrations of live agents of this user.
pub fn registrations() -> Vec<Registration> {
    run_dirs(&std::env::temp_dir(), files::effective_uid())
        .iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flat_map(|entries| entries.flatten())
        .filter_map(|e| read(&e.path()))
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
    fn a_taken_run_dir_gives_way_to_a_private_one_that_clients_find() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let uid = files::effective_uid();
        // Free: the run directory itself, made private.
        let chosen = choose_run_dir(tmp.path()).unwrap();
        assert_eq!(chosen, run_dir_in(tmp.path(), uid));
        assert_eq!(run_dirs(tmp.path(), uid), std::slice::from_ref(&chosen));
        // Taken (a folder open to others where the run directory should be): a folder of
        // this process's own beside it, and only that one is offered to clients.
        let taken = tempfile::tempdir().unwrap();
        let squat = run_dir_in(taken.path(), uid);
        std::fs::create_dir(&squat).unwrap();
        std::fs::set_permissions(&squat, std::fs::Permissions::from_mode(0o777)).unwrap();
        let chosen = choose_run_dir(taken.path()).unwrap();
        assert_ne!(chosen, squat);
        assert_eq!(run_dirs(taken.path(), uid), std::slice::from_ref(&chosen));
        let registration = Registration {
            pid: 7,
            port: 1,
            token: "ab".into(),
            page: None,
            metrics: None,
        };
        std::fs::write(chosen.join("7"), registration.to_text()).unwrap();
        assert_eq!(find(taken.path(), uid, 7), Some(registration));
        // A planted look-alike open to others is not read.
        let fake = taken.path().join(format!("memcity-{uid}.fake"));
        std::fs::create_dir(&fake).unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(fake.join("8"), "pid=8\nport=9\ntoken=cd\n").unwrap();
        assert_eq!(find(taken.path(), uid, 8), None);
        // A link where the run directory should be is taken too, and not followed.
        let linked = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(tmp.path(), run_dir_in(linked.path(), uid)).unwrap();
        let chosen = choose_run_dir(linked.path()).unwrap();
        assert_ne!(chosen, run_dir_in(linked.path(), uid));
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
