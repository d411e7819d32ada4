//! The GC roots that hold what a path search found: their kinds as the protocol names them,
//! and a root as the city keeps it (named, with its thread).

/// What kind of GC root holds a path: the protocol's own enum (`Root.Kind`), kept beside the
/// root's readable name so code asks for a thread or a static field by matching the kind, never
/// by reading the name's text.
pub use memcity_proto::v1::root::Kind as RootKind;

/// A root kind as the report and its JSON name it (`root_kind`: "static field", "thread").
pub fn root_kind_label(kind: RootKind) -> &'static str {
    match kind {
        RootKind::StaticField => "static field",
        RootKind::Thread => "thread",
        RootKind::StackLocal => "stack local",
        RootKind::JniLocal => "JNI local",
        RootKind::JniGlobal => "JNI global",
        RootKind::Monitor => "monitor",
        RootKind::Other | RootKind::Unspecified => "VM internal",
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootRef {
    pub kind: RootKind,
    /// Readable: `static LinkedListLeak.PEOPLE`, `thread "main"`.
    pub name: String,
    pub thread: String,
}

/// " and N more threads" after a root that a pool's threads share (`Suspect::co_holders`),
/// " and N more virtual threads" after a virtual thread's frame, else nothing.
pub fn more_threads(root: &str, n: usize) -> String {
    let kind = if root.contains("virtual thread \"") {
        "virtual thread"
    } else {
        "thread"
    };
    match n {
        0 => String::new(),
        1 => format!(" and 1 more {kind}"),
        n => format!(" and {n} more {kind}s"),
    }
}

/// A root's name with its thread's name (`thread "..."`, `... of thread "..."`) made
/// run-independent (`names::stable_thread_name`); other roots as they are.
pub fn stable_root(root: &str) -> String {
    let Some(start) = root.find("thread \"") else {
        return root.to_string();
    };
    let name_at = start + "thread \"".len();
    let Some(len) = root[name_at..].rfind('"') else {
        return root.to_string();
    };
    format!(
        "{}{}{}",
        &root[..name_at],
        crate::names::stable_thread_name(&root[name_at..name_at + len]),
        &root[name_at + len..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_threads_say_which_kind_of_thread_holds_alike() {
        let platform = "local in App.run(App.java:12) of thread \"pool-3-thread-7\"";
        let virtual_ = "local in Events.run(Events.java:40) of virtual thread \"events-17\"";
        assert_eq!(more_threads(platform, 0), "");
        assert_eq!(more_threads(platform, 1), " and 1 more thread");
        assert_eq!(more_threads(platform, 5), " and 5 more threads");
        assert_eq!(more_threads(virtual_, 1), " and 1 more virtual thread");
        assert_eq!(more_threads(virtual_, 199), " and 199 more virtual threads");
        // One family, as a pool's: the numbers go.
        assert_eq!(
            stable_root(virtual_),
            "local in Events.run(Events.java:40) of virtual thread \"events-#\""
        );
    }

    #[test]
    fn signatures_name_threads_by_their_family() {
        assert_eq!(
            stable_root("thread \"qtp1702297201-14-acceptor-0@36ae3dd9-ServerConnector@1a2b3c{HTTP/1.1,[http/1.1]}{0.0.0.0:46741}\""),
            "thread \"qtp#-#-acceptor-#@#-ServerConnector@#{HTTP/#.#,[http/#.#]}{host:#}\""
        );
        assert_eq!(
            stable_root("local in App.run(App.java:12) of thread \"pool-3-thread-7\""),
            "local in App.run(App.java:12) of thread \"pool-#-thread-#\""
        );
        assert_eq!(stable_root("static App.CACHE2"), "static App.CACHE2");
    }
}
