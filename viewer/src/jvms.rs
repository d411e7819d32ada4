//! `memcity list`, `attach`, `detach`, and `--pid` for the commands that talk to an agent: the
//! commands around [`memcity_viewer::attach`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use memcity_viewer::attach::{self, code, Reply, Target};

/// How long `attach` waits for the agent's server to listen after the load.
const REGISTER_WAIT: Duration = Duration::from_secs(15);

/// A local JVM, as `memcity list` shows it.
pub struct Jvm {
    pub pid: u32,
    pub main: String,
    pub version: Option<String>,
    pub uid: u32,
    pub memcity: Memcity,
}

/// Whether memcity runs in a JVM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memcity {
    /// Its memory map is not ours to read (another user's JVM, or one in another user
    /// namespace).
    Unknown,
    Absent,
    /// The library is mapped; the port its agent listens on, if one is registered.
    Loaded(Option<u16>),
}

/// The thread HotSpot runs safepoint operations on (JDK 9 and later name their native
/// threads; `comm` holds the first 15 bytes). Every HotSpot JVM has one, whatever its launcher.
const VM_THREAD: &str = "VM Thread";

/// The files the JDK publishes performance data in (`TMP/hsperfdata_<user>/<pid>`): how JVMs of
/// other users are found, whose memory maps are not readable. Each pid comes with the uid owning
/// its file (the JVM's effective uid). A file outlives a JVM that did not exit cleanly, and a JVM
/// in its own pid namespace writes the pid it has there (often 1) into a `/tmp` it may share
/// with this one, so a file alone proves nothing (see [`is_jvm_of`]).
fn published(tmp: &Path) -> Vec<(u32, u32)> {
    let mut files = Vec::new();
    let Ok(dirs) = std::fs::read_dir(tmp) else {
        return files;
    };
    for dir in dirs.flatten() {
        if !dir.file_name().to_string_lossy().starts_with("hsperfdata_") {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(dir.path()) else {
            continue;
        };
        for file in entries.flatten() {
            let pid = file
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok());
            // `DirEntry::metadata` does not follow a symbolic link: the owner is the entry's.
            if let (Some(pid), Ok(meta)) = (pid, file.metadata()) {
                files.push((pid, std::os::unix::fs::MetadataExt::uid(&meta)));
            }
        }
    }
    files
}

/// Whether process `pid` (under `proc`, `/proc` but in tests) is a HotSpot JVM running as
/// `owner`, read from what any user may read: its status (the effective uid) and its threads'
/// names (a `VM Thread`). For a process whose memory map is not readable, to tell a JVM that
/// published its performance data from whatever else has that pid now.
fn is_jvm_of(proc: &Path, pid: u32, owner: u32) -> bool {
    let dir = proc.join(pid.to_string());
    let same_user = std::fs::read_to_string(dir.join("status"))
        .ok()
        .and_then(|status| attach::parse_status(&status))
        .is_some_and(|(user, ..)| user.uid == owner);
    let Ok(tasks) = std::fs::read_dir(dir.join("task")) else {
        return false;
    };
    same_user
        && tasks.flatten().any(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|comm| comm.trim_end_matches('\n') == VM_THREAD)
        })
}

/// The pids of the local JVMs, each with whether its memory map is readable: every process but
/// `me` that maps `libjvm.so` (a HotSpot JVM, `-XX:-UsePerfData` and JVMs in other mount
/// namespaces included), and those whose map is not readable but which published their
/// performance data in `tmp` and are JVMs of that file's user.
fn jvm_pids(proc: &Path, tmp: &Path, me: u32) -> Vec<(u32, bool)> {
    let Ok(entries) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    let published = published(tmp);
    let mut pids: Vec<(u32, bool)> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter_map(
            |pid| match std::fs::read_to_string(proc.join(format!("{pid}/maps"))) {
                Ok(maps) => maps.contains("/libjvm.so").then_some((pid, true)),
                Err(_) => published
                    .iter()
                    .any(|&(p, owner)| p == pid && is_jvm_of(proc, pid, owner))
                    .then_some((pid, false)),
            },
        )
        .collect();
    pids.sort_unstable();
    pids
}

/// The local JVMs (see [`jvm_pids`]).
pub fn list() -> Vec<Jvm> {
    jvm_pids(Path::new("/proc"), Path::new("/tmp"), std::process::id())
        .into_iter()
        .filter_map(|(pid, readable)| {
            let target = Target::inspect(pid).ok()?;
            let args = memcity_proto::command::args_of(Some(pid));
            let memcity = if !readable {
                Memcity::Unknown
            } else if attach::loaded_libraries(pid).is_empty() {
                Memcity::Absent
            } else {
                Memcity::Loaded(attach::registration(&target).map(|r| r.port))
            };
            Some(Jvm {
                pid,
                main: memcity_proto::command::main_of(&args),
                version: version_of(pid),
                uid: target.user.uid,
                memcity,
            })
        })
        .collect()
}

/// `JAVA_VERSION` from the `release` file of the JVM's installation.
fn version_of(pid: u32) -> Option<String> {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let home = exe.parent()?.parent()?;
    let release = PathBuf::from(format!("/proc/{pid}/root"))
        .join(home.strip_prefix("/").unwrap_or(home))
        .join("release");
    let text = std::fs::read_to_string(release).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("JAVA_VERSION="))
        .map(|v| v.trim_matches('"').to_string())
}

fn major(version: &str) -> Option<u32> {
    let first = version.split(['.', '-', '+']).next()?;
    match first.parse().ok()? {
        1 => version.split('.').nth(1)?.parse().ok(),
        n => Some(n),
    }
}

pub fn print_list() {
    let jvms = list();
    if jvms.is_empty() {
        println!("no JVM found that this user may attach to (root sees every user's)");
        return;
    }
    println!(
        "{:>8}  {:<7}  {:>6}  {:<22}  MAIN",
        "PID", "JDK", "UID", "MEMCITY"
    );
    for jvm in jvms {
        let memcity = match jvm.memcity {
            // SAFETY: a plain getter with no preconditions.
            Memcity::Unknown if jvm.uid == unsafe { libc::geteuid() } => {
                "? (map not readable)".to_string()
            }
            Memcity::Unknown => "? (another user's)".to_string(),
            Memcity::Absent => "-".to_string(),
            Memcity::Loaded(Some(port)) => format!("listening on {port}"),
            Memcity::Loaded(None) => "loaded, not listening".to_string(),
        };
        println!(
            "{:>8}  {:<7}  {:>6}  {:<22}  {}",
            jvm.pid,
            jvm.version.as_deref().unwrap_or("?"),
            jvm.uid,
            memcity,
            jvm.main
        );
    }
    // The agents' own pages (http=PORT), with their tokens: this user's agents only, as only
    // this user can read the tokens.
    let mut pages: Vec<(u32, String)> = memcity_proto::registry::registrations()
        .into_iter()
        .filter_map(|r| Some((r.pid, r.page_url()?)))
        .collect();
    pages.sort();
    for (pid, url) in pages {
        println!("page of {pid}: {url} (open it in a browser)");
    }
    // Their Prometheus endpoints (metrics=PORT), for a scrape config.
    let mut metrics: Vec<(u32, String)> = memcity_proto::registry::registrations()
        .into_iter()
        .filter_map(|r| Some((r.pid, r.metrics?)))
        .collect();
    metrics.sort();
    for (pid, url) in metrics {
        println!("metrics of {pid}: {url} (Prometheus scrapes it)");
    }
}

/// The agent options for an attach: checked here (the JVM would only log the error), with a
/// free port unless one was given, as the agent's own default: an attach never collides with another
/// agent's port.
pub fn attach_options(options: Option<&str>) -> anyhow::Result<String> {
    let given = options.unwrap_or_default().trim();
    if given == "stop" {
        anyhow::bail!("'stop' is what `memcity detach PID` sends; it is not an option");
    }
    memcity_proto::options::parse((!given.is_empty()).then_some(given))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let has_port = given
        .split(',')
        .any(|kv| kv.split('=').next().map(str::trim) == Some("port"));
    Ok(match (given.is_empty(), has_port) {
        (true, _) => "port=0".to_string(),
        (false, true) => given.to_string(),
        (false, false) => format!("port=0,{given}"),
    })
}

/// Loads the agent into `pid`; returns where it listens.
pub fn attach(pid: u32, options: Option<&str>, lib: Option<&Path>) -> anyhow::Result<Registered> {
    let options = attach_options(options)?;
    let target = Target::inspect(pid)?;
    let library = match lib {
        Some(lib) => lib.to_path_buf(),
        None => crate::demo::agent_library()?,
    };
    let library = library
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("--lib {}: {e}", library.display()))?;
    let socket = target.listener()?;
    let path = attach::library_for(&target, &library)?;
    match attach::load(&target, &socket, &path, &options)? {
        Reply::Returned(code::OK) => {}
        Reply::Returned(other) => anyhow::bail!("{}", attach::start_failure(other, pid)),
        Reply::Refused(message) => anyhow::bail!("{}", refused(pid, &message)),
    }
    let port = options
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| k.trim() == "port")
        .map(|(_, v)| v.trim().to_string());
    if port.as_deref() == Some("off") {
        return Ok(Registered {
            port: None,
            token: None,
        });
    }
    match attach::wait_for_registration(&target, REGISTER_WAIT) {
        Some(r) => Ok(Registered {
            port: Some(r.port),
            token: Some(r.token),
        }),
        None => anyhow::bail!(
            "the agent loaded into {pid} but did not start listening within {} s; the JVM's stderr says why",
            REGISTER_WAIT.as_secs()
        ),
    }
}

/// Where an attached agent listens.
pub struct Registered {
    pub port: Option<u16>,
    pub token: Option<String>,
}

/// The JVM's refusal, with what to do about it.
fn refused(pid: u32, message: &str) -> String {
    if message.contains("Dynamic agent loading is not enabled")
        || message.contains("EnableDynamicAgentLoading")
    {
        return format!(
            "process {pid} was started with -XX:-EnableDynamicAgentLoading, which forbids loading agents into it while it runs: start it with -agentpath:/path/to/libmemcity.so instead (the JVM said: {message})"
        );
    }
    if message.contains("was not loaded") {
        return format!(
            "the JVM could not load the library: {message}\n(is it readable by the JVM's user? --lib names another copy)"
        );
    }
    format!("the JVM refused the attach: {message}")
}

pub fn print_attached(pid: u32, registered: &Registered, options: Option<&str>) {
    match registered.port {
        Some(port) => eprintln!(
            "memcity: attached to {pid}; listening on 127.0.0.1:{port} (watch it: memcity view --pid {pid})"
        ),
        None => eprintln!("memcity: attached to {pid} (no port: port=off)"),
    }
    if let Some(record) = options.and_then(|o| {
        o.split(',')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| k.trim() == "record")
            .map(|(_, v)| v.trim().to_string())
    }) {
        eprintln!("memcity: the JVM records to {record}");
    }
    if let Some(major) = version_of(pid).as_deref().and_then(major) {
        let allowed = memcity_proto::command::args_of(Some(pid))
            .iter()
            .any(|a| a.contains("+EnableDynamicAgentLoading"));
        if major >= 21 && !allowed {
            eprintln!(
                "memcity: note: JDK {major} printed a warning about a dynamically loaded agent on the application's stderr (JEP 451); start it with -XX:+EnableDynamicAgentLoading to allow memcity without one"
            );
        }
    }
}

/// Stops the agent in `pid` (whichever copy of the library runs one).
pub fn detach(pid: u32) -> anyhow::Result<()> {
    let target = Target::inspect(pid)?;
    let libraries = attach::loaded_libraries(pid);
    if libraries.is_empty() {
        anyhow::bail!("memcity is not loaded in process {pid}");
    }
    match to_session(&target, &libraries, "stop")? {
        Some((library, code::OK)) => {
            attach::remove_staged(&target, library);
            Ok(())
        }
        Some((_, code::STOP_TIMED_OUT)) => anyhow::bail!(
            "the agent in {pid} is busy (a heap walk); nothing was stopped, try again in a few seconds"
        ),
        Some((_, other)) => anyhow::bail!("the agent answered {other} to stop"),
        None => anyhow::bail!("memcity is loaded in {pid} but not running (already detached)"),
    }
}

/// Sends `command` (`stop`, `listen`) to the copy of the library in `target` that runs a session,
/// trying each loaded copy in turn (`loaded`; a copy with no session answers `NOT_RUNNING`): that
/// copy and its answer, or `None` when no copy runs one.
fn to_session<'a>(
    target: &Target,
    loaded: &'a [String],
    command: &str,
) -> anyhow::Result<Option<(&'a str, i32)>> {
    target.check_credentials()?;
    let socket = target.listener()?;
    for library in loaded {
        match attach::load(target, &socket, library, command)? {
            Reply::Returned(code::NOT_RUNNING) => continue,
            Reply::Returned(answer) => return Ok(Some((library, answer))),
            Reply::Refused(message) => anyhow::bail!("{}", refused(target.pid, &message)),
        }
    }
    Ok(None)
}

/// For `--pid` (`view`, `record`, `serve`, `snapshot`, `classifiers`): the agent's address in
/// `pid`, attaching with the default options if memcity is not running there; sets the token for
/// the client.
pub fn address_of(pid: u32) -> anyhow::Result<String> {
    let target = Target::inspect(pid)?;
    let loaded = attach::loaded_libraries(pid);
    let registered = match attach::registration(&target) {
        Some(r) if !loaded.is_empty() => Registered {
            port: Some(r.port),
            token: Some(r.token),
        },
        _ => match ask_to_listen(&target, &loaded)? {
            Some(registered) => registered,
            None => {
                let registered = attach(pid, None, None)?;
                print_attached(pid, &registered, None);
                registered
            }
        },
    };
    let Some(port) = registered.port else {
        anyhow::bail!("memcity runs in {pid} without a port (port=off)");
    };
    if let Some(token) = registered.token {
        memcity_viewer::client::set_token(token);
    }
    Ok(format!("127.0.0.1:{port}"))
}

/// An agent loaded in `target` that runs but does not listen (`port=off`, or a fixed port that
/// another process held) is asked to listen on a free port; its registration once it does.
/// `None` when no copy of the library runs a session (never loaded, detached, or loaded by
/// `JAVA_TOOL_OPTIONS` into a JVM `only=` or the JDK-tool rule left alone): an attach starts one.
fn ask_to_listen(target: &Target, loaded: &[String]) -> anyhow::Result<Option<Registered>> {
    if loaded.is_empty() {
        return Ok(None);
    }
    match to_session(target, loaded, "listen")? {
        None => Ok(None),
        Some((_, code::OK)) => {
            let Some(r) = attach::wait_for_registration(target, REGISTER_WAIT) else {
                anyhow::bail!(
                    "memcity runs in {} and was asked to listen, but no port was registered within {} s; the JVM's stderr says why",
                    target.pid,
                    REGISTER_WAIT.as_secs()
                );
            };
            eprintln!(
                "memcity: the agent in {} was not listening; it listens now on 127.0.0.1:{}",
                target.pid, r.port
            );
            Ok(Some(Registered {
                port: Some(r.port),
                token: Some(r.token),
            }))
        }
        Some((_, other)) => anyhow::bail!("{}", attach::start_failure(other, target.pid)),
    }
}

/// The agent a command talks to when given neither an address nor a pid: the one agent of this
/// user on this machine. With several, which is for the user to say.
pub fn default_address() -> anyhow::Result<String> {
    let mut agents = memcity_proto::registry::registrations();
    agents.sort_by_key(|r| r.pid);
    match agents.as_slice() {
        [one] => {
            memcity_viewer::client::set_token(one.token.clone());
            Ok(format!("127.0.0.1:{}", one.port))
        }
        [] => anyhow::bail!(
            "no memcity agent of this user runs on this machine: start the JVM with -agentpath:/path/to/libmemcity.so, or load it into a running one with `memcity attach PID` (`memcity list` shows the JVMs); an agent elsewhere is HOST:PORT"
        ),
        several => {
            let jvms = list();
            let lines: Vec<String> = several
                .iter()
                .map(|r| {
                    let main = jvms
                        .iter()
                        .find(|j| j.pid == r.pid)
                        .map_or("?", |j| j.main.as_str());
                    format!("  --pid {:<8} {main} (port {})", r.pid, r.port)
                })
                .collect();
            anyhow::bail!(
                "{} memcity agents run on this machine; say which with --pid PID (or its HOST:PORT):\n{}",
                several.len(),
                lines.join("\n")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_options_get_a_free_port_and_are_checked() {
        assert_eq!(attach_options(None).unwrap(), "port=0");
        assert_eq!(
            attach_options(Some("log=debug")).unwrap(),
            "port=0,log=debug"
        );
        assert_eq!(attach_options(Some("port=9000")).unwrap(), "port=9000");
        assert!(attach_options(Some("budget=lots")).is_err());
        assert!(attach_options(Some("stop")).is_err());
    }

    /// A fake `/proc/PID`: its status (effective uid `uid`), its threads' names, and its
    /// memory map if `maps` is given (absent, reading it fails as another user's would).
    fn fake_process(proc: &Path, pid: u32, uid: u32, threads: &[&str], maps: Option<&str>) {
        let dir = proc.join(pid.to_string());
        for (i, name) in threads.iter().enumerate() {
            let task = dir.join(format!("task/{}", pid + i as u32));
            std::fs::create_dir_all(&task).unwrap();
            std::fs::write(task.join("comm"), format!("{name}\n")).unwrap();
        }
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("status"),
            format!(
                "Name:\t{}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nGid:\t0\t0\t0\t0\nNSpid:\t{pid}\nSigCgt:\t0000000000000000\n",
                threads[0]
            ),
        )
        .unwrap();
        if let Some(maps) = maps {
            std::fs::write(dir.join("maps"), maps).unwrap();
        }
    }

    #[test]
    fn a_published_pid_is_listed_only_if_it_is_a_jvm_of_that_user() {
        let proc = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let published = tmp.path().join("hsperfdata_someone");
        std::fs::create_dir(&published).unwrap();
        for pid in [1, 11, 12, 13, 15] {
            std::fs::write(published.join(pid.to_string()), b"").unwrap();
        }
        // The owner as the file system made it, so only the uids written below differ.
        let owner =
            std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(published.join("1")).unwrap());
        let jvm = ["java", "VM Thread", "GC Thread#0", "Reference Handl"];
        let libjvm = "7f0-7f1 r-xp 0 08:01 1 /opt/jdk/lib/server/libjvm.so\n";
        // A stale file (a JVM that was pid 1 in its own pid namespace, or one that was killed)
        // and the process that has that pid here now, of the same user: not a JVM.
        fake_process(proc.path(), 1, owner, &["init"], None);
        // Another user's JVM, or one in another user namespace: its map is not readable.
        fake_process(proc.path(), 11, owner, &jvm, None);
        // A JVM, but not the file's user's: the file is another JVM's, long gone.
        fake_process(proc.path(), 12, owner + 1, &jvm, None);
        // 13 published, no such process.
        // A JVM whose map is readable, published or not (-XX:-UsePerfData, another /tmp).
        fake_process(proc.path(), 14, owner, &jvm, Some(libjvm));
        // A readable map without libjvm.so is not a HotSpot JVM, whatever it published.
        fake_process(
            proc.path(),
            15,
            owner,
            &jvm,
            Some("7f0-7f1 r-xp 0 08:01 1 /bin/sh\n"),
        );
        // This process itself is never listed.
        fake_process(proc.path(), 16, owner, &jvm, Some(libjvm));
        assert_eq!(
            jvm_pids(proc.path(), tmp.path(), 16),
            vec![(11, false), (14, true)]
        );
    }

    #[test]
    fn a_stale_file_of_a_real_process_that_is_not_a_jvm_is_not_listed() {
        // A process of this user with a readable map and no JVM: `sleep`, published as if a
        // JVM had had its pid.
        let mut sleep = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("run sleep");
        let tmp = tempfile::tempdir().unwrap();
        let published = tmp.path().join("hsperfdata_someone");
        std::fs::create_dir(&published).unwrap();
        std::fs::write(published.join(sleep.id().to_string()), b"").unwrap();
        let me = std::process::id();
        let uid = std::os::unix::fs::MetadataExt::uid(
            &std::fs::metadata(published.join(sleep.id().to_string())).unwrap(),
        );
        let is_jvm = is_jvm_of(Path::new("/proc"), sleep.id(), uid);
        let listed = jvm_pids(Path::new("/proc"), tmp.path(), me)
            .iter()
            .any(|&(pid, _)| pid == sleep.id());
        let _ = sleep.kill();
        let _ = sleep.wait();
        assert!(!is_jvm, "sleep taken for a JVM");
        assert!(!listed, "a stale hsperfdata file listed sleep as a JVM");
    }

    #[test]
    fn java_versions() {
        assert_eq!(major("17.0.15"), Some(17));
        assert_eq!(major("1.8.0_392"), Some(8));
        assert_eq!(major("25"), Some(25));
        assert_eq!(major("21-ea"), Some(21));
    }
}
