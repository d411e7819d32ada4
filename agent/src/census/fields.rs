//! Names for the walk's field numbers.
//!
//! JVMTI reports a field reference with an index, not a name. The JVMTI specification numbers
//! the fields of a class C and its superclasses from `java.lang.Object` down to C, each class's
//! in `GetClassFields` order (static fields included), starting after the fields of every
//! interface C implements (constants, the only fields interfaces have). HotSpot's heap walk
//! builds the same numbers from a reversed field stream (jvmtiTagMap.cpp, `ClassFieldMap`); the
//! end-to-end tests check them on JDK 17 and 25 with a superclass field under an interface's
//! constants (`ThreadLocalLeak`). Should a JVM number differently, an index that lands on a
//! primitive field (no reference can come from one) or past the fields shows as `#index`
//! rather than as a wrong name.

use std::collections::{HashMap, HashSet};

use jni::sys::{jclass, JNIEnv};

use crate::jvmti::Jvmti;

/// One class's fields by JVMTI index: `(name, type signature)`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FieldTable {
    by_index: HashMap<u32, (String, String)>,
}

impl FieldTable {
    /// `hierarchy`: the declared fields of `java.lang.Object`, then each superclass, then the
    /// class itself, each in `GetClassFields` order; `interface_fields`: the fields of every
    /// interface the class implements, directly or not.
    pub fn new(hierarchy: &[Vec<(String, String)>], interface_fields: u32) -> Self {
        let by_index = hierarchy
            .iter()
            .flatten()
            .cloned()
            .zip(interface_fields..)
            .map(|(field, index)| (index, field))
            .collect();
        FieldTable { by_index }
    }

    /// The name of field `index`, or `#index` when it cannot be a reference's (see the module
    /// comment).
    pub fn name(&self, index: u32) -> String {
        match self.by_index.get(&index) {
            Some((name, signature)) if signature.starts_with(['L', '[']) => name.clone(),
            _ => format!("#{index}"),
        }
    }
}

/// Field tables per class, computed once per class on the agent's thread.
#[derive(Default)]
pub struct FieldNames {
    tables: HashMap<u32, FieldTable>,
}

impl FieldNames {
    pub fn has(&self, class_id: u32) -> bool {
        self.tables.contains_key(&class_id)
    }

    /// The name of field `index` of class `class_id` (`#index` if the class was never learned).
    pub fn name(&self, class_id: u32, index: u32) -> String {
        self.tables
            .get(&class_id)
            .map_or_else(|| format!("#{index}"), |t| t.name(index))
    }

    /// Learns the fields of `class` (a local reference).
    ///
    /// # Safety
    /// `jni` must be the current thread's JNIEnv, inside a local frame with room for the
    /// class's superclasses and interfaces.
    pub unsafe fn learn(&mut self, jvmti: &Jvmti, jni: *mut JNIEnv, class_id: u32, class: jclass) {
        let mut hierarchy = Vec::new();
        let mut interfaces = HashSet::new();
        let mut interface_fields = 0u32;
        let mut at = class;
        while !at.is_null() {
            hierarchy.push(declared(jvmti, at));
            let mut pending: Vec<jclass> = jvmti
                .implemented_interfaces(at)
                .map(|b| b.as_slice().to_vec())
                .unwrap_or_default();
            while let Some(interface) = pending.pop() {
                let Ok(signature) = jvmti.class_signature(interface) else {
                    continue;
                };
                if interfaces.insert(signature.to_string_lossy()) {
                    interface_fields += jvmti
                        .class_fields(interface)
                        .map_or(0, |f| f.as_slice().len() as u32);
                    if let Ok(more) = jvmti.implemented_interfaces(interface) {
                        pending.extend_from_slice(more.as_slice());
                    }
                }
            }
            // SAFETY: per the contract; GetSuperclass is always in the table.
            at = unsafe {
                match (**jni).GetSuperclass {
                    Some(superclass) => superclass(jni, at),
                    None => std::ptr::null_mut(),
                }
            };
        }
        hierarchy.reverse();
        self.tables
            .insert(class_id, FieldTable::new(&hierarchy, interface_fields));
    }
}

/// `(name, signature)` of the fields `class` declares, in class-file order.
fn declared(jvmti: &Jvmti, class: jclass) -> Vec<(String, String)> {
    let Ok(fields) = jvmti.class_fields(class) else {
        return Vec::new();
    };
    fields
        .as_slice()
        .iter()
        .map(|&field| match jvmti.field_name(class, field) {
            Ok((name, signature)) => (name.to_string_lossy(), signature.to_string_lossy()),
            Err(_) => (String::new(), String::new()),
        })
        .collect()
}

/// Final classes whose instances reference nothing but primitive arrays: a field declared as
/// one of them (or as a primitive array) holds a leaf of the search.
const LEAF_FINAL_CLASSES: [&str; 9] = [
    "Ljava/lang/String;",
    "Ljava/lang/Integer;",
    "Ljava/lang/Long;",
    "Ljava/lang/Short;",
    "Ljava/lang/Byte;",
    "Ljava/lang/Character;",
    "Ljava/lang/Boolean;",
    "Ljava/lang/Float;",
    "Ljava/lang/Double;",
];

/// Whether a field declared with this JVM signature can only hold a leaf: a primitive array or
/// an instance of [`LEAF_FINAL_CLASSES`] (their classes are final, so no subclass adds fields).
/// The same test tells the sampler which classes' objects reach nothing more
/// (`Sampler::references_only_leaves`).
pub fn holds_only_leaves(signature: &str) -> bool {
    match signature.as_bytes() {
        [b'[', element] => b"BCDFIJSZ".contains(element),
        _ => LEAF_FINAL_CLASSES.contains(&signature),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, s)| (n.to_string(), s.to_string()))
            .collect()
    }

    #[test]
    fn superclass_fields_come_first_and_primitives_are_not_named() {
        // class Node extends Base { Object item; Node next; int hash; }, Base { String id; }
        let hierarchy = [
            fields(&[]),
            fields(&[("id", "Ljava/lang/String;")]),
            fields(&[
                ("item", "Ljava/lang/Object;"),
                ("next", "LNode;"),
                ("hash", "I"),
            ]),
        ];
        let t = FieldTable::new(&hierarchy, 0);
        assert_eq!(t.name(0), "id");
        assert_eq!(t.name(1), "item");
        assert_eq!(t.name(2), "next");
        assert_eq!(t.name(3), "#3", "a primitive field holds no reference");
        assert_eq!(t.name(9), "#9");
    }

    #[test]
    fn interface_constants_come_before_every_class_field() {
        // Two interface constants; Base { String payload; }, Leaf extends Base { Object owner; }.
        let hierarchy = [
            fields(&[("payload", "Ljava/lang/String;")]),
            fields(&[("owner", "Ljava/lang/Object;")]),
        ];
        let t = FieldTable::new(&hierarchy, 2);
        assert_eq!(t.name(2), "payload");
        assert_eq!(t.name(3), "owner");
        assert_eq!(t.name(0), "#0");
    }

    #[test]
    fn fields_of_primitive_arrays_and_final_boxes_hold_only_leaves() {
        for leaf in ["[B", "[I", "[J", "Ljava/lang/String;", "Ljava/lang/Long;"] {
            assert!(holds_only_leaves(leaf), "{leaf}");
        }
        // Anything that may hold an object with fields, or itself.
        for not in [
            "Ljava/lang/Object;",
            "[Ljava/lang/String;",
            "[[B",
            "Ljava/lang/Number;",
            "Ljava/util/List;",
            "LProduct;",
        ] {
            assert!(!holds_only_leaves(not), "{not}");
        }
    }
}
