//! Why a Java call the agent made (through JNI) gave no answer: an exception it threw, JNI's
//! own refusal, or the thread meant to make it.

/// Why a Java call the agent made gave no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum JavaError {
    /// The call threw; the exception is cleared, so nothing is printed into the application's
    /// output.
    #[error("{what}: {exception}")]
    Threw { what: String, exception: String },
    /// JNI itself refused.
    #[error("{what}: {message}")]
    Jni { what: String, message: String },
    /// The thread meant to make the call could not make it.
    #[error("{0}")]
    Thread(String),
    /// The call answered, but not what memcity asked for.
    #[error("{asked}: {answer}")]
    Answer { asked: String, answer: String },
    /// The JVM would not do what was asked, said in full.
    #[error("{0}")]
    Refused(String),
    /// This agent was built without a JDK, so it carries no Java helper class.
    #[error("this agent was built without a JDK (no javac)")]
    NoHelperClass,
    /// A step failed for the reason given.
    #[error("{step}: {source}")]
    In {
        step: &'static str,
        source: Box<JavaError>,
    },
}

impl JavaError {
    pub(crate) fn jni(what: impl Into<String>, error: impl std::fmt::Display) -> JavaError {
        JavaError::Jni {
            what: what.into(),
            message: error.to_string(),
        }
    }

    /// This error, as the cause of a failed `step`.
    pub(crate) fn in_step(self, step: &'static str) -> JavaError {
        JavaError::In {
            step,
            source: Box::new(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_java_error_says_the_step_then_its_cause() {
        let threw = JavaError::Threw {
            what: "JFR.configure".into(),
            exception: "java.lang.IllegalStateException".into(),
        };
        assert_eq!(
            threw
                .in_step("JFR's repository cannot be kept out of java.io.tmpdir")
                .to_string(),
            "JFR's repository cannot be kept out of java.io.tmpdir: JFR.configure: java.lang.IllegalStateException"
        );
        assert_eq!(
            JavaError::jni("global reference", "out of memory").to_string(),
            "global reference: out of memory"
        );
    }
}
