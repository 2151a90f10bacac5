//! The kinds of variables: how a value is read and parsed, what is accepted, and what applies when it is unset.
//!
//! Every kind reads the variable the same way: an unset variable and an empty one are the same (unset).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::ConfigError;

/// Who reads a variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The library, at run time.
    Library,
    /// The example programs.
    Examples,
    /// Tests only.
    Test,
    /// The GPU-suite scripts only.
    Scripts,
    /// The build (read by build scripts when compiling the crates).
    Build,
}

impl Scope {
    /// A short label for tables.
    pub fn label(self) -> &'static str {
        match self {
            Scope::Library => "library",
            Scope::Examples => "examples",
            Scope::Test => "test-only",
            Scope::Scripts => "scripts",
            Scope::Build => "build",
        }
    }
}

/// What every declaration carries, whatever its kind.
#[derive(Debug)]
pub struct Meta {
    /// The variable's name, e.g. `MSCCLPP_WAIT_TIMEOUT_MS`.
    pub name: &'static str,
    /// One line: what it does.
    pub doc: &'static str,
    /// Which part of the project reads it.
    pub reader: &'static str,
    /// Library, examples, tests or scripts.
    pub scope: Scope,
    /// What happens when it is unset, where the typed default does not say it all ("" otherwise).
    pub unset: &'static str,
}

impl Meta {
    fn raw_os(&self) -> Option<OsString> {
        std::env::var_os(self.name).filter(|v| !v.is_empty())
    }

    /// The value as text; `None` when unset or empty; an error when it is not UTF-8.
    fn raw_text(&self) -> Result<Option<String>, ConfigError> {
        match self.raw_os() {
            None => Ok(None),
            Some(v) => v
                .into_string()
                .map(Some)
                .map_err(|v| ConfigError::new(self.name, v.to_string_lossy().into_owned(), "text in UTF-8")),
        }
    }

    fn parse<T>(&self, accepted: &str, parse: impl FnOnce(&str) -> Option<T>) -> Result<Option<T>, ConfigError> {
        match self.raw_text()? {
            None => Ok(None),
            Some(raw) => match parse(raw.trim()) {
                Some(v) => Ok(Some(v)),
                None => Err(ConfigError::new(self.name, raw, accepted)),
            },
        }
    }
}

/// A declared variable, whatever its kind: what `mscclpp info` and the generated documentation need.
pub trait Variable: Sync {
    /// Name, doc, reader, scope.
    fn meta(&self) -> &Meta;
    /// The type, for the documentation (`bool`, `duration (ms)`, ...).
    fn kind(&self) -> &'static str;
    /// What applies when the variable is unset.
    fn default_text(&self) -> String;
    /// The current value as `mscclpp info` shows it: `Ok(None)` when unset, the error when invalid.
    fn current(&self) -> Result<Option<String>, ConfigError>;
}

fn with_unset(typed: String, unset: &str) -> String {
    match (typed.is_empty(), unset.is_empty()) {
        (_, true) => typed,
        (true, false) => unset.to_string(),
        (false, false) => format!("{typed} ({unset})"),
    }
}

/// Parse a flag: `1`/`true`/`on`/`yes` or `0`/`false`/`off`/`no` (any case), or an integer (0 is off).
pub fn parse_flag(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Some(true),
        "0" | "false" | "off" | "no" => Some(false),
        other => other.parse::<i64>().ok().map(|n| n != 0),
    }
}

/// Parse a size: bytes, with an optional `K`/`M`/`G` (binary) and `B`/`iB` suffix, parts joined by `+`
/// (`2048`, `2K`, `1MiB`, `4K+16`). The same grammar as `mscclpp test --size`.
pub fn parse_size(s: &str) -> Option<u64> {
    let mut total = 0u64;
    for part in s.split('+') {
        let p = part.trim().to_ascii_lowercase();
        let p = p.trim_end_matches("ib").trim_end_matches('b');
        let (num, mult) = match p.chars().last() {
            Some('k') => (&p[..p.len() - 1], 1u64 << 10),
            Some('m') => (&p[..p.len() - 1], 1 << 20),
            Some('g') => (&p[..p.len() - 1], 1 << 30),
            _ => (p, 1),
        };
        let v: u64 = num.trim().parse().ok()?;
        total = v.checked_mul(mult).and_then(|b| total.checked_add(b))?;
    }
    Some(total)
}

/// An on/off switch.
#[derive(Debug)]
pub struct Flag {
    /// Name, doc, reader, scope.
    pub meta: Meta,
    /// The value when unset.
    pub default: bool,
}

const FLAG_ACCEPTS: &str = "1/true/on/yes or 0/false/off/no (or an integer, 0 meaning off)";

impl Flag {
    /// The value, the default when unset; an error naming the value when it is not a flag.
    pub fn get(&self) -> Result<bool, ConfigError> {
        Ok(self.meta.parse(FLAG_ACCEPTS, parse_flag)?.unwrap_or(self.default))
    }

    /// The value; the default when unset or invalid (for readers that ignore a malformed value).
    pub fn get_or_default(&self) -> bool {
        self.get().unwrap_or(self.default)
    }
}

impl Variable for Flag {
    fn meta(&self) -> &Meta {
        &self.meta
    }
    fn kind(&self) -> &'static str {
        "bool"
    }
    fn default_text(&self) -> String {
        with_unset(if self.default { "on" } else { "off" }.to_string(), self.meta.unset)
    }
    fn current(&self) -> Result<Option<String>, ConfigError> {
        Ok(self.meta.parse(FLAG_ACCEPTS, parse_flag)?.map(|v| if v { "on" } else { "off" }.to_string()))
    }
}

/// A positive duration in whole milliseconds.
#[derive(Debug)]
pub struct Millis {
    /// Name, doc, reader, scope.
    pub meta: Meta,
    /// The value when unset.
    pub default: Duration,
}

const MILLIS_ACCEPTS: &str = "a positive whole number of milliseconds (e.g. 10000)";

impl Millis {
    /// The value, the default when unset; an error naming the value when it is not a positive number.
    pub fn get(&self) -> Result<Duration, ConfigError> {
        let ms = self.meta.parse(MILLIS_ACCEPTS, |s| s.parse::<u64>().ok().filter(|ms| *ms > 0))?;
        Ok(ms.map(Duration::from_millis).unwrap_or(self.default))
    }

    /// The value; the default when unset or invalid (for readers that ignore a malformed value).
    pub fn get_or_default(&self) -> Duration {
        self.get().unwrap_or(self.default)
    }
}

impl Variable for Millis {
    fn meta(&self) -> &Meta {
        &self.meta
    }
    fn kind(&self) -> &'static str {
        "duration (ms)"
    }
    fn default_text(&self) -> String {
        with_unset(format!("{} ms", self.default.as_millis()), self.meta.unset)
    }
    fn current(&self) -> Result<Option<String>, ConfigError> {
        self.meta.raw_text()?.map(|_| self.get().map(|d| format!("{} ms", d.as_millis()))).transpose()
    }
}

/// A size in bytes (`2048`, `2K`, `1MiB`, `4K+16`).
#[derive(Debug)]
pub struct Bytes {
    /// Name, doc, reader, scope.
    pub meta: Meta,
    /// The value when unset.
    pub default: u64,
}

const BYTES_ACCEPTS: &str = "a size in bytes, with an optional K/M/G suffix (e.g. 2048, 2K, 1M, 4K+16)";

impl Bytes {
    /// The value, the default when unset; an error naming the value when it is not a size.
    pub fn get(&self) -> Result<u64, ConfigError> {
        Ok(self.meta.parse(BYTES_ACCEPTS, parse_size)?.unwrap_or(self.default))
    }
}

impl Variable for Bytes {
    fn meta(&self) -> &Meta {
        &self.meta
    }
    fn kind(&self) -> &'static str {
        "size (bytes)"
    }
    fn default_text(&self) -> String {
        with_unset(self.default.to_string(), self.meta.unset)
    }
    fn current(&self) -> Result<Option<String>, ConfigError> {
        self.meta.raw_text()?.map(|_| self.get().map(|b| b.to_string())).transpose()
    }
}

/// A whole number in `min..=max`.
#[derive(Debug)]
pub struct Integer {
    /// Name, doc, reader, scope.
    pub meta: Meta,
    /// The value when unset, if there is a fixed one.
    pub default: Option<u64>,
    /// Smallest accepted value.
    pub min: u64,
    /// Largest accepted value.
    pub max: u64,
}

impl Integer {
    fn accepts(&self) -> String {
        format!("a whole number from {} to {}", self.min, self.max)
    }

    /// The value, else the default (`None`: unset and no fixed default); an error naming the value when it is
    /// not a number in range.
    pub fn get(&self) -> Result<Option<u64>, ConfigError> {
        let v = self
            .meta
            .parse(&self.accepts(), |s| s.parse::<u64>().ok().filter(|v| (self.min..=self.max).contains(v)))?;
        Ok(v.or(self.default))
    }
}

impl Variable for Integer {
    fn meta(&self) -> &Meta {
        &self.meta
    }
    fn kind(&self) -> &'static str {
        "integer"
    }
    fn default_text(&self) -> String {
        with_unset(self.default.map(|d| d.to_string()).unwrap_or_default(), self.meta.unset)
    }
    fn current(&self) -> Result<Option<String>, ConfigError> {
        self.meta.raw_text()?.map(|_| self.get().map(|v| v.map(|v| v.to_string()).unwrap_or_default())).transpose()
    }
}

/// Free text (a name, an address, a label).
#[derive(Debug)]
pub struct Text {
    /// Name, doc, reader, scope.
    pub meta: Meta,
    /// The value when unset, if there is a fixed one.
    pub default: Option<&'static str>,
    /// Never shown by `mscclpp info` (a secret).
    pub secret: bool,
}

impl Text {
    /// The value, else the default (`None`: unset and no fixed default); an error when it is not UTF-8.
    pub fn get(&self) -> Result<Option<String>, ConfigError> {
        Ok(self.meta.raw_text()?.or_else(|| self.default.map(str::to_string)))
    }

    /// The value; the default (or "") when unset or not UTF-8.
    pub fn get_or_default(&self) -> String {
        self.get().ok().flatten().or_else(|| self.default.map(str::to_string)).unwrap_or_default()
    }
}

impl Variable for Text {
    fn meta(&self) -> &Meta {
        &self.meta
    }
    fn kind(&self) -> &'static str {
        "string"
    }
    fn default_text(&self) -> String {
        let typed = match self.default {
            Some("") => "empty".to_string(),
            Some(d) => format!("`{d}`"),
            None => String::new(),
        };
        with_unset(typed, self.meta.unset)
    }
    fn current(&self) -> Result<Option<String>, ConfigError> {
        let v = self.meta.raw_text()?;
        Ok(if self.secret { v.map(|_| "(set; not shown)".to_string()) } else { v })
    }
}

/// A file or folder path (any bytes: a path need not be UTF-8).
#[derive(Debug)]
pub struct Path {
    /// Name, doc, reader, scope.
    pub meta: Meta,
}

impl Path {
    /// The path; `None` when unset or empty (what then applies is in [`Meta::unset`]).
    pub fn get(&self) -> Option<PathBuf> {
        self.meta.raw_os().map(PathBuf::from)
    }
}

impl Variable for Path {
    fn meta(&self) -> &Meta {
        &self.meta
    }
    fn kind(&self) -> &'static str {
        "path"
    }
    fn default_text(&self) -> String {
        self.meta.unset.to_string()
    }
    fn current(&self) -> Result<Option<String>, ConfigError> {
        Ok(self.get().map(|p| p.display().to_string()))
    }
}

/// A comma-separated list.
#[derive(Debug)]
pub struct List {
    /// Name, doc, reader, scope.
    pub meta: Meta,
}

impl List {
    /// The entries, trimmed, empty ones dropped; empty when unset; an error when the value is not UTF-8.
    pub fn get(&self) -> Result<Vec<String>, ConfigError> {
        Ok(self.meta.raw_text()?.map(|v| split_list(&v)).unwrap_or_default())
    }

    /// The value as written (for readers that parse the entries themselves); `None` when unset or not UTF-8.
    pub fn raw(&self) -> Option<String> {
        self.meta.raw_text().ok().flatten()
    }
}

fn split_list(v: &str) -> Vec<String> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

impl Variable for List {
    fn meta(&self) -> &Meta {
        &self.meta
    }
    fn kind(&self) -> &'static str {
        "list (comma-separated)"
    }
    fn default_text(&self) -> String {
        self.meta.unset.to_string()
    }
    fn current(&self) -> Result<Option<String>, ConfigError> {
        Ok(self.meta.raw_text()?.map(|v| split_list(&v).join(",")))
    }
}

/// One word out of a fixed set (any case).
#[derive(Debug)]
pub struct Choice {
    /// Name, doc, reader, scope.
    pub meta: Meta,
    /// The accepted words, in lower case.
    pub choices: &'static [&'static str],
}

impl Choice {
    fn accepts(&self) -> String {
        format!("one of: {}", self.choices.join(", "))
    }

    /// The chosen word (as declared); `None` when unset; an error naming the value when it is not one of
    /// [`Choice::choices`].
    pub fn get(&self) -> Result<Option<&'static str>, ConfigError> {
        self.meta.parse(&self.accepts(), |s| self.choices.iter().copied().find(|c| c.eq_ignore_ascii_case(s)))
    }
}

impl Variable for Choice {
    fn meta(&self) -> &Meta {
        &self.meta
    }
    fn kind(&self) -> &'static str {
        "choice"
    }
    fn default_text(&self) -> String {
        self.meta.unset.to_string()
    }
    fn current(&self) -> Result<Option<String>, ConfigError> {
        Ok(self.get()?.map(str::to_string))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(name: &'static str) -> Meta {
        Meta { name, doc: "d", reader: "r", scope: Scope::Test, unset: "" }
    }

    fn set(name: &str, value: &str) {
        // SAFETY: every test of this module uses a variable of its own, not read by any other test.
        unsafe { std::env::set_var(name, value) };
    }

    #[test]
    fn flags_accept_words_and_numbers() {
        for (s, v) in
            [("1", true), ("TRUE", true), ("on", true), ("yes", true), ("0", false), ("Off", false), ("no", false)]
        {
            assert_eq!(parse_flag(s), Some(v), "{s}");
        }
        assert_eq!(parse_flag("2"), Some(true));
        assert_eq!(parse_flag("maybe"), None);
        let f = Flag { meta: meta("CONFIG_TEST_FLAG"), default: true };
        assert_eq!(f.get(), Ok(true));
        set("CONFIG_TEST_FLAG", "");
        assert_eq!(f.get(), Ok(true), "empty is unset");
        set("CONFIG_TEST_FLAG", " off ");
        assert_eq!(f.get(), Ok(false));
        set("CONFIG_TEST_FLAG", "maybe");
        let e = f.get().expect_err("not a flag");
        assert_eq!((e.variable, e.value.as_str()), ("CONFIG_TEST_FLAG", "maybe"));
        assert!(e.to_string().contains("CONFIG_TEST_FLAG=\"maybe\"") && e.to_string().contains("1/true"), "{e}");
        assert!(f.get_or_default());
    }

    #[test]
    fn millis_are_positive() {
        let m = Millis { meta: meta("CONFIG_TEST_MILLIS"), default: Duration::from_secs(10) };
        assert_eq!(m.get(), Ok(Duration::from_secs(10)));
        set("CONFIG_TEST_MILLIS", " 500 ");
        assert_eq!(m.get(), Ok(Duration::from_millis(500)));
        assert_eq!(m.current(), Ok(Some("500 ms".into())));
        for bad in ["0", "-1", "1.5", "ten"] {
            set("CONFIG_TEST_MILLIS", bad);
            let e = m.get().expect_err(bad);
            assert!(e.to_string().contains("milliseconds"), "{e}");
            assert_eq!(m.get_or_default(), Duration::from_secs(10));
        }
    }

    #[test]
    fn sizes_take_suffixes() {
        for (s, v) in
            [("2048", 2048), ("2K", 2048), ("2kib", 2048), ("1M", 1 << 20), ("1G", 1 << 30), ("4K+16", 4112), ("0", 0)]
        {
            assert_eq!(parse_size(s), Some(v), "{s}");
        }
        for bad in ["", "K", "1T", "x", "99999999999G"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
        let b = Bytes { meta: meta("CONFIG_TEST_BYTES"), default: 2048 };
        assert_eq!(b.get(), Ok(2048));
        set("CONFIG_TEST_BYTES", "1K");
        assert_eq!(b.get(), Ok(1024));
        set("CONFIG_TEST_BYTES", "lots");
        assert!(b.get().expect_err("lots").to_string().contains("K/M/G"));
    }

    #[test]
    fn integers_are_range_checked() {
        let i = Integer { meta: meta("CONFIG_TEST_INT"), default: Some(0), min: 0, max: 255 };
        assert_eq!(i.get(), Ok(Some(0)));
        set("CONFIG_TEST_INT", "3");
        assert_eq!(i.get(), Ok(Some(3)));
        set("CONFIG_TEST_INT", "256");
        assert!(i.get().expect_err("256").to_string().contains("from 0 to 255"));
        let none = Integer { meta: meta("CONFIG_TEST_INT_NONE"), default: None, min: 1, max: 9 };
        assert_eq!(none.get(), Ok(None));
    }

    #[test]
    fn text_lists_choices_and_paths() {
        let t = Text { meta: meta("CONFIG_TEST_TEXT"), default: Some("libx.so"), secret: true };
        assert_eq!(t.get_or_default(), "libx.so");
        set("CONFIG_TEST_TEXT", "liby.so");
        assert_eq!(t.get(), Ok(Some("liby.so".into())));
        assert_eq!(t.current(), Ok(Some("(set; not shown)".into())), "a secret is never shown");

        let l = List { meta: meta("CONFIG_TEST_LIST") };
        assert_eq!(l.get(), Ok(vec![]));
        set("CONFIG_TEST_LIST", " mlx5_0:1, ,mlx5_1 ");
        assert_eq!(l.get(), Ok(vec!["mlx5_0:1".to_string(), "mlx5_1".to_string()]));
        assert_eq!(l.raw().as_deref(), Some(" mlx5_0:1, ,mlx5_1 "));

        let c = Choice { meta: meta("CONFIG_TEST_CHOICE"), choices: &["ib"] };
        assert_eq!(c.get(), Ok(None));
        set("CONFIG_TEST_CHOICE", " IB ");
        assert_eq!(c.get(), Ok(Some("ib")));
        set("CONFIG_TEST_CHOICE", "tcp");
        assert!(c.get().expect_err("tcp").to_string().contains("one of: ib"));

        let p = Path { meta: meta("CONFIG_TEST_PATH") };
        assert_eq!(p.get(), None);
        set("CONFIG_TEST_PATH", "/tmp/x");
        assert_eq!(p.get(), Some(PathBuf::from("/tmp/x")));
    }
}
