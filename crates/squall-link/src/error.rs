//! The error of a configuration that cannot run: a leaf module, so that
//! every configuration type can name it without depending on
//! [`crate::config`].

/// A configuration that cannot run, naming the key (dotted path from the
/// stage name) and what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{key}`: {message}")]
pub struct ConfigError {
    pub key: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(key: &str, message: &str) -> Self {
        ConfigError { key: key.to_string(), message: message.to_string() }
    }
}
