//! How classes, packages, sites and threads are named in the grouping tree.

/// Package name of a type whose elements are primitives (`byte[]`, `int[][]`).
pub const PRIMITIVE_ARRAYS: &str = "(primitive arrays)";
/// Package name of types in the unnamed package.
pub const DEFAULT_PACKAGE: &str = "(default package)";
/// Site of samples taken while the classifier chain had no `site` level (the stack trace that
/// names a site is most of a sample's cost, so it is only read when asked for).
pub const SITE_NOT_RECORDED: &str = "(site not recorded)";
/// Site or thread of objects no sample tells anything about.
pub const UNSAMPLED: &str = "(unsampled)";
/// Package and type of what a JVM held when memcity attached to it, before any walk counted
/// it: never sampled, so known only as the heap's used bytes the samples do not explain.
pub const BEFORE_ATTACH: &str = "(allocated before memcity attached)";
/// Package of memcity's own objects (its JFR stream, helper class, canaries): of each class, the
/// share the last walk found memcity's or samples taken on memcity's threads stand for, under
/// the class's name. Kept out of
/// the application's packages so that they never look like its growth, and counted, so a type's
/// total over both still is the JVM's count.
pub const MEMCITY: &str = "(memcity)";
/// Type of objects whose class had no tag at the walk (loaded in the instant before it).
pub const UNKNOWN_CLASS: &str = "(class loaded during the walk)";

/// Converts a JVM type signature to the Java name people read: `Ljava/util/LinkedList$Node;` ->
/// `java.util.LinkedList$Node`, `[B` -> `byte[]`, `[[Ljava/lang/String;` -> `java.lang.String[][]`.
/// Hidden classes (`Lcom/Foo$$Lambda.0x0123;` in JVMTI) keep their suffix with `/`, as
/// `jcmd GC.class_histogram` prints them.
pub fn java_name(signature: &str) -> String {
    let dims = signature.bytes().take_while(|&b| b == b'[').count();
    let element = &signature[dims..];
    let mut name = match element.as_bytes().first() {
        Some(b'L') => {
            let inner = element
                .strip_prefix('L')
                .unwrap_or(element)
                .trim_end_matches(';');
            let mut java = inner.replace('/', ".");
            // JVMTI spells a hidden class's suffix with '.', the histogram with '/'.
            if let Some(at) = java.rfind(".0x") {
                if java[at + 3..].bytes().all(|b| b.is_ascii_hexdigit()) {
                    java.replace_range(at..at + 1, "/");
                }
            }
            java
        }
        Some(b'Z') => "boolean".into(),
        Some(b'B') => "byte".into(),
        Some(b'C') => "char".into(),
        Some(b'S') => "short".into(),
        Some(b'I') => "int".into(),
        Some(b'J') => "long".into(),
        Some(b'F') => "float".into(),
        Some(b'D') => "double".into(),
        Some(b'V') => "void".into(),
        _ => signature.to_owned(),
    };
    for _ in 0..dims {
        name.push_str("[]");
    }
    name
}

/// Whether a signature is an array whose elements are references (needs per-object sizes).
pub fn is_object_array(signature: &str) -> bool {
    signature.starts_with("[L") || signature.starts_with("[[")
}

/// The package a type is grouped under: the element type's package for arrays of objects,
/// [`PRIMITIVE_ARRAYS`] for arrays of primitives.
pub fn package_of(java_name: &str) -> &str {
    if java_name == BEFORE_ATTACH {
        return BEFORE_ATTACH; // a district of its own, not the default package's
    }
    let element = java_name.trim_end_matches("[]");
    if element.len() != java_name.len() && !element.contains('.') {
        // An array whose element has no package is either primitive or in the default package.
        if matches!(
            element,
            "boolean" | "byte" | "char" | "short" | "int" | "long" | "float" | "double"
        ) {
            return PRIMITIVE_ARRAYS;
        }
    }
    // Hidden classes' suffix may contain no dots, but their base name may: cut at '/' first.
    let base = element.split('/').next().unwrap_or(element);
    match base.rfind('.') {
        Some(at) => &base[..at],
        None => DEFAULT_PACKAGE,
    }
}

/// One resolved stack frame: `com.example.Person.<init>(Person.java:12)`.
pub fn frame_name(class: &str, method: &str, file: Option<&str>, line: Option<i32>) -> String {
    match (file, line) {
        (Some(file), Some(line)) if line >= 0 => format!("{class}.{method}({file}:{line})"),
        (Some(file), _) => format!("{class}.{method}({file})"),
        _ => format!("{class}.{method}(Unknown Source)"),
    }
}

/// The line of a bytecode index from a method's line-number table (`(start_bci, line)` pairs).
pub fn line_of(table: &[(i64, i32)], bci: i64) -> Option<i32> {
    table
        .iter()
        .filter(|(start, _)| *start <= bci)
        .max_by_key(|(start, _)| *start)
        .map(|(_, line)| *line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_become_java_names() {
        assert_eq!(java_name("Ljava/lang/String;"), "java.lang.String");
        assert_eq!(
            java_name("Ljava/util/LinkedList$Node;"),
            "java.util.LinkedList$Node"
        );
        assert_eq!(java_name("[B"), "byte[]");
        assert_eq!(java_name("[[I"), "int[][]");
        assert_eq!(java_name("[Ljava/lang/String;"), "java.lang.String[]");
        assert_eq!(java_name("[[Ljava/lang/Object;"), "java.lang.Object[][]");
        assert_eq!(java_name("LFoo;"), "Foo");
        assert_eq!(
            java_name("Ljava/lang/invoke/LambdaForm$MH.0x0000000800c01000;"),
            "java.lang.invoke.LambdaForm$MH/0x0000000800c01000"
        );
    }

    #[test]
    fn object_arrays_are_told_apart() {
        assert!(is_object_array("[Ljava/lang/String;"));
        assert!(is_object_array("[[B"));
        assert!(!is_object_array("[B"));
        assert!(!is_object_array("Ljava/lang/String;"));
    }

    #[test]
    fn packages() {
        assert_eq!(package_of("java.util.LinkedList$Node"), "java.util");
        assert_eq!(package_of("java.lang.String[]"), "java.lang");
        assert_eq!(package_of("byte[]"), PRIMITIVE_ARRAYS);
        assert_eq!(package_of("int[][]"), PRIMITIVE_ARRAYS);
        assert_eq!(package_of("LinkedListLeak"), DEFAULT_PACKAGE);
        assert_eq!(package_of(BEFORE_ATTACH), BEFORE_ATTACH);
        assert_eq!(package_of("Person[]"), DEFAULT_PACKAGE);
        assert_eq!(
            package_of("java.lang.invoke.LambdaForm$MH/0x0000000800c01000"),
            "java.lang.invoke"
        );
        assert_eq!(
            package_of("Foo$$Lambda/0x0000000800c01000"),
            DEFAULT_PACKAGE
        );
    }

    #[test]
    fn frames_and_lines() {
        let table = [(0, 10), (5, 11), (12, 14)];
        assert_eq!(line_of(&table, 0), Some(10));
        assert_eq!(line_of(&table, 7), Some(11));
        assert_eq!(line_of(&table, 40), Some(14));
        assert_eq!(line_of(&[], 3), None);
        assert_eq!(
            frame_name("Person", "<init>", Some("LinkedListLeak.java"), Some(12)),
            "Person.<init>(LinkedListLeak.java:12)"
        );
        assert_eq!(frame_name("A", "b", None, None), "A.b(Unknown Source)");
        assert_eq!(
            frame_name("A", "b", Some("A.java"), Some(-1)),
            "A.b(A.java)"
        );
    }
}
