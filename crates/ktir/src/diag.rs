//! Diagnostics with source positions, printed in MLIR's `file:line:col: error: msg` style.

use crate::ast::Span;
use std::fmt;

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The program is valid but touches something the spec leaves open.
    Warning,
    /// The program is invalid.
    Error,
}

/// One problem found in a KTIR text.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// What is wrong, in words a person understands.
    pub message: String,
    /// Where.
    pub span: Span,
    /// 1-based line of `span.start`.
    pub line: u32,
    /// 1-based column (in characters) of `span.start`.
    pub column: u32,
}

impl Diagnostic {
    /// Whether this is an error (not a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(
            f,
            "{}:{}: {}: {}",
            self.line, self.column, sev, self.message
        )
    }
}

/// Maps byte offsets to line and column numbers.
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<usize>,
    text_len: usize,
}

impl LineIndex {
    /// Indexes the line starts of `text`.
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                starts.push(i + 1);
            }
        }
        LineIndex {
            starts,
            text_len: text.len(),
        }
    }

    /// 1-based (line, column) of a byte offset; the column counts characters.
    pub fn line_col(&self, text: &str, offset: usize) -> (u32, u32) {
        let offset = offset.min(self.text_len);
        let line = match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let mut start = self.starts.get(line).copied().unwrap_or(0);
        // A byte order mark is not a column.
        if line == 0 && text.starts_with('\u{feff}') {
            start = 3.min(offset);
        }
        let col = text
            .get(start..offset)
            .map(|s| s.chars().count())
            .unwrap_or(offset - start);
        (line as u32 + 1, col as u32 + 1)
    }
}

/// Collects diagnostics for one source text.
#[derive(Debug)]
pub struct Diagnostics<'a> {
    text: &'a str,
    index: LineIndex,
    /// What has been reported so far.
    pub list: Vec<Diagnostic>,
}

impl<'a> Diagnostics<'a> {
    /// A collector for `text`.
    pub fn new(text: &'a str) -> Self {
        Diagnostics {
            text,
            index: LineIndex::new(text),
            list: Vec::new(),
        }
    }

    /// Reports a problem at `span`.
    pub fn push(&mut self, severity: Severity, span: Span, message: impl Into<String>) {
        let (line, column) = self.index.line_col(self.text, span.start as usize);
        self.list.push(Diagnostic {
            severity,
            message: message.into(),
            span,
            line,
            column,
        });
    }

    /// Reports an error at `span`.
    pub fn error(&mut self, span: Span, message: impl Into<String>) {
        self.push(Severity::Error, span, message);
    }

    /// Reports a warning at `span`.
    pub fn warning(&mut self, span: Span, message: impl Into<String>) {
        self.push(Severity::Warning, span, message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based_and_count_characters() {
        let text = "ab\nçd\n";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_col(text, 0), (1, 1));
        assert_eq!(idx.line_col(text, 3), (2, 1));
        assert_eq!(idx.line_col(text, 5), (2, 2));
        assert_eq!(idx.line_col(text, 999), (3, 1));
    }
}
