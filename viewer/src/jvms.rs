//! `memcity list`, `attach`, `detach`, and `--pid` for `view` and `record`: the commands around
//! [`memcity_viewer::attach`].

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
    /// Its memory map is not ours to read (another user's JVM).
    Unknown,
    Absent,
    /// The library is mapped; the port its agent listens on, if one is registered.
    Loaded(Option<u16>),
}

/// The pids the JDK publishes performance data for (`/tmp/hsperfdata_<user>/<pid>`): how
/// JVMs of other users are found, whose memory maps are not readable.
fn published_pids() -> Vec<u32> {
    let mut pids = Vec::new();
    let Ok(dirs) = std::fs::read_dir("/tmp") else {
        return pids;
    };
    for dir in dirs.flatten() {
        if !dir.file_name().to_string_lossy().starts_with("hsperfdata_") {
            continue;
        }
        if let Ok(files) = std::fs::read_dir(dir.path()) {
            pids.extend(
                files
                    .flatten()
                    .filter_map(|f| f.file_name().to_str()?.parse::<u32>().ok()),
            );
        }
    }
    pids
}

/// The local JVMs: every process that maps `libjvm.so` (a HotSpot JVM, `-XX:-UsePerfData`
/// included), and those whose map is not readable but which the JDK publishes.
pub fn list() -> Vec<Jvm> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let published = published_pids();
    let mut jvms: Vec<Jvm> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != std::process::id())
        .filter_map(|pid| {
            let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"));
            let readable = match &maps {
                Ok(maps) if maps.contains("/libjvm.so") => true,
                Err(_) if published.contains(&pid) => false,
                _ => return None,
            };
            let target = Target::inspect(pid).ok()?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<String> = cmdline
                .split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            let memcity = if !readable {
                Memcity::Unknown
            } else if attach::loaded_libraries(pid).is_empty() {
                Memcity::Absent
            } else {
                Memcity::Loaded(attach::registration(&target).map(|r| r.port))
            };
            Some(Jvm {
                pid,
                main: main_of(&args),
                version: version_of(pid),
                uid: target.uid,
                memcity,
            })
        })
        .collect();
    jvms.sort_by_key(|j| j.pid);
    jvms
}

/// The main class, `-jar` file or module of a `java` command line.
pub fn main_of(args: &[String]) -> String {
    const WITH_VALUE: &[&str] = &[
        "-cp",
        "-classpath",
        "--class-path",
        "-p",
        "--module-path",
        "--upgrade-module-path",
        "--add-modules",
        "--add-opens",
        "--add-exports",
        "--add-reads",
        "--patch-module",
        "--limit-modules",
        "--enable-native-access",
    ];
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "-jar" => return rest.next().cloned().unwrap_or_default(),
            "-m" | "--module" => {
                let module = rest.next().cloned().unwrap_or_default();
                return module.rsplit('/').next().unwrap_or_default().to_string();
            }
            a if WITH_VALUE.contains(&a) => {
                rest.next();
            }
            a if a.starts_with("--module=") => {
                return a.rsplit('/').next().unwrap_or_default().to_string();
            }
            a if a.starts_with('-') => {}
            a => return a.to_string(),
        }
    }
    "(unknown main)".into()
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
}

/// The agent options for an attach: checked here (the JVM would only log the error), with a
/// free port unless one was given, so that attaching never collides with another agent's 7788.
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
    match attach::load(&socket, &path, &options)? {
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
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let allowed = String::from_utf8_lossy(&cmdline).contains("+EnableDynamicAgentLoading");
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
    target.check_credentials()?;
    let libraries = attach::loaded_libraries(pid);
    if libraries.is_empty() {
        anyhow::bail!("memcity is not loaded in process {pid}");
    }
    let socket = target.listener()?;
    for library in libraries {
        match attach::load(&socket, &library, "stop")? {
            Reply::Returned(code::OK) => {
                attach::remove_staged(&target, &library);
                return Ok(());
            }
            Reply::Returned(code::NOT_RUNNING) => continue,
            Reply::Returned(code::STOP_TIMED_OUT) => anyhow::bail!(
                "the agent in {pid} is busy (a heap walk); nothing was stopped, try again in a few seconds"
            ),
            Reply::Returned(other) => anyhow::bail!("the agent answered {other} to stop"),
            Reply::Refused(message) => anyhow::bail!("{}", refused(pid, &message)),
        }
    }
    anyhow::bail!("memcity is loaded in {pid} but not running (already detached)")
}

/// For `view --pid` and `record --pid`: the agent's address in `pid`, attaching with the default
/// options if memcity is not running there; sets the token for the client.
pub fn address_of(pid: u32) -> anyhow::Result<String> {
    let target = Target::inspect(pid)?;
    let registered = match attach::registration(&target) {
        Some(r) if !attach::loaded_libraries(pid).is_empty() => Registered {
            port: Some(r.port),
            token: Some(r.token),
        },
        _ => {
            let registered = attach(pid, None, None)?;
            print_attached(pid, &registered, None);
            registered
        }
    };
    let Some(port) = registered.port else {
        anyhow::bail!("memcity runs in {pid} without a port (port=off)");
    };
    if let Some(token) = registered.token {
        memcity_viewer::client::set_token(token);
    }
    Ok(format!("127.0.0.1:{port}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split(' ').map(String::from).collect()
    }

    #[test]
    fn main_classes_of_command_lines() {
        assert_eq!(
            main_of(&args("java -Xmx1g -cp a:b com.x.Main arg")),
            "com.x.Main"
        );
        assert_eq!(
            main_of(&args("java -XX:+UseG1GC -jar app.jar --port 1")),
            "app.jar"
        );
        assert_eq!(
            main_of(&args("java -p mods -m app/com.x.Main")),
            "com.x.Main"
        );
        assert_eq!(main_of(&args("java --module=app/com.x.Main")), "com.x.Main");
        assert_eq!(main_of(&args("java -version")), "(unknown main)");
    }

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

    #[test]
    fn java_versions() {
        assert_eq!(major("17.0.15"), Some(17));
        assert_eq!(major("1.8.0_392"), Some(8));
        assert_eq!(major("25"), Some(25));
        assert_eq!(major("21-ea"), Some(21));
    }
}
