//! An allocation site's name: its frames named on the worker thread, method by method, with
//! the first application frame kept where the top frames are all library code.

use std::collections::HashMap;

use memcity_proto::sites::SiteFrames;

use super::*;

/// A site: its top `naming` frames, and if those are all library code, the first application
/// frame below them, so a `String` built by `StringConcatHelper` still says which application
/// line made it (its name joins them: `memcity_proto::sites`).
pub fn site_of(frames: &[String], naming: usize) -> SiteFrames<&str> {
    let top = &frames[..naming.min(frames.len())];
    let mut site = SiteFrames {
        frames: top.iter().map(String::as_str).collect(),
        skipped: false,
    };
    if top.iter().all(|f| is_library_frame(f)) {
        if let Some(app) = frames[top.len()..].iter().find(|f| !is_library_frame(f)) {
            site.frames.push(app);
            site.skipped = true;
        }
    }
    site
}

/// What naming a frame needs of its method, fetched once per method.
struct MethodInfo {
    class: String,
    name: String,
    file: Option<String>,
    /// `(start bytecode index, line)` pairs.
    lines: Vec<(i64, i32)>,
}

/// Resolves methods to names on the agent thread, caching per method.
pub struct MethodNames {
    cache: HashMap<usize, MethodInfo>,
}

impl MethodNames {
    pub fn new() -> Self {
        Self {
            cache: HashMap::new(),
        }
    }

    /// `Class.method(File.java:line)` for one frame. Needs a JNI local frame around it (the
    /// declaring class comes back as a local reference).
    pub fn frame(&mut self, jvmti: &Jvmti, (method, bci): Frame) -> String {
        let entry = self.cache.entry(method).or_insert_with(|| {
            let id = method as jmethodID;
            let name = jvmti
                .method_name(id)
                .map(|s| s.to_string_lossy())
                .unwrap_or_else(|_| "<unknown method>".into());
            let (class, file) = match jvmti.method_declaring_class(id) {
                Ok(class) => (
                    jvmti
                        .class_signature(class)
                        .map(|s| crate::names::java_name(&s.to_string_lossy()))
                        .unwrap_or_else(|_| "<unknown class>".into()),
                    jvmti
                        .source_file_name(class)
                        .ok()
                        .map(|s| s.to_string_lossy()),
                ),
                Err(_) => ("<unloaded class>".into(), None),
            };
            let lines = jvmti
                .line_number_table(id)
                .map(|t| {
                    t.as_slice()
                        .iter()
                        .map(|e| (e.start_location, e.line_number))
                        .collect()
                })
                .unwrap_or_default();
            MethodInfo {
                class,
                name,
                file,
                lines,
            }
        });
        let line = crate::names::line_of(&entry.lines, bci);
        crate::names::frame_name(&entry.class, &entry.name, entry.file.as_deref(), line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn site_names_reach_the_application() {
        let stack = frames(&[
            "java.lang.StringConcatHelper.newString(StringConcatHelper.java:387)",
            "java.lang.invoke.DirectMethodHandle$Holder.invokeStatic(DirectMethodHandle$Holder)",
            "LinkedListLeak.main(LinkedListLeak.java:33)",
        ]);
        assert_eq!(
            site_of(&stack, 1).name(),
            "java.lang.StringConcatHelper.newString(StringConcatHelper.java:387) <- ... <- LinkedListLeak.main(LinkedListLeak.java:33)"
        );
        assert_eq!(
            site_of(&stack[2..], 1).name(),
            "LinkedListLeak.main(LinkedListLeak.java:33)"
        );
        assert_eq!(site_of(&stack, 3).name(), stack.join(" <- "));
        assert_eq!(site_of(&stack[..2], 1).name(), stack[0]);
        // The frames themselves, as they travel.
        let site = site_of(&stack, 1);
        assert_eq!(site.frames, [stack[0].as_str(), stack[2].as_str()]);
        assert!(site.skipped);
    }
}
