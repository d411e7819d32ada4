//! How the agent and the viewer read a stack frame's name (`Class.method(File.java:line)`):
//! one rule for both, so a site the agent names reaches the application frame the viewer then
//! takes its allocation context from.

/// Whether a frame or class belongs to the JDK rather than the application.
pub fn is_library_frame(frame: &str) -> bool {
    ["java.", "javax.", "jdk.", "sun.", "com.sun."]
        .iter()
        .any(|prefix| frame.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jdk_is_library_code() {
        assert!(is_library_frame(
            "java.util.ArrayList.grow(ArrayList.java:237)"
        ));
        assert!(is_library_frame(
            "jdk.internal.misc.Unsafe.allocateInstance"
        ));
        assert!(!is_library_frame("javafx.scene.Node.<init>"));
        assert!(!is_library_frame("com.example.Cache.put(Cache.java:20)"));
    }
}
