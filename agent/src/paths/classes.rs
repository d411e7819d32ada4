//! What the search knows of a class: its reference fields, whether it is a collection's
//! insides or a leaf, learned once per class through JVMTI and cached by mirror.

use jni::sys::jclass;

use super::*;
use crate::census::fields::holds_only_leaves;
use crate::jvmti::LocalFrame;

impl Search {
    pub(super) fn field_id(&mut self, name: String) -> u32 {
        if let Some(&id) = self.field_ids.get(&name) {
            return id;
        }
        let id = self.fields.len() as u32;
        self.fields.push(name.clone());
        self.field_ids.insert(name, id);
        id
    }

    /// The class id and what the search knows of `class` (learned on first sight).
    #[inline]
    pub(super) fn class_info(&mut self, env: &mut Env, class: jclass) -> Option<(u32, Kind)> {
        // The classes met last: a list's nodes, a map's entries, an array's elements come in
        // runs, and `IsSameObject` is cheaper than the tag map's lock and lookup.
        let jni = env.jni;
        for i in 0..self.recent.len() {
            let (mirror, id, kind) = self.recent[i];
            if jni!(jni, IsSameObject, mirror, class) == jni::sys::JNI_TRUE {
                self.recent[..=i].rotate_right(1);
                return Some((id, kind));
            }
        }
        let (id, kind) = self.class_info_slow(env, class)?;
        let evicted = if self.recent.len() == RECENT_CLASSES {
            self.recent.pop().map(|r| r.0)
        } else {
            None
        };
        if let Some(mirror) = evicted {
            jni!(jni, DeleteGlobalRef, mirror);
        }
        let mirror = jni!(jni, NewGlobalRef, class);
        if !mirror.is_null() {
            self.recent.insert(0, (mirror, id, kind));
        }
        Some((id, kind))
    }

    pub(super) fn class_info_slow(&mut self, env: &mut Env, class: jclass) -> Option<(u32, Kind)> {
        let id = (env.class_id)(class)?;
        if let Some(Some(info)) = self.classes.get(id as usize) {
            return Some((id, info.kind));
        }
        let info = self.learn(env, class);
        let kind = info.kind;
        if self.classes.len() <= id as usize {
            self.classes.resize_with(id as usize + 1, || None);
        }
        self.classes[id as usize] = Some(info);
        Some((id, kind))
    }

    pub(super) fn learn(&mut self, env: &mut Env, class: jclass) -> ClassInfo {
        let jni = env.jni;
        let jvmti = env.jvmti;
        let leaf = ClassInfo {
            kind: Kind::Leaf,
            fields: Vec::new(),
            terminal: true,
        };
        let Ok(signature) = jvmti.class_signature(class) else {
            return leaf;
        };
        let signature = signature.to_string_lossy();
        if let Some(element) = signature.strip_prefix('[') {
            return ClassInfo {
                kind: if element.starts_with('L') || element.starts_with('[') {
                    Kind::ObjectArray
                } else {
                    Kind::Leaf
                },
                fields: Vec::new(),
                // An array of Strings may hold the same String twice, but an array of arrays
                // or objects may hold itself: only primitive arrays are leaves.
                terminal: !(element.starts_with('L') || element.starts_with('[')),
            };
        }
        if jni!(jni, IsSameObject, class, self.class_class) == jni::sys::JNI_TRUE {
            return ClassInfo {
                kind: Kind::Mirror,
                fields: Vec::new(),
                terminal: false,
            };
        }
        let is_thread = !self.thread_class.is_null()
            && jni!(jni, IsAssignableFrom, class, self.thread_class) == jni::sys::JNI_TRUE;
        let mut own = Vec::new();
        let mut other = Vec::new();
        let mut terminal = true;
        // SAFETY: the worker's JNIEnv; the frame frees the superclass references.
        let Some(_frame) = (unsafe { LocalFrame::push(jni, 16) }) else {
            return leaf;
        };
        let mut current = jni!(jni, NewLocalRef, class);
        while !current.is_null() {
            let is_reference =
                jni!(jni, IsSameObject, current, self.reference_class) == jni::sys::JNI_TRUE;
            if let Ok(fields) = jvmti.class_fields(current) {
                for &field in fields.as_slice() {
                    if jvmti
                        .field_modifiers(current, field)
                        .is_ok_and(|m| m & ACC_STATIC != 0)
                    {
                        continue;
                    }
                    let Ok((name, field_signature)) = jvmti.field_name(current, field) else {
                        continue;
                    };
                    let field_signature = field_signature.to_string_lossy();
                    if !(field_signature.starts_with('L') || field_signature.starts_with('[')) {
                        continue;
                    }
                    let name = name.to_string_lossy();
                    // A referent is not held by its reference (weak, soft, phantom: the GC
                    // clears it; final: the finalizer queue only runs it).
                    if is_reference && name == "referent" {
                        continue;
                    }
                    terminal &= holds_only_leaves(&field_signature);
                    let id = self.field_id(name);
                    if field_signature == signature {
                        own.push((field, id));
                    } else {
                        other.push((field, id));
                    }
                }
            }
            current = jni!(jni, GetSuperclass, current);
        }
        other.extend(own);
        ClassInfo {
            kind: if is_thread {
                Kind::Thread
            } else if other.is_empty() {
                Kind::Leaf
            } else {
                Kind::Instance
            },
            fields: other,
            terminal: terminal && !is_thread,
        }
    }
}
