//! How a group is named on screen: short enough to read at a glance, long enough to tell groups
//! apart. The city's labels, the 2D views' cells, the details panel and the leak-suspects list
//! all name groups through these.

use memcity_city::model::{CityModel, NodeId, Role, ROOT};

/// A type's name without its package, for a one-line list (`java.util.LinkedList$Node` ->
/// `LinkedList$Node`).
pub fn short_type(name: &str) -> &str {
    let base = name.split('[').next().unwrap_or(name);
    match base.rfind('.') {
        Some(dot) => &name[dot + 1..],
        None => name,
    }
}

/// What a label of memcity's own objects (its JFR stream, its helpers, under the top-level
/// `(memcity)` group) starts with: the application has `String`s and `byte[]`s too.
pub const OWN_PREFIX: &str = "memcity: ";

/// A group's name as a label on screen, short enough to read at a glance and telling groups
/// apart: types without their package (`LinkedList$Node`), allocation sites as their class,
/// method and line after their type (`byte[] Unsafe.allocateUninitializedArray:1375`), and
/// other levels as they are; memcity's own after [`OWN_PREFIX`] (`memcity: String`).
pub fn label(model: &CityModel, node: NodeId) -> String {
    if node == ROOT {
        return "Heap".into();
    }
    let name = application_label(model, node);
    // The `(memcity)` group says so itself.
    if model.is_own(node) && model.node(node).name != memcity_city::model::MEMCITY {
        format!("{OWN_PREFIX}{name}")
    } else {
        name
    }
}

fn application_label(model: &CityModel, node: NodeId) -> String {
    let info = model.node(node);
    if info.role == Role::Type {
        return short_type(&info.name).to_string();
    }
    let Some(of_type) = model
        .nearest_type(node)
        .filter(|&t| t != node)
        .map(|t| short_type(&model.node(t).name))
    else {
        return info.name.clone();
    };
    format!("{of_type} {}", short_site(&info.name))
}

/// `java.util.LinkedList.linkLast(LinkedList.java:146)` -> `LinkedList.linkLast:146` (`m()`
/// without a line); names that are not frames (`(unsampled)`, a thread) as they are.
pub fn short_site(name: &str) -> String {
    // A site may be a chain of frames (`a(A.java:1) <- ... <- b(B.java:2)`): the first names it.
    let first = memcity_proto::sites::split(name).frames[0];
    let Some((method, rest)) = first.split_once('(') else {
        return name.to_string();
    };
    if method.is_empty() {
        return name.to_string();
    }
    let mut parts = method.rsplitn(3, '.');
    let (m, class) = (parts.next().unwrap_or(method), parts.next());
    let line = rest
        .split(')')
        .next()
        .unwrap_or("")
        .rsplit_once(':')
        .map(|(_, line)| format!(":{line}"))
        .unwrap_or_else(|| "()".into());
    match class {
        Some(class) => format!("{class}.{m}{line}"),
        None => format!("{m}{line}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::leak;

    #[test]
    fn labels_are_short_and_tell_groups_apart() {
        assert_eq!(
            short_site("java.util.LinkedList.linkLast(LinkedList.java:146)"),
            "LinkedList.linkLast:146"
        );
        assert_eq!(short_site("Leak.main(Leak.java:33)"), "Leak.main:33");
        assert_eq!(
            short_site("java.util.LinkedList.linkLast(LinkedList.java:146) <- ... <- Leak.main(Leak.java:33)"),
            "LinkedList.linkLast:146"
        );
        assert_eq!(short_site("(unsampled)"), "(unsampled)");
        assert_eq!(short_site("main"), "main");
        let m = leak(vec![]);
        let site = m.find(&["app", "Node", "a()"]).unwrap();
        assert_eq!(label(&m, site), "Node a()");
        assert_eq!(label(&m, m.find(&["app"]).unwrap()), "app");
        assert_eq!(label(&m, ROOT), "Heap");
        assert_eq!(short_type("java.util.LinkedList$Node"), "LinkedList$Node");
        // memcity's own objects are told apart from the application's of the same type.
        let mut m = CityModel::new();
        let row = |path: &[&str]| {
            (
                path.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                "Type".to_string(),
                10u64,
                160u64,
            )
        };
        let rows = [
            row(&["java.lang"]),
            row(&["java.lang", "java.lang.String"]),
            row(&[memcity_city::model::MEMCITY]),
            row(&[memcity_city::model::MEMCITY, "java.lang.String"]),
        ];
        m.push_tree(0, (20, 320), &rows, vec![]);
        let theirs = m.find(&["java.lang", "java.lang.String"]).unwrap();
        let ours = m
            .find(&[memcity_city::model::MEMCITY, "java.lang.String"])
            .unwrap();
        assert_eq!(label(&m, theirs), "String");
        assert_eq!(label(&m, ours), "memcity: String");
        let group = m.find(&[memcity_city::model::MEMCITY]).unwrap();
        assert_eq!(label(&m, group), "(memcity)");
        assert_eq!(
            short_type("java.util.LinkedList$Node[]"),
            "LinkedList$Node[]"
        );
    }
}
