//! A `java` command line, read the same way by the agent (which names its application in
//! metrics and pushed profiles) and the viewer (which lists the JVMs it can attach to).

/// The arguments of process `pid`'s command line (`None`: this process), as `/proc` has them;
/// empty when it cannot be read.
pub fn args_of(pid: Option<u32>) -> Vec<String> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/cmdline"),
        None => "/proc/self/cmdline".to_string(),
    };
    std::fs::read(path)
        .map(|raw| {
            raw.split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
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

/// javac's launcher of single source files (`java App.java`): `Main` to JDK 21, then
/// `SourceLauncher`.
const SOURCE_LAUNCHERS: [&str; 2] = [
    "jdk.compiler/com.sun.tools.javac.launcher.Main",
    "jdk.compiler/com.sun.tools.javac.launcher.SourceLauncher",
];

/// What a JVM was launched to run, from its `sun.java.command` property: the launcher sets it
/// to the main class or jar and the arguments; a JDK tool's launcher to `module/class`
/// (`jdk.jcmd/sun.tools.jcmd.JCmd`); `java -version` sets none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launched {
    /// No main: `java -version`, `java -help`, a JVM made by JNI's invocation API.
    Nothing,
    /// One of the JDK's own tools (jcmd, jps, javac, jshell, jfr, keytool...), as
    /// `module/class` in a `jdk.*` or `java.*` module.
    JdkTool(String),
    /// An application: its main class, jar (as given) or `module/class`.
    Application(String),
}

impl Launched {
    /// Of the `sun.java.command` property's value (`None` when the JVM has none).
    pub fn of(command: Option<&str>) -> Launched {
        // A jar's path may hold spaces; its first word is what identifies it all the same.
        let mut words = command.into_iter().flat_map(str::split_whitespace);
        let Some(first) = words.next() else {
            return Launched::Nothing;
        };
        // Source-file mode (`java App.java`) runs in javac's launcher: the application is the
        // source file that follows it.
        if SOURCE_LAUNCHERS.contains(&first) {
            return match words.next() {
                Some(source) => Launched::Application(source.to_string()),
                None => Launched::JdkTool(first.to_string()),
            };
        }
        let jdk_module = first
            .split_once('/')
            .filter(|_| !first.ends_with(".jar"))
            .is_some_and(|(module, _)| module.starts_with("jdk.") || module.starts_with("java."));
        if jdk_module {
            Launched::JdkTool(first.to_string())
        } else {
            Launched::Application(first.to_string())
        }
    }

    /// The names a pattern may match: the main as given, and its last part (a jar's file
    /// name, a module's class).
    pub fn names(&self) -> Vec<&str> {
        match self {
            Launched::Nothing => Vec::new(),
            Launched::JdkTool(main) | Launched::Application(main) => {
                let last = main.rsplit('/').next().unwrap_or(main);
                if last == main {
                    vec![main.as_str()]
                } else {
                    vec![main.as_str(), last]
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_jvm_was_launched_for() {
        assert_eq!(Launched::of(None), Launched::Nothing);
        assert_eq!(Launched::of(Some("  ")), Launched::Nothing);
        assert_eq!(
            Launched::of(Some("jdk.jcmd/sun.tools.jcmd.JCmd 4242 VM.version")),
            Launched::JdkTool("jdk.jcmd/sun.tools.jcmd.JCmd".into())
        );
        assert_eq!(
            Launched::of(Some("java.base/sun.security.tools.keytool.Main -list")),
            Launched::JdkTool("java.base/sun.security.tools.keytool.Main".into())
        );
        assert_eq!(
            Launched::of(Some("com.acme.Main --port 8080")),
            Launched::Application("com.acme.Main".into())
        );
        // An application's own module, and jars wherever they are (even under a folder
        // named like a JDK module).
        assert_eq!(
            Launched::of(Some("com.acme/com.acme.Main")),
            Launched::Application("com.acme/com.acme.Main".into())
        );
        assert_eq!(
            Launched::of(Some("jdk.apps/checkout.jar")),
            Launched::Application("jdk.apps/checkout.jar".into())
        );
        assert_eq!(
            Launched::of(Some("/opt/app/checkout.jar")).names(),
            ["/opt/app/checkout.jar", "checkout.jar"]
        );
        assert_eq!(Launched::of(Some("Main")).names(), ["Main"]);
        // A single source file run by javac's launcher is an application (JDK 17, JDK 22+).
        assert_eq!(
            Launched::of(Some(
                "jdk.compiler/com.sun.tools.javac.launcher.Main /tmp/LinkedListLeak.java 60"
            )),
            Launched::Application("/tmp/LinkedListLeak.java".into())
        );
        assert_eq!(
            Launched::of(Some(
                "jdk.compiler/com.sun.tools.javac.launcher.SourceLauncher App.java"
            ))
            .names(),
            ["App.java"]
        );
    }

    fn args(line: &str) -> Vec<String> {
        line.split(' ').map(String::from).collect()
    }

    #[test]
    fn this_process_has_arguments() {
        let args = args_of(None);
        assert!(!args.is_empty() && args.iter().all(|a| !a.is_empty()));
        assert_eq!(args, args_of(Some(std::process::id())));
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
}
