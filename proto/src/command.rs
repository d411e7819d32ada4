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

#[cfg(test)]
mod tests {
    use super::*;

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
