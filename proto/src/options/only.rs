//! `only=`: which JVMs the agent stays in, by their main class or jar. Given to every JVM of a
//! host or container at once (`JAVA_TOOL_OPTIONS`), the agent would otherwise watch each one,
//! build tools and sidecars included.

use crate::command::Launched;

/// Patterns of main classes or jars, any of which keeps the agent: `*` stands for any text,
/// `|` separates alternatives (`com.acme.*|checkout*.jar`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Only {
    patterns: Vec<String>,
}

impl Only {
    pub fn parse(value: &str) -> Result<Only, String> {
        let patterns: Vec<String> = value.split('|').map(|p| p.trim().to_string()).collect();
        if patterns.iter().any(String::is_empty) {
            return Err(
                "expected main classes or jars separated by | (such as com.acme.*|checkout*.jar)"
                    .into(),
            );
        }
        Ok(Only { patterns })
    }

    /// Whether a JVM launched for `launched` is one to stay in: a pattern matches its main as
    /// given or its last part (a jar's file name, a module's class). A JVM with no main
    /// (`java -version`, or one a native launcher made without saying its main) matches
    /// only `*` alone, which keeps the agent in every JVM.
    pub fn matches(&self, launched: &Launched) -> bool {
        if self.patterns.iter().any(|p| p == "*") {
            return true;
        }
        let names = launched.names();
        self.patterns
            .iter()
            .any(|pattern| names.iter().any(|name| glob(pattern, name)))
    }
}

/// Whether `text` matches `pattern`, where `*` stands for any text (none included).
fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        // No `*`: the whole text.
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("com.acme.Main", "com.acme.Main"));
        assert!(!glob("com.acme.Main", "com.acme.Main2"));
        assert!(glob("com.acme.*", "com.acme.billing.Main"));
        assert!(!glob("com.acme.*", "org.acme.Main"));
        assert!(glob("*.jar", "checkout.jar"));
        assert!(glob("check*out*.jar", "checkout-2.1.jar"));
        assert!(!glob("check*out*.jar", "check.jar"));
        assert!(glob("*", ""));
        assert!(glob("a*a", "aa"));
        assert!(!glob("a*a", "a"));
    }

    #[test]
    fn a_jvm_is_kept_by_its_main_class_or_jar() {
        let only = Only::parse("com.acme.*|checkout*.jar").unwrap();
        let app = |command: &str| Launched::of(Some(command));
        assert!(only.matches(&app("com.acme.Server --port 1")));
        assert!(only.matches(&app("/opt/shop/checkout-1.2.jar")));
        assert!(only.matches(&app("com.acme/com.acme.Server")));
        assert!(!only.matches(&app("org.gradle.launcher.GradleMain")));
        assert!(!only.matches(&Launched::Nothing));
        assert!(Only::parse("*").unwrap().matches(&Launched::Nothing));
        // A JDK tool when named: memcity in jshell, if someone asks.
        let jshell = Only::parse("*JShellToolProvider").unwrap();
        assert!(jshell.matches(&app(
            "jdk.jshell/jdk.internal.jshell.tool.JShellToolProvider"
        )));
        assert!(Only::parse("").is_err());
        assert!(Only::parse("a||b").is_err());
    }
}
