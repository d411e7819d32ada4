//! Java calls that can wait on the application's heap, made on a thread of their own.
//!
//! Why: a few of the worker's Java calls allocate much or take JFR's locks: starting JFR (it
//! loads its classes and makes megabytes of objects), closing or switching its recording, a
//! diagnostic command. In a heap that is filling up, such a call waits for a GC, or for a lock
//! that a JFR thread holds while it waits for a GC itself, as long as the heap stays full. Made
//! on the worker, it kept the worker from the OutOfMemoryError's request: the thread that ran out
//! waited its `oom_wait` and the session lost the heap's last snapshot (ZGC, about one run in 14,
//! while the worker closed the JFR stream). Made here, the worker goes on, and takes the call's
//! result when it comes ([`Aside::poll`]).
//!
//! Each call gets a fresh thread, attached to the JVM as a daemon under a `memcity-` name (so the
//! samples of its allocations are memcity's, and its own allocation failing asks nothing of the
//! worker: `oom::mark_memcity_thread`). The calls are rare (a few per session), so a pool would
//! buy nothing.

use std::ffi::{c_void, CString};
use std::sync::mpsc::{self, Receiver, TryRecvError};

use jni::sys::{JavaVMAttachArgs, JNI_OK, JNI_VERSION_1_8};
use jni::JNIEnv;

use crate::jvmti::JavaError;

/// A Java call under way on its own thread.
pub(crate) struct Aside<T> {
    what: &'static str,
    result: Receiver<Result<T, JavaError>>,
}

impl<T> Aside<T> {
    /// The call's result once it has returned; `None` while it runs.
    pub(crate) fn poll(&self) -> Option<Result<T, JavaError>> {
        match self.result.try_recv() {
            Ok(result) => Some(result),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(JavaError::Thread(format!(
                "the thread for {} ended without an answer",
                self.what
            )))),
        }
    }
}

impl<T> Aside<T> {
    /// The call's result, waiting at most `timeout` for it.
    pub(crate) fn wait(&self, timeout: std::time::Duration) -> Option<Result<T, JavaError>> {
        match self.result.recv_timeout(timeout) {
            Ok(result) => Some(result),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => self.poll(),
        }
    }
}

/// Runs `call` on a new thread attached to `vm` as `memcity-{what}`. A call that cannot start
/// (no thread, no attach) answers with its error.
pub(crate) fn spawn<T, F>(vm: &jni::JavaVM, what: &'static str, call: F) -> Aside<T>
where
    T: Send + 'static,
    F: FnOnce(&mut JNIEnv) -> Result<T, JavaError> + Send + 'static,
{
    let (tx, result) = mpsc::sync_channel(1);
    let failed = tx.clone();
    let raw = VmPointer(vm.get_java_vm_pointer());
    let spawned = std::thread::Builder::new()
        .name(format!("memcity-{what}"))
        .spawn(move || {
            crate::oom::mark_memcity_thread();
            let answer = crate::guarded(what, || {
                // SAFETY: `raw` is the JavaVM the agent runs in, valid for the process's life.
                unsafe { attached(raw.get(), what, call) }
            })
            .unwrap_or_else(|| {
                Err(JavaError::Thread(format!(
                    "{what} failed (see the log above)"
                )))
            });
            let _ = tx.send(answer);
        });
    if let Err(e) = spawned {
        let _ = failed.send(Err(JavaError::Thread(format!(
            "cannot start a thread for {what}: {e}"
        ))));
    }
    Aside { what, result }
}

/// Runs `call` with this thread attached to the JVM, and detaches it after.
///
/// # Safety
/// `vm` must be the process's JavaVM, and this thread not yet attached to it.
unsafe fn attached<T>(
    vm: *mut jni::sys::JavaVM,
    what: &str,
    call: impl FnOnce(&mut JNIEnv) -> Result<T, JavaError>,
) -> Result<T, JavaError> {
    let name = CString::new(format!("memcity-{what}")).expect("names have no NUL");
    let mut args = JavaVMAttachArgs {
        version: JNI_VERSION_1_8,
        name: name.as_ptr() as *mut _,
        group: std::ptr::null_mut(),
    };
    let mut env: *mut c_void = std::ptr::null_mut();
    // SAFETY: per contract; the arguments live across the call.
    let attached = unsafe {
        let functions = &**vm;
        let attach = functions.AttachCurrentThreadAsDaemon.ok_or_else(|| {
            JavaError::Thread("the JVM has no AttachCurrentThreadAsDaemon".into())
        })?;
        attach(
            vm,
            &mut env,
            &mut args as *mut JavaVMAttachArgs as *mut c_void,
        )
    };
    if attached != JNI_OK || env.is_null() {
        return Err(JavaError::Thread(format!(
            "cannot attach a thread to the JVM for {what} (JNI error {attached})"
        )));
    }
    // Detached however `call` ends, a panic included (`guarded` catches it above this frame).
    let _detach = Detach(vm);
    // SAFETY: the JNIEnv the attach just gave this thread.
    match unsafe { JNIEnv::from_raw(env.cast()) } {
        Ok(mut env) => call(&mut env),
        Err(e) => Err(JavaError::jni(format!("no JNIEnv for {what}"), e)),
    }
}

/// Detaches the thread that attached to this JVM when dropped.
struct Detach(*mut jni::sys::JavaVM);

impl Drop for Detach {
    fn drop(&mut self) {
        // SAFETY: made right after this thread attached to the process's JavaVM; the thread
        // holds no monitor of its own by now, and detaching frees its local references.
        unsafe {
            if let Some(detach) = (**self.0).DetachCurrentThread {
                detach(self.0);
            }
        }
    }
}

/// The JavaVM pointer, sent to the new thread: the invocation interface may be used from any
/// thread.
struct VmPointer(*mut jni::sys::JavaVM);
// SAFETY: see above; the pointer is only used through the JNI invocation functions.
unsafe impl Send for VmPointer {}

impl VmPointer {
    /// Through a method, so that the thread's closure takes the whole `Send` wrapper, not the
    /// bare pointer field.
    fn get(&self) -> *mut jni::sys::JavaVM {
        self.0
    }
}
