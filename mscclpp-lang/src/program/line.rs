//! Source lines of a program's calls: where the Rust program called the eDSL (`#[track_caller]`), or, for a
//! program replayed from MSCCL++'s Python DSL (`crate::dsl`), where the Python program made the call.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// One source line (and column), interned: every distinct line is stored once for the process.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct CodeLine {
    pub file: &'static str,
    pub line: u32,
    pub column: u32,
}

impl std::fmt::Display for CodeLine {
    /// `file:line:column`, as a Rust location displays; `file:line` for a script line (no column).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.column == 0 {
            write!(f, "{}:{}", self.file, self.line)
        } else {
            write!(f, "{}:{}:{}", self.file, self.line, self.column)
        }
    }
}

/// A program source line.
pub(crate) type Line = &'static CodeLine;

/// Interned lines by (file, line, column).
type Interned = Mutex<HashMap<(String, u32, u32), Line>>;

fn interned() -> &'static Interned {
    static LINES: OnceLock<Interned> = OnceLock::new();
    LINES.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The interned line of `file:line:column`.
pub(crate) fn intern(file: &str, line: u32, column: u32) -> Line {
    let mut map = interned().lock().unwrap_or_else(|e| e.into_inner());
    let key = (file.to_string(), line, column);
    if let Some(l) = map.get(&key) {
        return l;
    }
    let leaked: Line =
        Box::leak(Box::new(CodeLine { file: Box::leak(file.to_string().into_boxed_str()), line, column }));
    map.insert(key, leaked);
    leaked
}

thread_local! {
    /// The line the eDSL's calls on this thread record instead of their Rust caller (set while a DSL call replays).
    static SCRIPT: std::cell::Cell<Option<Line>> = const { std::cell::Cell::new(None) };
}

/// Where the current eDSL call was made: the script line being replayed, else the Rust caller.
#[track_caller]
pub(crate) fn here() -> Line {
    // Taken here, not inside the closure: a closure does not inherit `#[track_caller]`.
    let at = std::panic::Location::caller();
    SCRIPT.with(|s| s.get()).unwrap_or_else(|| intern(at.file(), at.line(), at.column()))
}

/// Run `f` with the eDSL's calls recorded at `line` (a script's line), then restore the previous one.
pub(crate) fn with_script_line<T>(line: Line, f: impl FnOnce() -> T) -> T {
    let previous = SCRIPT.with(|s| s.replace(Some(line)));
    let out = f();
    SCRIPT.with(|s| s.set(previous));
    out
}
