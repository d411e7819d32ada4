//! Loading the agent into a running JVM, and stopping it: HotSpot's attach mechanism on Linux,
//! as `jcmd` and `asprof` use it.
//!
//! The JVM starts its attach listener on demand: a client creates `.attach_pid<pid>` in the
//! JVM's working directory (or its `/tmp`) and sends SIGQUIT; the JVM sees the file, opens the
//! UNIX socket `/tmp/.java_pid<pid>` and no longer treats SIGQUIT as a thread-dump request for
//! that signal. A JVM without the listener (and any other process) would print a thread dump
//! or die from SIGQUIT, so the signal is sent only to a process that catches it, and only when
//! the socket is not there yet. The pid in both names is the JVM's own (in a container, its
//! namespace's), and both paths are the JVM's (`/proc/<pid>/root`, `/proc/<pid>/cwd`).
//!
//! A request is `1\0load\0<library>\0true\0<options>\0`; the reply a status line and text:
//! `0\nreturn code: N\n` when `Agent_OnAttach` ran (JDK 9 and later), `0\nN\n` on JDK 8, and
//! when the library did not load `-1\n<library> was not loaded.\n<dlerror>\n`, with status 0
//! instead of -1 from JDK 21 on. [`parse_reply`] reads all of them.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use memcity_proto::files;
use memcity_proto::registry::{self, Registration};

use crate::as_user::{self, User};

pub use memcity_proto::options::attach_code as code;

/// Longest the JVM may take to open its attach socket after SIGQUIT. A busy JVM at a long
/// safepoint, or one of many starting on a loaded host, answers late; HotSpot's own tools wait
/// 10 s but send a second SIGQUIT half-way, which memcity does not (a JVM that took the first
/// as a thread dump request would print another into the application's output), so it waits
/// longer instead: waiting costs nothing when the socket comes.
const LISTENER_WAIT: Duration = Duration::from_secs(30);
/// Longest a load may take: `Agent_OnAttach` returns at once, but a `stop` waits for the
/// agent's walk in progress (at most its max_pause) and its last snapshot.
const REPLY_WAIT: Duration = Duration::from_secs(90);
/// HotSpot reads each request argument into a 1,024-byte buffer and drops a longer request
/// without a word.
pub const MAX_ARGUMENT: usize = 1024;

/// A process as the attach mechanism needs to know it.
#[derive(Debug, Clone)]
pub struct Target {
    pub pid: u32,
    /// Its pid in its own pid namespace (the name of its attach files).
    pub nspid: u32,
    /// Its effective user: whatever memcity creates or reads in folders that user controls,
    /// it does as them (`as_user`).
    pub user: User,
    /// Whether it catches SIGQUIT (a JVM does unless started with `-Xrs`).
    pub catches_sigquit: bool,
    /// Its root directory as seen from here (`/proc/<pid>/root`).
    pub root: PathBuf,
}

/// `/proc/<pid>/status` fields: the effective user (`as_user::parse_user`), the innermost
/// namespace pid, and whether SIGQUIT (3) is among the caught signals.
pub fn parse_status(status: &str) -> Option<(User, u32, bool)> {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(str::trim)
    };
    let user = as_user::parse_user(status)?;
    let nspid = field("NSpid:")?.split_whitespace().last()?.parse().ok()?;
    let caught = u64::from_str_radix(field("SigCgt:")?, 16).ok()?;
    Some((user, nspid, caught & (1 << (libc::SIGQUIT - 1)) != 0))
}

impl Target {
    pub fn inspect(pid: u32) -> anyhow::Result<Target> {
        let status = fs::read_to_string(format!("/proc/{pid}/status"))
            .map_err(|_| anyhow::anyhow!("no process {pid} (memcity list shows the JVMs)"))?;
        let (user, nspid, catches_sigquit) = parse_status(&status)
            .ok_or_else(|| anyhow::anyhow!("cannot read /proc/{pid}/status"))?;
        Ok(Target {
            pid,
            nspid,
            user,
            catches_sigquit,
            root: PathBuf::from(format!("/proc/{pid}/root")),
        })
    }

    /// Whether the process still runs (a zombie, exited but not yet reaped, does not).
    fn alive(&self) -> bool {
        fs::read_to_string(format!("/proc/{}/stat", self.pid)).is_ok_and(|stat| {
            // "pid (comm) S ...": the state follows the last ')' (comm may hold one).
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X")
        })
    }

    /// The attach socket, as seen from here.
    fn socket(&self) -> PathBuf {
        self.root.join(format!("tmp/.java_pid{}", self.nspid))
    }

    /// Whether the JVM's attach socket is there. A socket older than the process, or of
    /// another user (HotSpot makes its own its user's), is another process's, left behind
    /// under a pid since reused (see `clear_the_way`).
    fn listening(&self) -> bool {
        let Ok(meta) = fs::symlink_metadata(self.socket()) else {
            return false;
        };
        let started = process_start(self.pid).unwrap_or(0);
        meta.file_type().is_socket() && meta.uid() == self.user.uid && meta.mtime() + 1 >= started
    }

    /// Whether this process may attach: HotSpot serves only its own effective uid and gid, or
    /// root.
    pub fn check_credentials(&self) -> anyhow::Result<()> {
        // SAFETY: plain getters with no preconditions.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        if uid == 0 || (uid == self.user.uid && gid == self.user.gid) {
            return Ok(());
        }
        anyhow::bail!(
            "process {} runs as uid {} (gid {}) and the JVM only lets its own user (or root) attach: run memcity as that user (sudo -u '#{}' memcity ...) or as root",
            self.pid,
            self.user.uid,
            self.user.gid,
            self.user.uid
        )
    }

    /// Makes sure the JVM's attach listener runs (see the module comment); returns its socket.
    pub fn listener(&self) -> anyhow::Result<PathBuf> {
        self.check_credentials()?;
        let socket = self.socket();
        if self.listening() {
            return Ok(socket);
        }
        if attach_disabled(self.pid) {
            anyhow::bail!(
                "process {} was started with -XX:+DisableAttachMechanism: it cannot be attached to (a signal would only print a thread dump into its output); start it with -agentpath:/path/to/libmemcity.so instead",
                self.pid
            );
        }
        if !self.catches_sigquit {
            anyhow::bail!(
                "process {} has no attach socket and does not handle SIGQUIT, so it is not a JVM that can be attached to; no signal was sent (a JVM started with -Xrs opens its socket at start-up instead; if {} was deleted, it cannot be attached until it restarts)",
                self.pid,
                socket.display()
            );
        }
        self.clear_the_way()?;
        let trigger = Trigger::create(self)?;
        // SAFETY: kill(2) with a pid we checked catches SIGQUIT.
        if unsafe { libc::kill(self.pid as i32, libc::SIGQUIT) } != 0 {
            anyhow::bail!(
                "cannot signal process {}: {}",
                self.pid,
                io::Error::last_os_error()
            );
        }
        let deadline = Instant::now() + LISTENER_WAIT;
        let mut pause = Duration::from_millis(10);
        loop {
            if self.listening() {
                drop(trigger);
                return Ok(socket);
            }
            if !self.alive() {
                anyhow::bail!("process {} exited during the attach", self.pid);
            }
            if Instant::now() >= deadline {
                anyhow::bail!(
                    "the JVM {} did not open its attach socket within {} s: it may have been started with -XX:+DisableAttachMechanism, or be stuck (a long GC); no second signal is sent",
                    self.pid,
                    LISTENER_WAIT.as_secs()
                );
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }
}

impl Target {
    /// Removes what another user left at the names of the JVM's attach socket (`.java_pid<pid>`
    /// and the `.tmp` name it is made under): a socket of an earlier process with this pid,
    /// killed before it could remove it, or a file put there to block attaching. HotSpot makes
    /// its socket under the `.tmp` name and renames it into place, and in the sticky `/tmp`
    /// neither works over a file of someone else's: the JVM would never open its socket, and
    /// the attach would wait in vain. Root removes such files (an unlink, which follows no
    /// link); anyone else is told what to remove.
    fn clear_the_way(&self) -> anyhow::Result<()> {
        if self.user.uid == 0 {
            return Ok(()); // root's JVM replaces anything
        }
        let socket = self.socket();
        let mut temporary = socket.clone().into_os_string();
        temporary.push(".tmp");
        for path in [socket, PathBuf::from(temporary)] {
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.uid() == self.user.uid {
                continue; // the JVM's own: it replaces it
            }
            let shown = Path::new("/tmp").join(path.file_name().unwrap_or_default());
            if memcity_proto::files::effective_uid() != 0 {
                anyhow::bail!(
                    "{} belongs to uid {}, not to the JVM's user (uid {}): the JVM cannot open its attach socket while it is there (a socket left by an earlier process with this pid, or put there to block attaching); remove it as root (sudo rm {}) and attach again",
                    shown.display(),
                    meta.uid(),
                    self.user.uid,
                    shown.display()
                );
            }
            if let Err(e) = fs::remove_file(&path) {
                if e.kind() != io::ErrorKind::NotFound {
                    anyhow::bail!(
                        "cannot remove {} (uid {}), which keeps the JVM from opening its attach socket: {e}",
                        shown.display(),
                        meta.uid()
                    );
                }
            }
        }
        Ok(())
    }
}

/// When process `pid` started, in seconds since the Unix epoch (boot time plus its start in
/// clock ticks since boot).
fn process_start(pid: u32) -> Option<i64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22 overall; counted after the ')' that ends the command name, it is the 20th.
    let ticks: i64 = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()?;
    let boot: i64 = fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    Some(boot + ticks / hz)
}

/// Whether the JVM's command line or its option environment variables turn attaching off.
/// Such a JVM answers SIGQUIT with a thread dump on its stdout, so it must not be signalled.
fn attach_disabled(pid: u32) -> bool {
    let flag = "-XX:+DisableAttachMechanism";
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let environ = fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let in_args = cmdline.split(|&b| b == 0).any(|a| a == flag.as_bytes());
    let in_env = environ.split(|&b| b == 0).any(|var| {
        ["JAVA_TOOL_OPTIONS=", "JDK_JAVA_OPTIONS=", "_JAVA_OPTIONS="]
            .iter()
            .any(|name| var.starts_with(name.as_bytes()))
            && String::from_utf8_lossy(var).contains(flag)
    });
    in_args || in_env
}

/// The `.attach_pid<pid>` file, removed whatever happens: through `/proc/<pid>/...`, and, in case
/// the process is gone by then (its `/proc` links with it), by the path its working directory
/// had, when the process shares this mount namespace. Created and removed as the JVM's user
/// (its working directory may be any folder of theirs), only where nothing stood: a link
/// planted at its name is never followed.
struct Trigger {
    paths: Vec<PathBuf>,
    user: User,
}

impl Trigger {
    fn create(target: &Target) -> anyhow::Result<Trigger> {
        let name = format!(".attach_pid{}", target.nspid);
        let cwd = PathBuf::from(format!("/proc/{}/cwd", target.pid)).join(&name);
        let tmp = target.root.join("tmp").join(&name);
        let same_mounts = fs::read_link("/proc/self/ns/mnt").ok()
            == fs::read_link(format!("/proc/{}/ns/mnt", target.pid)).ok();
        let direct = |proc_dir: String| {
            fs::read_link(proc_dir)
                .ok()
                .filter(|_| same_mounts)
                .map(|dir| dir.join(&name))
        };
        let cwd_direct = direct(format!("/proc/{}/cwd", target.pid));
        let tmp_direct = same_mounts.then(|| PathBuf::from("/tmp").join(&name));
        let user = &target.user;
        let created = as_user::run(user, || {
            let mut failures = Vec::new();
            for (path, direct) in [(cwd, cwd_direct), (tmp, tmp_direct)] {
                match create_trigger(&path, target.user.uid) {
                    Ok(()) => return Ok([Some(path), direct].into_iter().flatten().collect()),
                    Err(e) => failures.push(format!("{}: {e}", path.display())),
                }
            }
            Err(failures)
        })?;
        match created {
            Ok(paths) => Ok(Trigger {
                paths,
                user: user.clone(),
            }),
            Err(_) if !target.alive() => {
                anyhow::bail!("process {} exited during the attach", target.pid)
            }
            Err(failures) => anyhow::bail!(
                "cannot create the attach trigger file in the JVM's working directory or /tmp ({})",
                failures.join("; ")
            ),
        }
    }
}

/// Creates the trigger file at `path`; a regular file of the JVM's user already there (left by
/// an attach that was killed) triggers the JVM as well and is taken, anything else is not.
fn create_trigger(path: &Path, uid: u32) -> io::Result<()> {
    match files::create_new(path, files::PRIVATE_FILE) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let meta = fs::symlink_metadata(path)?;
            if meta.file_type().is_file() && meta.uid() == uid {
                Ok(())
            } else {
                Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "something memcity did not make is in the way (a link, or a file of another user)",
                ))
            }
        }
        Err(e) => Err(e),
    }
}

impl Drop for Trigger {
    fn drop(&mut self) {
        let paths = &self.paths;
        let _ = as_user::run(&self.user, || {
            for path in paths {
                if fs::remove_file(path).is_ok() {
                    return;
                }
            }
        });
    }
}

/// The bytes of a `load` request; an argument past [`MAX_ARGUMENT`] is refused here, since the
/// JVM would drop the request without a reply.
pub fn load_request(library: &str, options: &str) -> anyhow::Result<Vec<u8>> {
    let mut request = Vec::new();
    for (what, part) in [
        ("", "1"),
        ("", "load"),
        ("the library path", library),
        ("", "true"),
        ("the options", options),
    ] {
        if part.len() >= MAX_ARGUMENT {
            anyhow::bail!(
                "{what} is {} bytes; the JVM takes at most {} per argument",
                part.len(),
                MAX_ARGUMENT - 1
            );
        }
        if part.contains('\0') {
            anyhow::bail!("{what} contains a NUL byte");
        }
        request.extend_from_slice(part.as_bytes());
        request.push(0);
    }
    Ok(request)
}

/// How a `load` ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `Agent_OnAttach` ran and returned this.
    Returned(i32),
    /// The JVM refused: its message.
    Refused(String),
}

pub fn parse_reply(bytes: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.lines();
    let status = lines.next().map(str::trim).unwrap_or_default();
    let rest: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).collect();
    let message = || {
        if rest.is_empty() {
            format!("the JVM answered '{}' and nothing else", text.trim())
        } else {
            rest.join("\n")
        }
    };
    match status.parse::<i32>() {
        Ok(0) => {
            let first = rest.first().map(|l| l.trim()).unwrap_or_default();
            if let Some(n) = first.strip_prefix("return code:") {
                if let Ok(n) = n.trim().parse() {
                    return Reply::Returned(n);
                }
            }
            match first.parse() {
                Ok(n) if rest.len() == 1 => Reply::Returned(n), // JDK 8
                _ => Reply::Refused(message()),
            }
        }
        Ok(_) => Reply::Refused(message()),
        Err(_) if bytes.is_empty() => Reply::Refused(
            "the JVM closed the connection without a reply (a request argument too long, or the JVM is exiting)".into(),
        ),
        Err(_) => Reply::Refused(format!("unexpected reply: {}", text.trim())),
    }
}

/// Sends `load` over `target`'s attach socket and reads the reply. The socket is opened as the
/// JVM's user: a name in the JVM user's `/tmp` that they turned into a link to a socket of
/// root's (a container runtime's, say) leads nowhere they could not go themselves.
pub fn load(target: &Target, socket: &Path, library: &str, options: &str) -> anyhow::Result<Reply> {
    let request = load_request(library, options)?;
    let mut stream = as_user::run(&target.user, || UnixStream::connect(socket))?
        .map_err(|e| anyhow::anyhow!("cannot connect to {}: {e}", socket.display()))?;
    stream.set_read_timeout(Some(REPLY_WAIT))?;
    stream.write_all(&request)?;
    let mut reply = Vec::new();
    stream
        .read_to_end(&mut reply)
        .map_err(|e| anyhow::anyhow!("no reply from the JVM: {e}"))?;
    Ok(parse_reply(&reply))
}

/// The memcity libraries mapped into the process, as paths in the process's own mount
/// namespace (what a `stop` must name for the JVM to find the loaded library).
pub fn loaded_libraries(pid: u32) -> Vec<String> {
    let maps = fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let mut libraries: Vec<String> = Vec::new();
    for path in maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
    {
        let ours = Path::new(path)
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("libmemcity"));
        if ours && !libraries.iter().any(|l| l == path) {
            libraries.push(path.to_string());
        }
    }
    libraries
}

/// The library path to load into `target`: `library` itself when the JVM sees the same file
/// and its user may read it; otherwise (a container with its own `/tmp`, or a JVM user who
/// cannot read this path) a copy staged in the JVM's `/tmp`, made as the JVM's user.
pub fn library_for(target: &Target, library: &Path) -> anyhow::Result<String> {
    let same_mounts = fs::read_link("/proc/self/ns/mnt").ok()
        == fs::read_link(format!("/proc/{}/ns/mnt", target.pid)).ok();
    let user = &target.user;
    if same_mounts && as_user::run(user, || fs::File::open(library).is_ok())? {
        return Ok(library.display().to_string());
    }
    let bytes =
        fs::read(library).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", library.display()))?;
    let dir_inside = staging_dir(target.user.uid);
    let dir = target.root.join(dir_inside.trim_start_matches('/'));
    // One name per library content, so a staged copy in use is never overwritten.
    let name = format!("libmemcity-{:08x}.so", crc32fast::hash(&bytes));
    as_user::run(user, || stage(&dir, &name, &bytes))?
        .map_err(|e| anyhow::anyhow!("cannot stage the library in {}: {e}", dir.display()))?;
    Ok(format!("{dir_inside}/{name}"))
}

/// `/tmp/.memcity-<uid>`, in the JVM's mount namespace: where a library its user cannot read
/// is staged.
fn staging_dir(uid: u32) -> String {
    format!("/tmp/.memcity-{uid}")
}

/// Puts `bytes` at `dir/name` (done as the JVM's user): in a private folder of theirs, made
/// here or found as memcity makes it; a copy already there is taken only if it is the same
/// library, otherwise a fresh one is written beside it and renamed into place.
fn stage(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    files::ensure_private_dir(dir)?;
    let path = dir.join(name);
    if files::read_no_follow(&path).is_ok_and(|staged| staged == bytes) {
        return Ok(());
    }
    files::replace(&path, bytes)
}

/// After a detach: removes the copy [`library_for`] staged in the JVM's `/tmp` (the JVM keeps
/// its mapping; a later attach stages it again, and the JVM finds the loaded copy by its name),
/// and the staging directory once empty; as the JVM's user. A library memcity did not stage is
/// left alone.
pub fn remove_staged(target: &Target, library: &str) {
    let staged = format!("{}/", staging_dir(target.user.uid));
    if !library.starts_with(&staged) {
        return;
    }
    let path = target.root.join(library.trim_start_matches('/'));
    let _ = as_user::run(&target.user, || {
        let _ = fs::remove_file(&path);
        if let Some(dir) = path.parent() {
            let _ = fs::remove_dir(dir);
        }
    });
}

/// The registration of the memcity agent in process `pid`, wherever its user's run directory
/// is (its `TMPDIR` in its mount namespace, or a folder of its own beside it), read as the
/// JVM's user: a root client must not be led to read, and send as a token, a file of root's.
pub fn registration(target: &Target) -> Option<Registration> {
    let environ = fs::read(format!("/proc/{}/environ", target.pid)).unwrap_or_default();
    let tmpdir = environ
        .split(|&b| b == 0)
        .find_map(|var| var.strip_prefix(b"TMPDIR="))
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .unwrap_or_else(|| "/tmp".into());
    let tmp = target.root.join(tmpdir.trim_start_matches('/'));
    as_user::run(&target.user, || {
        registry::find(&tmp, target.user.uid, target.nspid)
    })
    .ok()
    .flatten()
}

/// Waits for the agent in `target` to register its port (it does once its server listens).
pub fn wait_for_registration(target: &Target, timeout: Duration) -> Option<Registration> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(r) = registration(target) {
            return Some(r);
        }
        if Instant::now() >= deadline || !target.alive() {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A message for what `Agent_OnAttach` returned on a start.
pub fn start_failure(code: i32, pid: u32) -> String {
    match code {
        code::BAD_OPTIONS => "the agent refused the options (the JVM's stderr says why)".into(),
        code::ALREADY_RUNNING => format!(
            "memcity is already running in process {pid}: `memcity view --pid {pid}` (or record, serve) watches it, and asks it to listen if it does not; `memcity detach {pid}` stops it, then attach again to change options"
        ),
        code::NO_JVMTI => "the JVM could not give memcity what it needs (JVMTI); its stderr says why".into(),
        other => format!("the agent's Agent_OnAttach returned {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_of_every_jdk() {
        // Captured from HotSpot 11, 17, 21 and 25 (the same bytes for success and a return code).
        assert_eq!(parse_reply(b"0\nreturn code: 0\n"), Reply::Returned(0));
        assert_eq!(parse_reply(b"0\nreturn code: 102\n"), Reply::Returned(102));
        assert_eq!(parse_reply(b"0\nreturn code: -1\n"), Reply::Returned(-1));
        // JDK 8: the bare number.
        assert_eq!(parse_reply(b"0\n102\n"), Reply::Returned(102));
        // The library did not load: status -1 up to JDK 20 ...
        let jdk11 = b"-1\n/x/lib.so was not loaded.\n/x/lib.so: cannot open shared object file: No such file or directory\n";
        match parse_reply(jdk11) {
            Reply::Refused(m) => assert!(m.starts_with("/x/lib.so was not loaded.\n"), "{m}"),
            other => panic!("{other:?}"),
        }
        // ... and 0 followed by the message from JDK 21 on.
        let jdk21 = b"0\n/x/lib.so was not loaded.\n/x/lib.so: cannot open shared object file: No such file or directory\n";
        match parse_reply(jdk21) {
            Reply::Refused(m) => assert!(m.contains("cannot open shared object"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(parse_reply(b""), Reply::Refused(m) if m.contains("without a reply")));
        assert!(matches!(parse_reply(b"garbage"), Reply::Refused(m) if m.contains("unexpected")));
        assert!(matches!(parse_reply(b"0\n"), Reply::Refused(_)));
    }

    #[test]
    fn requests_are_nul_separated_and_bounded() {
        assert_eq!(
            load_request("/l.so", "port=0").unwrap(),
            b"1\0load\0/l.so\0true\0port=0\0"
        );
        let long = "x".repeat(MAX_ARGUMENT);
        let err = load_request("/l.so", &long).unwrap_err().to_string();
        assert!(err.contains("the options is 1024 bytes"), "{err}");
        assert!(load_request("/l\0.so", "").is_err());
    }

    #[test]
    fn status_fields() {
        let status = "Name:\tjava\nUid:\t1000\t1001\t1001\t1001\nGid:\t50\t51\t51\t51\nNSpid:\t4242\t7\nSigCgt:\t0000000181005ccf\n";
        let ids = |s: &str| parse_status(s).map(|(u, nspid, q)| (u.uid, u.gid, nspid, q));
        assert_eq!(ids(status), Some((1001, 51, 7, true)));
        // -Xrs: SIGQUIT (bit 2) not caught.
        let xrs = status.replace("181005ccf", "181005cc8");
        assert_eq!(ids(&xrs).map(|s| s.3), Some(false));
        assert_eq!(parse_status("Name: x\n"), None);
    }
}
