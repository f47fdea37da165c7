//! Checking parameters where their types are defined, with errors that name
//! the key that is wrong, so that every driver (the simulator's scenario
//! files, the daemon's configuration) reports them the same way.

use std::fmt;

/// A step of a key path: a table key or an array index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// A key path such as `links[2].loss`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyPath(pub Vec<Step>);

impl KeyPath {
    pub fn key(&self, k: &str) -> KeyPath {
        let mut p = self.clone();
        p.0.push(Step::Key(k.to_string()));
        p
    }

    pub fn index(&self, i: usize) -> KeyPath {
        let mut p = self.clone();
        p.0.push(Step::Index(i));
        p
    }

    /// Where `serde_path_to_error` says a value failed to deserialize.
    pub fn from_serde(path: &serde_path_to_error::Path) -> KeyPath {
        use serde_path_to_error::Segment;
        let steps = path.iter().filter_map(|segment| match segment {
            Segment::Seq { index } => Some(Step::Index(*index)),
            Segment::Map { key } | Segment::Enum { variant: key } => Some(Step::Key(key.clone())),
            Segment::Unknown => None,
        });
        KeyPath(steps.collect())
    }

    /// `self` followed by `rest`.
    pub fn join(&self, rest: &KeyPath) -> KeyPath {
        let mut p = self.clone();
        p.0.extend(rest.0.iter().cloned());
        p
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, step) in self.0.iter().enumerate() {
            match step {
                Step::Key(k) if n == 0 => write!(f, "{k}")?,
                Step::Key(k) => write!(f, ".{k}")?,
                Step::Index(i) => write!(f, "[{i}]")?,
            }
        }
        if self.0.is_empty() {
            write!(f, "(top level)")?;
        }
        Ok(())
    }
}

/// A value that parsed but is out of range or inconsistent: where, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    pub path: KeyPath,
    pub message: String,
}

impl Invalid {
    pub fn new(path: KeyPath, message: impl Into<String>) -> Invalid {
        Invalid { path, message: message.into() }
    }

    /// The same error, under `prefix`.
    pub fn under(self, prefix: &KeyPath) -> Invalid {
        Invalid { path: prefix.join(&self.path), message: self.message }
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for Invalid {}

/// Parameters that check what their types cannot say. Paths in the errors
/// are relative to the table the parameters were read from.
pub trait Validate {
    fn validate(&self) -> Result<(), Invalid>;
}

/// `Err` naming `key` unless `ok`.
pub fn check(ok: bool, key: &str, message: impl FnOnce() -> String) -> Result<(), Invalid> {
    if ok {
        Ok(())
    } else {
        Err(Invalid::new(KeyPath::default().key(key), message()))
    }
}

/// A probability in [0, 1) (or [0, 1] when `closed`).
pub fn probability(key: &str, p: f64, closed: bool) -> Result<(), Invalid> {
    let ok = if closed { (0.0..=1.0).contains(&p) } else { (0.0..1.0).contains(&p) };
    check(ok, key, || format!("expected a probability in [0, 1{}, found {p}", if closed { "]" } else { ")" }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_print_as_written_in_a_scenario() {
        let p = KeyPath::default().key("links").index(2).key("loss");
        assert_eq!(p.to_string(), "links[2].loss");
        let e = probability("loss", 1.5, false).unwrap_err().under(&KeyPath::default().key("links").index(0));
        assert_eq!(e.to_string(), "links[0].loss: expected a probability in [0, 1), found 1.5");
        assert_eq!(KeyPath::default().to_string(), "(top level)");
    }
}
