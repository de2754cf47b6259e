//! Compaction filters: user code that drops or rewrites values while compactions run.
//!
//! Owns: the [`CompactionFilter`] and [`CompactionFilterFactory`] traits, the
//! [`FilterRegistry`] that builds filters by name, the serializable [`FilterSpec`], and
//! the built-in `drop-prefix` filter.
//! Must not touch: compaction mechanics; `compaction::stream` decides which entries a
//! filter sees.
//! Concurrency: factories and filters are `Send + Sync`; the registry is shared behind an
//! `Arc` and takes a read lock per lookup.
//!
//! Filters are named and parameterised rather than closures so that a compaction
//! description ([`crate::compaction::task::CompactionTask`]) can carry its filter as data
//! to whatever thread or process runs it; that runner rebuilds the filter from its own
//! registry.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::error::{Error, Result};

/// What a filter wants done with one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterDecision {
    /// Keep the entry unchanged.
    Keep,
    /// Remove the key: readers that see no snapshot find it absent.
    Remove,
    /// Keep the key with this value instead.
    ChangeValue(Vec<u8>),
}

/// A filter run on the newest value of each key that no snapshot can see.
pub trait CompactionFilter: Send + Sync {
    /// The name of the factory that built it, for logs.
    fn name(&self) -> &str;
    /// Decides about `user_key`'s `value` while compacting into `level`.
    fn filter(&self, level: usize, user_key: &[u8], value: &[u8]) -> FilterDecision;
}

/// Builds filters of one kind from a parameter string.
pub trait CompactionFilterFactory: Send + Sync {
    /// The registered name, used in [`FilterSpec::name`].
    fn name(&self) -> &str;
    /// Builds a filter from `params` (the format is the factory's own).
    ///
    /// # Errors
    /// `Error::InvalidArgument` if `params` do not parse.
    fn create(&self, params: &str) -> Result<Box<dyn CompactionFilter>>;
}

/// Which filter a compaction runs: a registered name and that factory's parameters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FilterSpec {
    /// Name of a registered [`CompactionFilterFactory`].
    pub name: String,
    /// Parameters passed to [`CompactionFilterFactory::create`].
    pub params: String,
}

/// Filter factories by name. `Send + Sync`; share it with an `Arc`.
pub struct FilterRegistry {
    factories: RwLock<HashMap<String, Arc<dyn CompactionFilterFactory>>>,
}

impl Default for FilterRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for FilterRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<String> = self.factories.read().keys().cloned().collect();
        names.sort();
        f.debug_struct("FilterRegistry")
            .field("factories", &names)
            .finish()
    }
}

impl FilterRegistry {
    /// A registry holding the built-in filters (`drop-prefix`).
    pub fn new() -> Self {
        let registry = Self::empty();
        registry.register(Arc::new(DropPrefixFactory));
        registry
    }

    /// A registry with no filters at all.
    pub fn empty() -> Self {
        FilterRegistry {
            factories: RwLock::new(HashMap::new()),
        }
    }

    /// Adds `factory` under its name, replacing any factory of the same name.
    pub fn register(&self, factory: Arc<dyn CompactionFilterFactory>) {
        self.factories
            .write()
            .insert(factory.name().to_string(), factory);
    }

    /// Builds the filter `name` with `params`.
    ///
    /// # Errors
    /// `Error::InvalidArgument` if no factory has that name or the parameters are bad.
    pub fn create(&self, name: &str, params: &str) -> Result<Box<dyn CompactionFilter>> {
        let factory = self.factories.read().get(name).cloned();
        match factory {
            Some(f) => f.create(params),
            None => Err(Error::InvalidArgument(format!(
                "no compaction filter named {name:?} is registered"
            ))),
        }
    }

    /// Builds the filter described by `spec`.
    ///
    /// # Errors
    /// As [`FilterRegistry::create`].
    pub fn create_from_spec(&self, spec: &FilterSpec) -> Result<Box<dyn CompactionFilter>> {
        self.create(&spec.name, &spec.params)
    }
}

/// Name of the built-in filter that removes every key starting with a prefix.
pub const DROP_PREFIX: &str = "drop-prefix";

/// Removes every key that starts with a fixed prefix: a cheap way to drop a whole
/// table or tenant whose keys share a prefix, without writing a tombstone per key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropPrefixFilter {
    prefix: Vec<u8>,
}

impl DropPrefixFilter {
    /// A filter removing keys that start with `prefix`.
    ///
    /// # Errors
    /// `Error::InvalidArgument` if `prefix` is empty (it would remove every key).
    pub fn new(prefix: Vec<u8>) -> Result<Self> {
        if prefix.is_empty() {
            return Err(Error::InvalidArgument(
                "drop-prefix needs a non-empty prefix; an empty one would remove every key"
                    .to_string(),
            ));
        }
        Ok(DropPrefixFilter { prefix })
    }

    /// The spec that rebuilds this filter through a registry.
    pub fn spec(&self) -> FilterSpec {
        FilterSpec {
            name: DROP_PREFIX.to_string(),
            params: self.prefix.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }
}

impl CompactionFilter for DropPrefixFilter {
    fn name(&self) -> &str {
        DROP_PREFIX
    }
    fn filter(&self, _level: usize, user_key: &[u8], _value: &[u8]) -> FilterDecision {
        if user_key.starts_with(&self.prefix) {
            FilterDecision::Remove
        } else {
            FilterDecision::Keep
        }
    }
}

/// Builds [`DropPrefixFilter`]s; its parameter is the prefix in hexadecimal.
#[derive(Debug, Clone, Copy, Default)]
pub struct DropPrefixFactory;

impl CompactionFilterFactory for DropPrefixFactory {
    fn name(&self) -> &str {
        DROP_PREFIX
    }
    fn create(&self, params: &str) -> Result<Box<dyn CompactionFilter>> {
        Ok(Box::new(DropPrefixFilter::new(decode_hex(params.trim())?)?))
    }
}

/// Decodes an even-length hexadecimal string (either case).
fn decode_hex(s: &str) -> Result<Vec<u8>> {
    let bad = || Error::InvalidArgument(format!("drop-prefix parameter {s:?} is not hex bytes"));
    if !s.len().is_multiple_of(2) {
        return Err(bad());
    }
    s.as_bytes()
        .chunks(2)
        .map(|pair| {
            let text = std::str::from_utf8(pair).map_err(|_| bad())?;
            u8::from_str_radix(text, 16).map_err(|_| bad())
        })
        .collect()
}

#[cfg(test)]
mod tests;
