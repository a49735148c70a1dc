//! A recovering parser for KTIR text.
//!
//! MLIR's syntax is context sensitive (`4x100xf16` is one shape, `-d0 + 3` an affine
//! expression), so the parser works on characters with a small set of token helpers rather
//! than on a separate token stream. When an operation fails to parse, the parser reports it
//! and skips to the next line, so one run reports several problems.

use crate::ast::*;
use crate::diag::{Diagnostic, Diagnostics};

mod ops;

/// Upper bound on nesting (regions, affine expressions) so hostile input cannot exhaust
/// the stack.
const MAX_DEPTH: usize = 64;

/// Upper bound on `module { module { .. } }` nesting.
const MAX_MODULE_NESTING: usize = 16;

/// Nesting units one region costs (so at most 16 nested regions).
const REGION_COST: usize = 4;

/// Parses a KTIR module. Always returns the tree it could build together with every
/// diagnostic found; the module is usable only when no diagnostic is an error.
pub fn parse(text: &str) -> (Module, Vec<Diagnostic>) {
    let mut p = Parser {
        src: text,
        // A UTF-8 byte order mark is an encoding detail, not part of the program.
        pos: if text.starts_with('\u{feff}') { 3 } else { 0 },
        diags: Diagnostics::new(text),
        depth: 0,
        type_aliases: Vec::new(),
        fuel: text.len().saturating_mul(8).saturating_add(10_000),
        op_groups: None,
    };
    let mut module = p.module();
    module.type_aliases = std::mem::take(&mut p.type_aliases);
    (module, in_source_order(p.diags.list))
}

/// Diagnostics sorted by position (recovery can report an inner problem before an outer
/// one that starts earlier), keeping only the first error at any one position: a failure
/// at the end of the input would otherwise be reported once by every construct it leaves
/// open.
fn in_source_order(mut list: Vec<Diagnostic>) -> Vec<Diagnostic> {
    list.sort_by_key(|d| d.span.start);
    let mut seen = std::collections::HashSet::new();
    list.retain(|d| !d.is_error() || seen.insert(d.span.start));
    list
}

/// A parse failure at a byte offset; turned into a diagnostic by the caller that recovers.
struct Failure {
    at: usize,
    end: usize,
    message: String,
}

type PResult<T> = Result<T, Failure>;

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    diags: Diagnostics<'a>,
    depth: usize,
    /// `!name = type` definitions seen so far.
    type_aliases: Vec<(String, Type)>,
    /// Bounds the work of error recovery: every recovery step spends some.
    fuel: usize,
    /// The `groups = ...` attribute of the inter-tile op being parsed, if it carries one:
    /// in that spelling its future types (`!ktdp.tile_future<T>`) leave the groups out.
    op_groups: Option<Attr>,
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'$' || c == b'-'
}

impl<'a> Parser<'a> {
    // ---- low-level helpers -------------------------------------------------------------

    fn rest(&self) -> &'a str {
        self.src.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<u8> {
        self.src.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        loop {
            let r = self.rest();
            let trimmed = r.trim_start();
            self.pos += r.len() - trimmed.len();
            if self.rest().starts_with("//") {
                let nl = self.rest().find('\n').unwrap_or(self.rest().len());
                self.pos += nl;
            } else {
                break;
            }
        }
    }

    fn fail<T>(&self, message: impl Into<String>) -> PResult<T> {
        let end = self.pos + self.rest().chars().next().map_or(0, |c| c.len_utf8());
        Err(Failure {
            at: self.pos,
            end,
            message: message.into(),
        })
    }

    fn fail_at<T>(&self, at: usize, message: impl Into<String>) -> PResult<T> {
        Err(Failure {
            at,
            end: self.pos.max(at),
            message: message.into(),
        })
    }

    /// What the next token looks like, for messages.
    fn found(&self) -> String {
        let r = self.rest();
        if r.is_empty() {
            return "end of input".into();
        }
        let tok: String =
            if r.as_bytes()[0].is_ascii_alphanumeric() || r.starts_with(['%', '#', '@', '!']) {
                let n = r
                    .bytes()
                    .enumerate()
                    .skip(1)
                    .find(|(_, c)| !is_ident_char(*c))
                    .map_or(r.len(), |(i, _)| i);
                r[..n].to_string()
            } else {
                r.chars().next().map(String::from).unwrap_or_default()
            };
        format!("'{tok}'")
    }

    fn eat(&mut self, s: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(s) {
            // Keywords must not run into an identifier character (`to` vs `tokens`).
            let last_is_word = s
                .as_bytes()
                .last()
                .is_some_and(|c| c.is_ascii_alphanumeric());
            let next = self.rest().as_bytes().get(s.len()).copied();
            if last_is_word && next.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
                return false;
            }
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, s: &str) -> PResult<()> {
        let before = self.pos;
        if self.eat(s) {
            return Ok(());
        }
        // Point at the end of the line rather than at the next line's first token.
        if self
            .src
            .get(before..self.pos)
            .is_some_and(|skipped| skipped.contains('\n'))
        {
            let line_end = before + self.src[before..].find(['\n', '/']).unwrap_or(0);
            return self.fail_at(
                line_end,
                format!("expected '{s}' before the end of the line"),
            );
        }
        self.fail(format!("expected '{s}', found {}", self.found()))
    }

    fn ident(&mut self) -> PResult<(String, Span)> {
        self.skip_ws();
        let start = self.pos;
        let r = self.rest().as_bytes();
        if !r
            .first()
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        {
            return self.fail(format!("expected an identifier, found {}", self.found()));
        }
        let n = r
            .iter()
            .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.' || *c == b'$'))
            .unwrap_or(r.len());
        self.pos += n;
        Ok((
            self.src[start..self.pos].to_string(),
            Span::new(start, self.pos),
        ))
    }

    fn sigil_name(&mut self, sigil: char) -> PResult<(String, Span)> {
        self.skip_ws();
        let start = self.pos;
        if !self.rest().starts_with(sigil) {
            return self.fail(format!("expected '{sigil}name', found {}", self.found()));
        }
        self.pos += 1;
        let r = self.rest().as_bytes();
        let n = r
            .iter()
            .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.' || *c == b'$'))
            .unwrap_or(r.len());
        if n == 0 {
            return self.fail(format!("expected a name after '{sigil}'"));
        }
        self.pos += n;
        Ok((
            self.src[start + 1..self.pos].to_string(),
            Span::new(start, self.pos),
        ))
    }

    fn value(&mut self) -> PResult<Value> {
        let (mut name, span) = self.sigil_name('%')?;
        // `%x#0`: result 0 of a multi-result op bound as `%x:2`.
        let r = self.rest().as_bytes();
        if r.first() == Some(&b'#') && r.get(1).is_some_and(|c| c.is_ascii_digit()) {
            let n = r[1..].iter().take_while(|c| c.is_ascii_digit()).count();
            name.push_str(&self.src[self.pos..self.pos + 1 + n]);
            self.pos += 1 + n;
            return Ok(Value {
                name,
                span: Span::new(span.start as usize, self.pos),
            });
        }
        Ok(Value { name, span })
    }

    fn integer(&mut self) -> PResult<i64> {
        self.skip_ws();
        let start = self.pos;
        let r = self.rest().as_bytes();
        let mut n = 0;
        if r.first() == Some(&b'-') {
            n = 1;
        }
        let digits = r[n..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return self.fail(format!("expected an integer, found {}", self.found()));
        }
        n += digits;
        let text = &self.src[start..start + n];
        self.pos += n;
        text.parse::<i64>()
            .or_else(|_| self.fail_at(start, format!("integer '{text}' is out of range")))
    }

    fn usize_lit(&mut self) -> PResult<usize> {
        let at = self.pos;
        let v = self.integer()?;
        usize::try_from(v)
            .or_else(|_| self.fail_at(at, format!("expected a non-negative integer, found {v}")))
    }

    /// A float or integer literal, as MLIR writes them (`1.0`, `-2.5e-3`, `0x7E00` is not
    /// supported).
    fn number(&mut self) -> PResult<f64> {
        self.skip_ws();
        let start = self.pos;
        let r = self.rest().as_bytes();
        if r.starts_with(b"0x") || r.starts_with(b"0X") {
            let n = r[2..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
            let text = &self.src[start + 2..start + 2 + n];
            self.pos += 2 + n;
            return u64::from_str_radix(text, 16)
                .map(|bits| bits as f64)
                .or_else(|_| self.fail_at(start, "hexadecimal literal is out of range"));
        }
        let mut n = 0;
        if matches!(r.first(), Some(b'-') | Some(b'+')) {
            n = 1;
        }
        while n < r.len() && (r[n].is_ascii_digit() || r[n] == b'.') {
            n += 1;
        }
        if n < r.len() && (r[n] == b'e' || r[n] == b'E') {
            n += 1;
            if n < r.len() && (r[n] == b'-' || r[n] == b'+') {
                n += 1;
            }
            while n < r.len() && r[n].is_ascii_digit() {
                n += 1;
            }
        }
        let text = &self.src[start..start + n];
        if text == "true" {
            self.pos += 4;
            return Ok(1.0);
        }
        match text.parse::<f64>() {
            Ok(v) if n > 0 => {
                self.pos += n;
                Ok(v)
            }
            _ => {
                if self.eat("true") {
                    return Ok(1.0);
                }
                if self.eat("false") {
                    return Ok(0.0);
                }
                self.fail(format!("expected a number, found {}", self.found()))
            }
        }
    }

    fn comma_list<T>(
        &mut self,
        open: &str,
        close: &str,
        mut item: impl FnMut(&mut Self) -> PResult<T>,
    ) -> PResult<Vec<T>> {
        self.expect(open)?;
        let mut out = Vec::new();
        if self.eat(close) {
            return Ok(out);
        }
        loop {
            out.push(item(self)?);
            if self.eat(close) {
                return Ok(out);
            }
            self.expect(",")?;
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.enter_by(1)
    }

    /// Enters a nested construct costing `cost` units of the nesting budget (regions cost
    /// more: each holds several large parser frames).
    fn enter_by(&mut self, cost: usize) -> PResult<()> {
        if self.depth + cost > MAX_DEPTH {
            return self.fail(format!(
                "nesting too deep (more than {MAX_DEPTH} levels of expressions, or {} of regions)",
                MAX_DEPTH / REGION_COST
            ));
        }
        self.depth += cost;
        Ok(())
    }

    fn leave(&mut self) {
        self.leave_by(1);
    }

    fn leave_by(&mut self, cost: usize) {
        self.depth = self.depth.saturating_sub(cost);
    }

    fn report(&mut self, f: Failure) {
        self.diags
            .error(Span::new(f.at, f.end.max(f.at)), f.message);
    }

    /// Skips to the start of the next line (error recovery).
    fn skip_line(&mut self) {
        let n = self.rest().find('\n').map_or(self.rest().len(), |i| i + 1);
        self.pos += n;
    }

    // ---- module structure --------------------------------------------------------------

    fn module(&mut self) -> Module {
        let mut m = Module::default();
        // MLIR wraps several top-level operations in one implicit module, so aliases,
        // functions and `module { .. }` blocks may follow one another in any order; the
        // functions and aliases of every block join this one module.
        loop {
            self.skip_ws();
            if self.rest().is_empty() {
                break;
            }
            let start = self.pos;
            if !self.spend(1) {
                break;
            }
            let result = if self.eat("module") {
                self.module_block(&mut m, 1)
            } else {
                self.top_level_item(&mut m)
            };
            if let Err(f) = result {
                self.report(f);
                self.pos = self.pos.max(start);
                self.recover_top_level(start);
            }
        }
        m
    }

    /// The rest of a `module [@name] [attributes {..}] { .. }` after its keyword, `level`
    /// modules deep: its items join `m`. An item that fails is reported and skipped, so
    /// one bad function does not hide the others' diagnostics.
    fn module_block(&mut self, m: &mut Module, level: usize) -> PResult<()> {
        // Nested modules recurse; hostile input must not exhaust the stack.
        if level > MAX_MODULE_NESTING {
            return self.fail(format!(
                "modules nested more than {MAX_MODULE_NESTING} deep"
            ));
        }
        // `module attributes {...}` and `module @name` are accepted and ignored.
        self.skip_ws();
        if self.rest().starts_with('@') {
            let _ = self.sigil_name('@');
        }
        if self.eat("attributes") {
            self.skip_attr_dict()?;
        }
        self.expect("{")?;
        loop {
            self.skip_ws();
            if self.rest().is_empty() {
                let at = self.pos;
                self.report(Failure {
                    at,
                    end: at,
                    message: "expected '}' to close the module".into(),
                });
                return Ok(());
            }
            if self.eat("}") {
                return Ok(());
            }
            let start = self.pos;
            if !self.spend(1) {
                return Ok(());
            }
            let result = if self.eat("module") {
                self.module_block(m, level + 1)
            } else {
                self.top_level_item(m)
            };
            if let Err(f) = result {
                self.report(f);
                self.pos = self.pos.max(start);
                self.recover_top_level(start);
            }
        }
    }

    /// One alias definition or function, added to `m`.
    fn top_level_item(&mut self, m: &mut Module) -> PResult<()> {
        if self.rest().starts_with('#') {
            self.alias().map(|a| m.aliases.push(a))
        } else if self.rest().starts_with('!') {
            self.type_alias()
        } else if self.rest().starts_with("func.func") {
            self.func().map(|f| m.funcs.push(f))
        } else {
            self.fail(format!(
                "expected 'func.func', 'module' or an alias definition '#name = ...', found {}",
                self.found()
            ))
        }
    }

    /// After a failed top-level item, skip to the next `func.func` or alias at line start.
    fn recover_top_level(&mut self, start: usize) {
        if self.pos == start {
            self.skip_line();
        }
        while !self.rest().is_empty() {
            let line_start = self.pos == 0 || self.src.as_bytes().get(self.pos - 1) == Some(&b'\n');
            let t = self.rest().trim_start_matches([' ', '\t']);
            if line_start
                && (t.starts_with("func.func")
                    || t.starts_with('#')
                    || t.starts_with('!')
                    || t.starts_with('}'))
            {
                if t.starts_with('}') && self.depth == 0 {
                    // Only a top-level brace closes the module; skip function closers.
                    let indent = self.rest().len() - t.len();
                    if indent > 0 {
                        self.skip_line();
                        continue;
                    }
                }
                return;
            }
            self.skip_line();
        }
    }

    fn alias(&mut self) -> PResult<Alias> {
        let start = self.pos;
        let (name, _) = self.sigil_name('#')?;
        self.expect("=")?;
        let value = self.attr_value()?;
        Ok(Alias {
            name,
            value,
            span: Span::new(start, self.pos),
        })
    }

    fn type_alias(&mut self) -> PResult<()> {
        let (name, span) = self.sigil_name('!')?;
        self.expect("=")?;
        let t = self.ty()?;
        if self.type_aliases.iter().any(|(n, _)| *n == name) {
            self.diags
                .error(span, format!("redefinition of type alias '!{name}'"));
        }
        self.type_aliases.push((name, t));
        Ok(())
    }

    fn attr_value(&mut self) -> PResult<Attr> {
        self.skip_ws();
        if self.rest().starts_with("loc(") {
            let start = self.pos;
            self.pos += 3;
            self.skip_balanced_parens();
            return Ok(Attr::Other(self.src[start..self.pos].to_string()));
        }
        if self.rest().starts_with("affine_set") {
            Ok(Attr::Set(self.affine_set()?))
        } else if self.rest().starts_with("affine_map") {
            Ok(Attr::Map(self.affine_map()?))
        } else if self.rest().starts_with('#') {
            let (name, _) = self.sigil_name('#')?;
            Ok(Attr::AliasRef(name))
        } else {
            self.fail(format!(
                "expected 'affine_set<...>', 'affine_map<...>' or '#alias', found {}",
                self.found()
            ))
        }
    }

    fn func(&mut self) -> PResult<Func> {
        let start = self.pos;
        self.expect("func.func")?;
        let _ = self.eat("private");
        let (name, _) = self.sigil_name('@')?;
        let args = self.comma_list("(", ")", |p| {
            let v = p.value()?;
            p.expect(":")?;
            let t = p.ty()?;
            p.skip_ws();
            if p.rest().starts_with('{') {
                p.skip_attr_dict()?;
            }
            p.skip_loc();
            Ok((v.name, t))
        })?;
        let mut results = Vec::new();
        if self.eat("->") {
            self.skip_ws();
            if self.rest().starts_with('(') {
                results = self.comma_list("(", ")", |p| p.ty())?;
            } else {
                results.push(self.ty()?);
            }
        }
        let header_end = self.pos;
        let mut grid = None;
        if self.eat("attributes") {
            let attrs = self.comma_list("{", "}", |p| {
                let (key, key_span) = p.ident()?;
                if key == "grid" {
                    p.expect("=")?;
                    let g = p.comma_list("[", "]", |p| p.usize_lit())?;
                    Ok(Some((g, key_span)))
                } else {
                    if p.eat("=") {
                        p.skip_attr_value()?;
                    }
                    Ok(None)
                }
            })?;
            for (g, span) in attrs.into_iter().flatten() {
                if g.is_empty() || g.contains(&0) {
                    return Err(Failure {
                        at: span.start as usize,
                        end: span.end as usize,
                        message: "'grid' must list positive sizes".into(),
                    });
                }
                grid = Some(g);
            }
        }
        let body = self.region(args.clone())?;
        Ok(Func {
            name,
            args,
            results,
            grid,
            body,
            span: Span::new(start, header_end),
            comment: None,
        })
    }

    /// An optional `{key = value, ...}` dictionary whose keys must be among `keys`;
    /// `value` parses the value of each key it is given.
    pub(super) fn attr_dict(
        &mut self,
        op: &str,
        keys: &[&str],
        mut value: impl FnMut(&mut Self, &str) -> PResult<()>,
    ) -> PResult<()> {
        self.skip_ws();
        if !self.rest().starts_with('{') {
            return Ok(());
        }
        self.comma_list("{", "}", |p| {
            let (key, key_span) = p.ident()?;
            p.expect("=")?;
            if !keys.contains(&key.as_str()) {
                return Err(Failure {
                    at: key_span.start as usize,
                    end: key_span.end as usize,
                    message: format!(
                        "unknown attribute '{key}' on '{op}' (expected {})",
                        keys.join(", ")
                    ),
                });
            }
            value(p, &key)
        })?;
        Ok(())
    }

    /// Skips an attribute value we do not interpret (balanced brackets, strings).
    fn skip_attr_value(&mut self) -> PResult<()> {
        self.skip_ws();
        let start = self.pos;
        let mut depth = 0i32;
        let bytes = self.src.as_bytes();
        while self.pos < bytes.len() {
            let c = bytes[self.pos];
            match c {
                b'"' => {
                    self.pos += 1;
                    while self.pos < bytes.len() && bytes[self.pos] != b'"' {
                        self.pos += if bytes[self.pos] == b'\\' { 2 } else { 1 };
                    }
                }
                b'-' if bytes.get(self.pos + 1) == Some(&b'>') => self.pos += 1,
                b'<' | b'>' if bytes.get(self.pos + 1) == Some(&b'=') => self.pos += 1,
                b'[' | b'(' | b'<' | b'{' => depth += 1,
                b']' | b')' | b'>' | b'}' => {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                }
                b',' if depth == 0 => break,
                b'\n' if depth == 0 => break,
                b'\n' if !self.spend(1) => break,
                _ => {}
            }
            self.pos += 1;
        }
        // An escape or a missing closing quote can step past the end, or into a character.
        self.pos = self.pos.min(bytes.len());
        while !self.src.is_char_boundary(self.pos) {
            self.pos += 1;
        }
        if self.pos == start {
            return self.fail("expected an attribute value");
        }
        Ok(())
    }

    /// `{ ops }` with the given block arguments; a `^bb0(%a: T, ..):` label, when written,
    /// gives the arguments instead.
    fn region(&mut self, args: Vec<(String, Type)>) -> PResult<Block> {
        self.enter_by(REGION_COST)?;
        self.expect("{")?;
        let mut block = Block {
            args,
            ops: Vec::new(),
        };
        self.skip_ws();
        if self.rest().starts_with('^') {
            match self.block_label() {
                Ok(a) => block.args = a,
                Err(f) => {
                    self.leave_by(REGION_COST);
                    return Err(f);
                }
            }
        }
        loop {
            self.skip_ws();
            if self.rest().is_empty() {
                self.leave_by(REGION_COST);
                return self.fail("expected '}' to close the region");
            }
            if self.eat("}") {
                break;
            }
            if self.rest().starts_with('^') {
                self.leave_by(REGION_COST);
                return self.fail(
                    "regions with more than one block are not supported (KTIR uses structured control flow)",
                );
            }
            if !self.spend(1) {
                self.leave_by(REGION_COST);
                return self.fail("input too large to parse");
            }
            let start = self.pos;
            match self.op() {
                Ok(op) => block.ops.push(op),
                Err(f) => {
                    // Skip the whole broken op, not just its first line: ops that span
                    // several lines would otherwise report each later line as an error of
                    // its own. So resume after the line the failure is on, and after any
                    // region the op opens there or on the next line.
                    let failed_at = f.at.clamp(start, self.src.len());
                    self.report(f);
                    self.pos = failed_at;
                    self.skip_line();
                    let opened = self.src[start..self.pos].matches('{').count() as i64
                        - self.src[start..self.pos].matches('}').count() as i64;
                    if opened > 0 {
                        self.skip_balanced(opened);
                    } else {
                        self.skip_ws();
                        if self.rest().starts_with('{') {
                            self.pos += 1;
                            self.skip_balanced(1);
                        }
                    }
                }
            }
        }
        self.leave_by(REGION_COST);
        Ok(block)
    }

    fn skip_balanced(&mut self, mut open: i64) {
        let bytes = self.src.as_bytes();
        while self.pos < bytes.len() && open > 0 {
            match bytes[self.pos] {
                b'{' => open += 1,
                b'}' => open -= 1,
                _ => {}
            }
            self.pos += 1;
        }
    }

    // ---- operations --------------------------------------------------------------------

    fn op(&mut self) -> PResult<Op> {
        self.skip_ws();
        let start = self.pos;
        let mut results = Vec::new();
        if self.rest().starts_with('%') {
            loop {
                let (name, span) = self.sigil_name('%')?;
                // `%r:2 = ...` binds results `%r#0` and `%r#1`.
                if self.rest().starts_with(':') && !self.rest().starts_with(": ") {
                    self.pos += 1;
                    let at = self.pos;
                    let n = self.usize_lit()?;
                    if n == 0 || n > 4096 {
                        return self.fail_at(at, "result group size must be between 1 and 4096");
                    }
                    results.extend((0..n).map(|i| format!("{name}#{i}")));
                } else {
                    let _ = span;
                    results.push(name);
                }
                if !self.eat(",") {
                    break;
                }
            }
            self.expect("=")?;
        }
        self.skip_ws();
        let name_start = self.pos;
        let (kind, result_types) = if self.rest().starts_with('"') {
            self.generic_op()?
        } else {
            let (name, _) = self.ident()?;
            self.op_body(&name, name_start, &results)?
        };
        let name = kind.name().to_string();
        self.skip_loc();
        let span = Span::new(start, self.pos);
        // Results may go unbound (`linalg.add ins(..) outs(..) -> T`), but a bound list
        // must match.
        if !results.is_empty() && result_types.len() != results.len() {
            return Err(Failure {
                at: start,
                end: self.pos,
                message: format!(
                    "'{name}' defines {} result(s) but {} name(s) are bound",
                    result_types.len(),
                    results.len()
                ),
            });
        }
        Ok(Op {
            results,
            kind,
            result_types,
            span,
            comment: None,
        })
    }

    fn skip_loc(&mut self) {
        self.skip_ws();
        if self.rest().starts_with("loc(") {
            self.pos += 3;
            self.skip_balanced_parens();
        }
    }

    fn skip_balanced_parens(&mut self) {
        let bytes = self.src.as_bytes();
        let mut depth = 0;
        while self.pos < bytes.len() {
            match bytes[self.pos] {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos += 1;
                        return;
                    }
                }
                b'\n' => return,
                _ => {}
            }
            self.pos += 1;
        }
    }

    fn op_body(
        &mut self,
        name: &str,
        name_start: usize,
        results: &[String],
    ) -> PResult<(OpKind, Vec<Type>)> {
        if let Some(op) = ElementwiseOp::from_arith_name(name) {
            let mut operands = vec![self.value()?];
            loop {
                // Stay on this line when no comma follows, so a missing type is reported
                // at its end.
                let at = self.pos;
                if !self.eat(",") {
                    self.pos = at;
                    break;
                }
                operands.push(self.value()?);
            }
            let n = op.arity();
            if operands.len() != n {
                return self.fail(format!(
                    "'{name}' takes {n} operand(s), found {}",
                    operands.len()
                ));
            }
            self.skip_fastmath();
            self.expect(":")?;
            let t = self.ty()?;
            return Ok((OpKind::Elementwise { op, operands }, vec![t]));
        }
        match name {
            "func.return" | "return" => {
                let mut values = Vec::new();
                let mut types = Vec::new();
                self.skip_ws();
                if self.rest().starts_with('%') {
                    loop {
                        values.push(self.value()?);
                        if !self.eat(",") {
                            break;
                        }
                    }
                    self.expect(":")?;
                    loop {
                        types.push(self.ty()?);
                        if !self.eat(",") {
                            break;
                        }
                    }
                }
                Ok((OpKind::Return { values, types }, vec![]))
            }
            "arith.constant" => {
                self.skip_ws();
                let lit_start = self.pos;
                let value = self.literal()?;
                let hex = self.src[lit_start..self.pos]
                    .trim_start_matches("dense<")
                    .trim_start()
                    .starts_with("0x");
                self.expect(":")?;
                let t = self.ty()?;
                let value = match (value, t.elem()) {
                    (Literal::Int(bits), Some(e)) if hex && e.is_float() => {
                        Literal::Float(float_from_bits(bits as u64, e))
                    }
                    (Literal::DenseSplat(bits), Some(e)) if hex && e.is_float() => {
                        Literal::DenseSplat(float_from_bits(bits as u64, e))
                    }
                    (v, _) => v,
                };
                Ok((OpKind::Constant { value }, vec![t]))
            }
            "ktdp.get_compute_tile_id" => {
                let mut dim = None;
                self.attr_dict("ktdp.get_compute_tile_id", &["dim"], |p, _| {
                    dim = Some(p.usize_lit()?);
                    Ok(())
                })?;
                let mut types = Vec::new();
                if self.eat(":") {
                    loop {
                        types.push(self.ty()?);
                        if !self.eat(",") {
                            break;
                        }
                    }
                }
                Ok((OpKind::GetComputeTileId { dim }, types))
            }
            "ktdp.construct_memory_view" => self.memory_view(),
            "ktdp.construct_access_tile" => self.access_tile(),
            "ktdp.load" => {
                let tile = self.value()?;
                self.expect(":")?;
                let tile_type = self.ty()?;
                self.expect("->")?;
                let t = self.ty()?;
                Ok((OpKind::Load { tile, tile_type }, vec![t]))
            }
            "ktdp.store" => {
                let value = self.value()?;
                self.expect(",")?;
                let tile = self.value()?;
                self.expect(":")?;
                let value_type = self.ty()?;
                self.expect(",")?;
                let tile_type = self.ty()?;
                Ok((
                    OpKind::Store {
                        value,
                        tile,
                        value_type,
                        tile_type,
                    },
                    vec![],
                ))
            }
            "tensor.empty" => {
                let dynamic_sizes = self.comma_list("(", ")", |p| p.value())?;
                self.expect(":")?;
                let t = self.ty()?;
                Ok((OpKind::TensorEmpty { dynamic_sizes }, vec![t]))
            }
            "tensor.collapse_shape" | "tensor.expand_shape" => {
                let source = self.value()?;
                let reassociation =
                    self.comma_list("[", "]", |p| p.comma_list("[", "]", |p| p.usize_lit()))?;
                let mut output_shape = Vec::new();
                if name == "tensor.expand_shape" {
                    self.expect("output_shape")?;
                    output_shape = self.comma_list("[", "]", |p| p.size_operand())?;
                }
                self.expect(":")?;
                let source_type = self.ty()?;
                self.expect("into")?;
                let t = self.ty()?;
                let kind = if name == "tensor.collapse_shape" {
                    OpKind::CollapseShape {
                        source,
                        reassociation,
                        source_type,
                    }
                } else {
                    OpKind::ExpandShape {
                        source,
                        reassociation,
                        output_shape,
                        source_type,
                    }
                };
                Ok((kind, vec![t]))
            }
            "linalg.fill" | "linalg.matmul" | "linalg.transpose" | "linalg.broadcast" => {
                self.linalg(name, results)
            }
            "scf.for" => self.scf_for(),
            "scf.yield" => {
                let mut values = Vec::new();
                let mut types = Vec::new();
                self.skip_ws();
                if self.rest().starts_with('%') {
                    loop {
                        values.push(self.value()?);
                        if !self.eat(",") {
                            break;
                        }
                    }
                    self.expect(":")?;
                    loop {
                        types.push(self.ty()?);
                        if !self.eat(",") {
                            break;
                        }
                    }
                }
                Ok((OpKind::Yield { values, types }, vec![]))
            }
            _ => self.op_body_ext(name, name_start, results),
        }
    }

    fn literal(&mut self) -> PResult<Literal> {
        self.skip_ws();
        if self.eat("dense") {
            self.expect("<")?;
            self.skip_ws();
            let lit = if self.rest().starts_with('[') {
                let mut flat = Vec::new();
                self.dense_elements(&mut flat)?;
                Literal::Dense(flat)
            } else {
                Literal::DenseSplat(self.number()?)
            };
            self.expect(">")?;
            return Ok(lit);
        }
        let start = self.pos;
        let v = self.number()?;
        let text = &self.src[start..self.pos];
        if text.starts_with("0x") || text.starts_with("0X") {
            return Ok(Literal::Int(v as i64));
        }
        if text == "true" || text == "false" {
            Ok(Literal::Int(v as i64))
        } else if text.contains(['.', 'e', 'E']) {
            Ok(Literal::Float(v))
        } else {
            text.trim()
                .parse::<i64>()
                .map(Literal::Int)
                .or_else(|_| self.fail_at(start, format!("integer '{text}' is out of range")))
        }
    }

    fn dense_elements(&mut self, out: &mut Vec<f64>) -> PResult<()> {
        self.enter()?;
        self.expect("[")?;
        if !self.eat("]") {
            loop {
                self.skip_ws();
                if self.rest().starts_with('[') {
                    self.dense_elements(out)?;
                } else {
                    out.push(self.number()?);
                }
                if self.eat("]") {
                    break;
                }
                self.expect(",")?;
            }
        }
        self.leave();
        Ok(())
    }

    fn size_operand(&mut self) -> PResult<SizeOperand> {
        self.skip_ws();
        if self.rest().starts_with('%') {
            Ok(SizeOperand::Dynamic(self.value()?))
        } else {
            Ok(SizeOperand::Static(self.integer()?))
        }
    }

    fn memory_view(&mut self) -> PResult<(OpKind, Vec<Type>)> {
        let base = self.value()?;
        self.expect(",")?;
        self.expect("sizes")?;
        self.expect(":")?;
        let sizes = self.comma_list("[", "]", |p| p.size_operand())?;
        self.expect(",")?;
        self.expect("strides")?;
        self.expect(":")?;
        let strides = self.comma_list("[", "]", |p| p.size_operand())?;
        let mut coordinate_set = None;
        let mut memory_space = None;
        self.attr_dict(
            "ktdp.construct_memory_view",
            &["coordinate_set", "memory_space"],
            |p, key| {
                if key == "coordinate_set" {
                    coordinate_set = Some(p.attr_value()?);
                } else {
                    memory_space = Some(p.memory_space()?);
                }
                Ok(())
            },
        )?;
        self.expect(":")?;
        let t = self.ty()?;
        Ok((
            OpKind::ConstructMemoryView {
                base,
                sizes,
                strides,
                coordinate_set,
                memory_space,
            },
            vec![t],
        ))
    }

    fn access_tile(&mut self) -> PResult<(OpKind, Vec<Type>)> {
        let view = self.value()?;
        let mut operands: Vec<Value> = Vec::new();
        let subscripts = self.comma_list("[", "]", |p| p.subscript_expr(&mut operands))?;
        let mut access_tile_set = None;
        let mut access_tile_order = None;
        let mut symbols = Vec::new();
        if self.eat("symbols") {
            symbols = self.comma_list("(", ")", |p| p.value())?;
        }
        self.attr_dict(
            "ktdp.construct_access_tile",
            &["access_tile_set", "access_tile_order"],
            |p, key| {
                let value = Some(p.attr_value()?);
                if key == "access_tile_set" {
                    access_tile_set = value;
                } else {
                    access_tile_order = value;
                }
                Ok(())
            },
        )?;
        self.expect(":")?;
        let view_type = self.ty()?;
        self.expect("->")?;
        let t = self.ty()?;
        Ok((
            OpKind::ConstructAccessTile {
                view,
                subscripts,
                operands,
                access_tile_set,
                access_tile_order,
                symbols,
                view_type,
            },
            vec![t],
        ))
    }

    /// A subscript: an affine expression whose leaves are SSA values or integers. Each
    /// distinct SSA value becomes a dimension `d_i` of the expression.
    fn subscript_expr(&mut self, operands: &mut Vec<Value>) -> PResult<AffineExpr> {
        let mut leaf = |p: &mut Parser| -> PResult<Option<AffineExpr>> {
            p.skip_ws();
            if p.rest().starts_with('%') {
                let v = p.value()?;
                let idx = match operands.iter().position(|o| o.name == v.name) {
                    Some(i) => i,
                    None => {
                        operands.push(v);
                        operands.len() - 1
                    }
                };
                Ok(Some(AffineExpr::Dim(idx)))
            } else {
                Ok(None)
            }
        };
        self.affine_expr(&mut leaf, &[], &[])
    }

    fn memory_space(&mut self) -> PResult<MemorySpace> {
        self.skip_ws();
        let start = self.pos;
        if self.eat("#ktdp.memory_space") {
            self.expect("<")?;
            let (kind, kspan) = self.ident()?;
            let space = match kind.as_str() {
                "global" => MemorySpace::Global,
                "ct_local" => {
                    let mut core = None;
                    if self.eat(",") {
                        self.expect("ct_id")?;
                        self.expect("=")?;
                        core = Some(self.integer()?);
                    }
                    MemorySpace::Local { core }
                }
                _ => {
                    return Err(Failure {
                        at: kspan.start as usize,
                        end: kspan.end as usize,
                        message: format!(
                            "unknown memory space '{kind}' (expected global or ct_local)"
                        ),
                    })
                }
            };
            if matches!(space, MemorySpace::Global) && self.eat(",") {
                return self.fail("'ct_id' is only allowed with 'ct_local'");
            }
            self.expect(">")?;
            Ok(space)
        } else if self.eat("#ktdp.spyre_memory_space") {
            self.expect("<")?;
            let (kind, kspan) = self.ident()?;
            let space = match kind.as_str() {
                "HBM" => MemorySpace::Global,
                "LX" => {
                    let mut core = None;
                    if self.eat(",") {
                        self.expect("core")?;
                        self.expect("=")?;
                        core = Some(self.integer()?);
                    }
                    MemorySpace::Local { core }
                }
                _ => {
                    return Err(Failure {
                        at: kspan.start as usize,
                        end: kspan.end as usize,
                        message: format!("unknown memory space '{kind}' (expected HBM or LX)"),
                    })
                }
            };
            if matches!(space, MemorySpace::Global) && self.eat(",") {
                return self.fail("'core' is only allowed with 'LX'");
            }
            self.expect(">")?;
            Ok(space)
        } else {
            self.fail_at(
                start,
                format!(
                    "expected '#ktdp.memory_space<...>' or '#ktdp.spyre_memory_space<...>', found {}",
                    self.found()
                ),
            )
        }
    }

    fn linalg(&mut self, name: &str, results: &[String]) -> PResult<(OpKind, Vec<Type>)> {
        let ins = self.operand_group("ins")?;
        let outs = self.operand_group("outs")?;
        let mut attr_list = Vec::new();
        if name == "linalg.transpose" {
            self.expect("permutation")?;
            self.expect("=")?;
            attr_list = self.comma_list("[", "]", |p| p.usize_lit())?;
        } else if name == "linalg.broadcast" {
            self.expect("dimensions")?;
            self.expect("=")?;
            attr_list = self.comma_list("[", "]", |p| p.usize_lit())?;
        }
        let mut result_types = Vec::new();
        if self.eat("->") {
            self.skip_ws();
            if self.rest().starts_with('(') {
                result_types = self.comma_list("(", ")", |p| p.ty())?;
            } else {
                result_types.push(self.ty()?);
            }
        } else if !results.is_empty() {
            // transpose and broadcast print their result type implicitly: the init's type.
            if let Some((_, t)) = outs.first() {
                result_types.push(t.clone());
            }
        }
        let arity = |want_in: usize, p: &Self| -> PResult<()> {
            if ins.len() != want_in || outs.len() != 1 {
                return p.fail(format!(
                    "'{name}' takes {want_in} input(s) and 1 init, found {} and {}",
                    ins.len(),
                    outs.len()
                ));
            }
            Ok(())
        };
        let kind = match name {
            "linalg.fill" => {
                arity(1, self)?;
                OpKind::Fill {
                    value: ins[0].0.clone(),
                    value_type: ins[0].1.clone(),
                    init: outs[0].0.clone(),
                    init_type: outs[0].1.clone(),
                }
            }
            "linalg.matmul" => {
                arity(2, self)?;
                OpKind::Matmul {
                    lhs: ins[0].0.clone(),
                    rhs: ins[1].0.clone(),
                    init: outs[0].0.clone(),
                    input_types: vec![ins[0].1.clone(), ins[1].1.clone()],
                    init_type: outs[0].1.clone(),
                }
            }
            "linalg.transpose" => {
                arity(1, self)?;
                OpKind::Transpose {
                    input: ins[0].0.clone(),
                    input_type: ins[0].1.clone(),
                    init: outs[0].0.clone(),
                    init_type: outs[0].1.clone(),
                    permutation: attr_list,
                }
            }
            _ => {
                arity(1, self)?;
                OpKind::Broadcast {
                    input: ins[0].0.clone(),
                    input_type: ins[0].1.clone(),
                    init: outs[0].0.clone(),
                    init_type: outs[0].1.clone(),
                    dimensions: attr_list,
                }
            }
        };
        Ok((kind, result_types))
    }

    /// `ins(%a, %b : T1, T2)`.
    fn operand_group(&mut self, keyword: &str) -> PResult<Vec<(Value, Type)>> {
        self.expect(keyword)?;
        self.expect("(")?;
        let mut values = Vec::new();
        loop {
            values.push(self.value()?);
            if !self.eat(",") {
                break;
            }
        }
        self.expect(":")?;
        let mut types = Vec::new();
        loop {
            types.push(self.ty()?);
            if !self.eat(",") {
                break;
            }
        }
        self.expect(")")?;
        if values.len() != types.len() {
            return self.fail(format!(
                "'{keyword}' lists {} value(s) but {} type(s)",
                values.len(),
                types.len()
            ));
        }
        Ok(values.into_iter().zip(types).collect())
    }

    fn scf_for(&mut self) -> PResult<(OpKind, Vec<Type>)> {
        let (induction, _) = self.sigil_name('%')?;
        self.expect("=")?;
        let lower = self.value()?;
        self.expect("to")?;
        let upper = self.value()?;
        self.expect("step")?;
        let step = self.value()?;
        let mut iter_args = Vec::new();
        let mut types = Vec::new();
        if self.eat("iter_args") {
            iter_args = self.comma_list("(", ")", |p| {
                let (n, _) = p.sigil_name('%')?;
                p.expect("=")?;
                let v = p.value()?;
                Ok((n, v))
            })?;
            self.expect("->")?;
            self.skip_ws();
            if self.rest().starts_with('(') {
                types = self.comma_list("(", ")", |p| p.ty())?;
            } else {
                types.push(self.ty()?);
            }
            if types.len() != iter_args.len() {
                return self.fail(format!(
                    "'scf.for' has {} iter_args but {} result type(s)",
                    iter_args.len(),
                    types.len()
                ));
            }
        }
        // `: i32` for integer-typed loops is accepted and ignored (the loop runs on index).
        if self.eat(":") {
            self.ty()?;
        }
        let mut args = vec![(induction.clone(), Type::index())];
        for ((name, _), t) in iter_args.iter().zip(&types) {
            args.push((name.clone(), t.clone()));
        }
        let body = self.region(args)?;
        Ok((
            OpKind::For {
                induction,
                lower,
                upper,
                step,
                iter_args,
                body,
            },
            types,
        ))
    }

    // ---- types -------------------------------------------------------------------------

    fn ty(&mut self) -> PResult<Type> {
        self.enter()?;
        let t = self.ty_inner();
        self.leave();
        t
    }

    fn ty_inner(&mut self) -> PResult<Type> {
        self.skip_ws();
        let start = self.pos;
        if self.eat("tensor") {
            self.expect("<")?;
            let (shape, elem) = self.shape_and_elem()?;
            // An encoding attribute is not used by this subset.
            self.expect(">")?;
            return Ok(Type::Tensor { shape, elem });
        }
        if self.eat("memref") {
            self.expect("<")?;
            let (shape, elem) = self.shape_and_elem()?;
            let mut memory_space = None;
            if self.eat(",") {
                memory_space = Some(self.memory_space()?);
            }
            self.expect(">")?;
            return Ok(Type::MemRef {
                shape,
                elem,
                memory_space,
            });
        }
        if self.eat("!ktdp.tile_future")
            || self.rest().starts_with("<(")
            || self.future_without_prefix()
        {
            return self.tile_future_type();
        }
        if self.eat("!ktdp.runtime_arg") {
            return self.runtime_arg_type();
        }
        if self.eat("!ktdp.access_tile") || self.rest().starts_with('<') {
            self.expect("<")?;
            let (shape, elem) = self.shape_and_elem()?;
            if elem != ScalarType::Index {
                return self.fail_at(
                    start,
                    format!(
                        "access tile element type must be 'index', found '{}'",
                        elem.name()
                    ),
                );
            }
            self.expect(">")?;
            return Ok(Type::AccessTile { shape });
        }
        if self.rest().starts_with('!') {
            let (name, span) = self.sigil_name('!')?;
            if let Some((_, t)) = self.type_aliases.iter().find(|(n, _)| *n == name) {
                return Ok(t.clone());
            }
            return Err(Failure {
                at: span.start as usize,
                end: span.end as usize,
                message: if name.starts_with("ktdp.") {
                    format!("unknown ktdp type '!{name}' (expected access_tile, tile_future or runtime_arg)")
                } else {
                    format!("undefined type alias '!{name}'")
                },
            });
        }
        let (name, span) = self.ident()?;
        match ScalarType::parse(&name) {
            Some(s) => Ok(Type::Scalar(s)),
            None => Err(Failure {
                at: span.start as usize,
                end: span.end as usize,
                message: format!("unknown type '{name}'"),
            }),
        }
    }

    /// `4x?x8xf16` inside `<...>`.
    fn shape_and_elem(&mut self) -> PResult<(Vec<Dim>, ScalarType)> {
        self.skip_ws();
        let mut shape = Vec::new();
        loop {
            let r = self.rest().as_bytes();
            if r.first() == Some(&b'?') && r.get(1) == Some(&b'x') {
                shape.push(Dim::Dynamic);
                self.pos += 2;
                continue;
            }
            let digits = r.iter().take_while(|c| c.is_ascii_digit()).count();
            if digits > 0 && r.get(digits) == Some(&b'x') {
                let text = &self.src[self.pos..self.pos + digits];
                let n = text
                    .parse::<usize>()
                    .or_else(|_| self.fail(format!("dimension '{text}' is too large")))?;
                shape.push(Dim::Static(n));
                self.pos += digits + 1;
                continue;
            }
            break;
        }
        let (name, span) = self.ident()?;
        match ScalarType::parse(&name) {
            Some(s) => Ok((shape, s)),
            None => Err(Failure {
                at: span.start as usize,
                end: span.end as usize,
                message: format!("unknown element type '{name}'"),
            }),
        }
    }

    // ---- affine structures -------------------------------------------------------------

    fn dim_list(&mut self, open: &str, close: &str) -> PResult<Vec<String>> {
        self.comma_list(open, close, |p| Ok(p.ident()?.0))
    }

    fn affine_set(&mut self) -> PResult<AffineSet> {
        self.expect("affine_set")?;
        self.expect("<")?;
        let dims = self.dim_list("(", ")")?;
        let syms = if self.rest().trim_start().starts_with('[') {
            self.dim_list("[", "]")?
        } else {
            Vec::new()
        };
        self.expect(":")?;
        let constraints = self.comma_list("(", ")", |p| p.constraint(&dims, &syms))?;
        self.expect(">")?;
        Ok(AffineSet {
            dims: dims.len(),
            syms: syms.len(),
            constraints,
        })
    }

    fn affine_map(&mut self) -> PResult<AffineMap> {
        self.expect("affine_map")?;
        self.expect("<")?;
        let dims = self.dim_list("(", ")")?;
        let syms = if self.rest().trim_start().starts_with('[') {
            self.dim_list("[", "]")?
        } else {
            Vec::new()
        };
        self.expect("->")?;
        let mut no_leaf = |_: &mut Parser| -> PResult<Option<AffineExpr>> { Ok(None) };
        let results = self.comma_list("(", ")", |p| p.affine_expr(&mut no_leaf, &dims, &syms))?;
        self.expect(">")?;
        Ok(AffineMap {
            dims: dims.len(),
            syms: syms.len(),
            results,
        })
    }

    fn constraint(&mut self, dims: &[String], syms: &[String]) -> PResult<Constraint> {
        let mut no_leaf = |_: &mut Parser| -> PResult<Option<AffineExpr>> { Ok(None) };
        let lhs = self.affine_expr(&mut no_leaf, dims, syms)?;
        let (equality, flip) = if self.eat(">=") {
            (false, false)
        } else if self.eat("<=") {
            (false, true)
        } else if self.eat("==") {
            (true, false)
        } else {
            return self.fail(format!(
                "expected '>=', '<=' or '==' in a constraint, found {}",
                self.found()
            ));
        };
        let rhs = self.affine_expr(&mut no_leaf, dims, syms)?;
        let expr = if flip {
            simplify_add(rhs, negate(lhs))
        } else {
            simplify_add(lhs, negate(rhs))
        };
        Ok(Constraint { expr, equality })
    }

    /// Affine expression with `+`, `-`, `*`, `floordiv`, `ceildiv`, `mod`. `leaf` lets
    /// subscripts put SSA values where dimension names would be.
    fn affine_expr(
        &mut self,
        leaf: &mut dyn FnMut(&mut Parser) -> PResult<Option<AffineExpr>>,
        dims: &[String],
        syms: &[String],
    ) -> PResult<AffineExpr> {
        self.enter()?;
        let mut acc = self.affine_term(leaf, dims, syms)?;
        loop {
            if self.eat("+") {
                let t = self.affine_term(leaf, dims, syms)?;
                acc = AffineExpr::Add(Box::new(acc), Box::new(t));
            } else if self.peek_minus_operator() {
                self.pos += 1;
                let t = self.affine_term(leaf, dims, syms)?;
                acc = AffineExpr::Add(Box::new(acc), Box::new(negate(t)));
            } else {
                break;
            }
        }
        self.leave();
        Ok(acc)
    }

    /// `%` used as an operator (followed by a space), not as an SSA value sigil.
    fn percent_operator(&mut self) -> bool {
        self.skip_ws();
        let r = self.rest().as_bytes();
        r.first() == Some(&b'%') && !r.get(1).is_some_and(|c| is_ident_char(*c))
    }

    fn peek_minus_operator(&mut self) -> bool {
        self.skip_ws();
        self.rest().starts_with('-') && !self.rest().starts_with("->")
    }

    fn affine_term(
        &mut self,
        leaf: &mut dyn FnMut(&mut Parser) -> PResult<Option<AffineExpr>>,
        dims: &[String],
        syms: &[String],
    ) -> PResult<AffineExpr> {
        let mut acc = self.affine_factor(leaf, dims, syms)?;
        loop {
            let op_start = self.pos;
            if self.eat("*") {
                let f = self.affine_factor(leaf, dims, syms)?;
                acc = AffineExpr::Mul(Box::new(acc), Box::new(f));
            } else if self.eat("floordiv") {
                let f = self.divisor(leaf, dims, syms, "floordiv")?;
                acc = AffineExpr::FloorDiv(Box::new(acc), Box::new(f));
            } else if self.eat("ceildiv") {
                let f = self.divisor(leaf, dims, syms, "ceildiv")?;
                acc = AffineExpr::CeilDiv(Box::new(acc), Box::new(f));
            } else if self.eat("mod") {
                let f = self.divisor(leaf, dims, syms, "mod")?;
                acc = AffineExpr::Mod(Box::new(acc), Box::new(f));
            } else if self.eat("/") {
                self.skip_ws();
                self.diags.warning(
                    Span::new(op_start, op_start + 1),
                    "'/' in an affine expression is read as 'floordiv'; MLIR writes 'floordiv' (known gap: spec examples use '/' and '%')",
                );
                let f = self.divisor(leaf, dims, syms, "floordiv")?;
                acc = AffineExpr::FloorDiv(Box::new(acc), Box::new(f));
            } else if self.percent_operator() {
                let at = self.pos;
                self.pos += 1;
                self.diags.warning(
                    Span::new(at, at + 1),
                    "'%' in an affine expression is read as 'mod'; MLIR writes 'mod' (known gap: spec examples use '/' and '%')",
                );
                let f = self.divisor(leaf, dims, syms, "mod")?;
                acc = AffineExpr::Mod(Box::new(acc), Box::new(f));
            } else {
                break;
            }
        }
        Ok(acc)
    }

    /// The right operand of `floordiv`, `ceildiv` or `mod`. A constant zero there is
    /// reported (every point would be undefined) and parsing goes on.
    fn divisor(
        &mut self,
        leaf: &mut dyn FnMut(&mut Parser) -> PResult<Option<AffineExpr>>,
        dims: &[String],
        syms: &[String],
        op: &str,
    ) -> PResult<AffineExpr> {
        self.skip_ws();
        let start = self.pos;
        let f = self.affine_factor(leaf, dims, syms)?;
        if f.arity() == (0, 0) && f.eval(&[], &[]) == Some(0) {
            self.diags.error(
                Span::new(start, self.pos.max(start + 1)),
                format!("'{op}' by zero in an affine expression"),
            );
        }
        Ok(f)
    }

    fn affine_factor(
        &mut self,
        leaf: &mut dyn FnMut(&mut Parser) -> PResult<Option<AffineExpr>>,
        dims: &[String],
        syms: &[String],
    ) -> PResult<AffineExpr> {
        self.enter()?;
        self.skip_ws();
        let r = if let Some(e) = leaf(self)? {
            Ok(e)
        } else if self.eat("(") {
            let e = self.affine_expr(leaf, dims, syms)?;
            self.expect(")")?;
            Ok(e)
        } else if self.rest().starts_with('-') {
            self.pos += 1;
            let f = self.affine_factor(leaf, dims, syms)?;
            Ok(negate(f))
        } else if self.peek().is_some_and(|c| c.is_ascii_digit()) {
            Ok(AffineExpr::Const(self.integer()?))
        } else {
            let at = self.pos;
            match self.ident() {
                Ok((name, _)) => {
                    if let Some(i) = dims.iter().position(|d| *d == name) {
                        Ok(AffineExpr::Dim(i))
                    } else if let Some(i) = syms.iter().position(|s| *s == name) {
                        Ok(AffineExpr::Sym(i))
                    } else {
                        self.fail_at(
                            at,
                            format!(
                                "'{name}' is not a dimension or symbol of this affine structure"
                            ),
                        )
                    }
                }
                Err(_) => self.fail(format!(
                    "expected an affine expression, found {}",
                    self.found()
                )),
            }
        };
        self.leave();
        r
    }
}

/// `a + b` with constants folded, so `-d0 + 95` and `95 - d0` print the same way.
fn simplify_add(a: AffineExpr, b: AffineExpr) -> AffineExpr {
    match (&a, &b) {
        (AffineExpr::Const(x), AffineExpr::Const(y)) => AffineExpr::Const(x.saturating_add(*y)),
        (_, AffineExpr::Const(0)) => a,
        (AffineExpr::Const(0), _) => b,
        _ => AffineExpr::Add(Box::new(a), Box::new(b)),
    }
}

/// `-e`, folding constants.
fn negate(e: AffineExpr) -> AffineExpr {
    match e {
        AffineExpr::Const(c) => AffineExpr::Const(c.checked_neg().unwrap_or(i64::MAX)),
        other => AffineExpr::Mul(Box::new(AffineExpr::Const(-1)), Box::new(other)),
    }
}
