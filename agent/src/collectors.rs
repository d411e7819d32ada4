//! Which collectors ran between two looks, as the JVM names them (its `GarbageCollectorMXBean`s:
//! "G1 Young Generation", "G1 Old Generation", "PS Scavenge", "PS MarkSweep", "ZGC Minor
//! Cycles"...): a lifetime's death says what kind of collection reclaimed the object, since
//! JVMTI's GC events do not. The beans and the method id are taken once, on the worker's
//! thread while the heap has room (the list is made in Java); each look then calls only
//! `getCollectionCount`, a native method that makes no object.

use jni::objects::{GlobalRef, JMethodID, JObject, JString, JValue};
use jni::signature::{Primitive, ReturnType};
use jni::JNIEnv;

pub struct Collectors {
    /// Each bean: its name, a global reference, and its count at the last look (-1: unknown).
    beans: Vec<(String, GlobalRef, i64)>,
    count: JMethodID,
}

impl Collectors {
    pub fn new(env: &mut JNIEnv) -> jni::errors::Result<Collectors> {
        let made: jni::errors::Result<Collectors> = env.with_local_frame(64, |env| {
            let list = env
                .call_static_method(
                    "java/lang/management/ManagementFactory",
                    "getGarbageCollectorMXBeans",
                    "()Ljava/util/List;",
                    &[],
                )?
                .l()?;
            let interface = env.find_class("java/lang/management/GarbageCollectorMXBean")?;
            let count = env.get_method_id(&interface, "getCollectionCount", "()J")?;
            let size = env.call_method(&list, "size", "()I", &[])?.i()?;
            let mut beans = Vec::new();
            for i in 0..size {
                let bean = env
                    .call_method(&list, "get", "(I)Ljava/lang/Object;", &[JValue::Int(i)])?
                    .l()?;
                let name = env
                    .call_method(&bean, "getName", "()Ljava/lang/String;", &[])?
                    .l()?;
                let name: String = env.get_string(&JString::from(name))?.into();
                beans.push((name, env.new_global_ref(&bean)?, -1));
            }
            Ok(Collectors { beans, count })
        });
        if made.is_err() && env.exception_check().unwrap_or(false) {
            let _ = env.exception_clear();
        }
        let mut collectors = made?;
        collectors.ran(env);
        Ok(collectors)
    }

    /// The collectors whose count rose since the last look, joined by " + " (empty when none
    /// did, or their counts could not be read).
    pub fn ran(&mut self, env: &mut JNIEnv) -> String {
        let mut ran = Vec::new();
        for (name, bean, last) in &mut self.beans {
            let bean: &JObject = bean.as_obj();
            // SAFETY: `count` is `GarbageCollectorMXBean.getCollectionCount()J`, which every
            // bean of the list implements; no arguments, a long returned.
            let now = unsafe {
                env.call_method_unchecked(
                    bean,
                    self.count,
                    ReturnType::Primitive(Primitive::Long),
                    &[],
                )
            }
            .and_then(|v| v.j())
            .unwrap_or(-1);
            if *last >= 0 && now > *last {
                ran.push(name.as_str());
            }
            if now >= 0 {
                *last = now;
            }
        }
        if env.exception_check().unwrap_or(false) {
            let _ = env.exception_clear();
        }
        ran.join(" + ")
    }
}
