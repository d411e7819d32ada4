//! Names for the walk's field numbers.
//!
//! JVMTI reports a field reference with an index, not a name. The JVMTI specification numbers
//! the fields of a class C and its superclasses from `java.lang.Object` down to C, each class's
//! in `GetClassFields` order, starting after the fields of every interface C implements
//! (statics, the only fields interfaces have). HotSpot follows that in JDK 21 and later; before,
//! it numbered the same list but put the interfaces' fields between C's own and its
//! superclasses' (jvmtiTagMap.cpp, `ClassFieldMap`, a reversed `FilteredFieldStream` over C, its
//! interfaces, then its superclasses), so a superclass's fields come out shifted down by the
//! interface fields. Where no interface declares a field the two agree; where they do not, the
//! name follows the running JVM's numbering, and an index that lands on a primitive field (no
//! reference can come from one) shows that the numbering is not what we think: it is shown as
//! `#index` rather than a wrong name.

use std::collections::{HashMap, HashSet};

use jni::sys::{jclass, JNIEnv};

use crate::jvmti::Jvmti;

/// How the running JVM numbers fields in heap walks (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbering {
    /// The JVMTI specification (JDK 21 and later).
    Spec,
    /// Superclass fields without the interface fields' offset (JDK 20 and earlier).
    InterfacesAfterOwn,
}

impl Numbering {
    /// The numbering of a JVM by its `java.vm.specification.version` (`17`, `21`, `1.8`).
    pub fn of_version(version: &str) -> Self {
        let major = version
            .trim_start_matches("1.")
            .split('.')
            .next()
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0);
        if major >= 21 {
            Numbering::Spec
        } else {
            Numbering::InterfacesAfterOwn
        }
    }
}

/// One class's fields by JVMTI index: `(name, type signature)`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FieldTable {
    by_index: HashMap<u32, (String, String)>,
}

impl FieldTable {
    /// `hierarchy`: the declared fields of `java.lang.Object`, then each superclass, then the
    /// class itself, each in `GetClassFields` order; `interface_fields`: the fields of every
    /// interface the class implements, directly or not.
    pub fn new(
        hierarchy: &[Vec<(String, String)>],
        interface_fields: u32,
        numbering: Numbering,
    ) -> Self {
        let mut by_index = HashMap::new();
        let mut position = 0u32;
        let own = hierarchy.len().saturating_sub(1);
        for (level, fields) in hierarchy.iter().enumerate() {
            let offset = if numbering == Numbering::Spec || level == own {
                interface_fields
            } else {
                0
            };
            for field in fields {
                by_index.insert(position + offset, field.clone());
                position += 1;
            }
        }
        FieldTable { by_index }
    }

    /// The name of field `index`, or `#index` when it is not certain (see the module comment).
    pub fn name(&self, index: u32) -> String {
        match self.by_index.get(&index) {
            Some((name, signature)) if signature.starts_with(['L', '[']) => name.clone(),
            _ => format!("#{index}"),
        }
    }
}

/// Field tables per class, computed once per class on the agent's thread.
pub struct FieldNames {
    numbering: Numbering,
    tables: HashMap<u32, FieldTable>,
}

impl FieldNames {
    pub fn new(numbering: Numbering) -> Self {
        FieldNames {
            numbering,
            tables: HashMap::new(),
        }
    }

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
        self.tables.insert(
            class_id,
            FieldTable::new(&hierarchy, interface_fields, self.numbering),
        );
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, s)| (n.to_string(), s.to_string()))
            .collect()
    }

    #[test]
    fn without_interface_fields_both_numberings_agree() {
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
        for numbering in [Numbering::Spec, Numbering::InterfacesAfterOwn] {
            let t = FieldTable::new(&hierarchy, 0, numbering);
            assert_eq!(t.name(0), "id");
            assert_eq!(t.name(1), "item");
            assert_eq!(t.name(2), "next");
            assert_eq!(t.name(3), "#3", "a primitive field holds no reference");
            assert_eq!(t.name(9), "#9");
        }
    }

    #[test]
    fn interface_fields_shift_superclass_fields_by_the_numbering() {
        // Two interface constants; Base { String id; }, Leaf extends Base { Object value; }.
        let hierarchy = [
            fields(&[("id", "Ljava/lang/String;")]),
            fields(&[("value", "Ljava/lang/Object;")]),
        ];
        let spec = FieldTable::new(&hierarchy, 2, Numbering::Spec);
        assert_eq!(spec.name(2), "id");
        assert_eq!(spec.name(3), "value");
        let old = FieldTable::new(&hierarchy, 2, Numbering::InterfacesAfterOwn);
        assert_eq!(old.name(0), "id");
        assert_eq!(old.name(3), "value");
        assert_eq!(old.name(2), "#2");
    }

    #[test]
    fn numbering_follows_the_jvm_version() {
        assert_eq!(Numbering::of_version("17"), Numbering::InterfacesAfterOwn);
        assert_eq!(Numbering::of_version("11"), Numbering::InterfacesAfterOwn);
        assert_eq!(Numbering::of_version("1.8"), Numbering::InterfacesAfterOwn);
        assert_eq!(Numbering::of_version("21"), Numbering::Spec);
        assert_eq!(Numbering::of_version("25"), Numbering::Spec);
    }
}
