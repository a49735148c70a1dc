//! The `spyre-graph` JSON format: loader and writer. See `docs/graph-format.md`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::dtype::DType;
use crate::error::{GraphError, Location};
use crate::ir::{escape_pointer, AttrValue, Graph, InitSpec, Initializer, Node, Site, ValueInfo};
use crate::spec::{AttrKind, OpKind};
use crate::tensor::TensorType;

/// Value of the `"format"` field.
pub const FORMAT: &str = "spyre-graph";
/// The format version this crate reads and writes.
pub const VERSION: u64 = 1;

type DResult<T> = Result<T, (String, String)>;

fn fail<T>(ptr: &str, msg: impl Into<String>) -> DResult<T> {
    Err((ptr.to_string(), msg.into()))
}

/// Parses and validates a graph in the JSON format: syntax, fields and their types,
/// dtypes, known ops, arity, attributes, names defined before use and defined once,
/// and shape/dtype inference. Every error carries a line and column.
pub fn load_json(text: &str) -> Result<Graph, GraphError> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        let full = e.to_string();
        let msg = match full.rfind(" at line ") {
            Some(i) => full.get(..i).unwrap_or(&full).to_string(),
            None => full,
        };
        GraphError {
            message: format!("invalid JSON: {msg}"),
            location: Location::Json {
                line: e.line(),
                column: e.column(),
                pointer: String::new(),
            },
        }
    })?;
    let graph = decode(&v).map_err(|(ptr, msg)| at(text, &ptr, msg))?;
    graph.check().map_err(|issue| {
        let msg = match &issue.site {
            Site::Node(i, _) => match graph.nodes.get(*i) {
                Some(n) if !issue.message.contains(&format!("node '{}'", n.name)) => {
                    format!("node '{}' ({}): {}", n.name, n.op, issue.message)
                }
                _ => issue.message.clone(),
            },
            _ => issue.message.clone(),
        };
        at(text, &issue.site.pointer(), msg)
    })?;
    Ok(graph)
}

fn at(text: &str, pointer: &str, message: String) -> GraphError {
    let (line, column) = locate(text, pointer);
    GraphError {
        message,
        location: Location::Json {
            line,
            column,
            pointer: pointer.to_string(),
        },
    }
}

fn object<'a>(
    v: &'a Value,
    ptr: &str,
    what: &str,
    allowed: &[&str],
) -> DResult<&'a Map<String, Value>> {
    let Some(m) = v.as_object() else {
        return fail(ptr, format!("{what} must be an object, got {}", kind(v)));
    };
    for k in m.keys() {
        if !allowed.contains(&k.as_str()) {
            return fail(
                &format!("{ptr}/{}", escape_pointer(k)),
                format!(
                    "unknown field '{k}' in {what} (expected one of: {})",
                    allowed.join(", ")
                ),
            );
        }
    }
    Ok(m)
}

fn field<'a>(m: &'a Map<String, Value>, key: &str, ptr: &str, what: &str) -> DResult<&'a Value> {
    m.get(key)
        .ok_or_else(|| (ptr.to_string(), format!("{what} is missing field '{key}'")))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn string(v: &Value, ptr: &str, what: &str) -> DResult<String> {
    v.as_str().map(str::to_string).ok_or_else(|| {
        (
            ptr.to_string(),
            format!("{what} must be a string, got {}", kind(v)),
        )
    })
}

fn array<'a>(v: &'a Value, ptr: &str, what: &str) -> DResult<&'a Vec<Value>> {
    v.as_array().ok_or_else(|| {
        (
            ptr.to_string(),
            format!("{what} must be an array, got {}", kind(v)),
        )
    })
}

fn strings(v: &Value, ptr: &str, what: &str) -> DResult<Vec<String>> {
    array(v, ptr, what)?
        .iter()
        .enumerate()
        .map(|(i, s)| string(s, &format!("{ptr}/{i}"), &format!("each entry of {what}")))
        .collect()
}

fn u64_of(v: &Value, ptr: &str, what: &str) -> DResult<u64> {
    v.as_u64().ok_or_else(|| {
        (
            ptr.to_string(),
            format!("{what} must be a non-negative integer, got {v}"),
        )
    })
}

/// A float: a JSON number, or one of the strings "nan", "inf", "-inf".
fn f32_of(v: &Value, ptr: &str, what: &str) -> DResult<f32> {
    if let Some(x) = v.as_f64() {
        return Ok(x as f32);
    }
    match v.as_str() {
        Some("nan") => Ok(f32::NAN),
        Some("inf") => Ok(f32::INFINITY),
        Some("-inf") => Ok(f32::NEG_INFINITY),
        _ => fail(ptr, format!("{what} must be a number, got {v}")),
    }
}

fn tensor_type(m: &Map<String, Value>, ptr: &str, what: &str) -> DResult<TensorType> {
    let dptr = format!("{ptr}/dtype");
    let d = string(field(m, "dtype", ptr, what)?, &dptr, "'dtype'")?;
    let dtype = DType::parse(&d).ok_or_else(|| {
        (
            dptr.clone(),
            format!(
                "unknown dtype \"{d}\" (expected one of: {})",
                DType::ALL.map(|d| d.name()).join(", ")
            ),
        )
    })?;
    let sptr = format!("{ptr}/shape");
    let shape = array(field(m, "shape", ptr, what)?, &sptr, "'shape'")?
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let p = format!("{sptr}/{i}");
            let n = u64_of(d, &p, "a dimension")?;
            usize::try_from(n).map_err(|_| (p, format!("dimension {n} is too large")))
        })
        .collect::<DResult<Vec<usize>>>()?;
    Ok(TensorType { dtype, shape })
}

fn decode(v: &Value) -> DResult<Graph> {
    let top = object(
        v,
        "",
        "the graph",
        &[
            "format",
            "version",
            "name",
            "description",
            "inputs",
            "initializers",
            "nodes",
            "outputs",
        ],
    )?;
    let format = string(
        field(top, "format", "", "the graph")?,
        "/format",
        "'format'",
    )?;
    if format != FORMAT {
        return fail(
            "/format",
            format!("'format' must be \"{FORMAT}\", got \"{format}\""),
        );
    }
    let version = u64_of(
        field(top, "version", "", "the graph")?,
        "/version",
        "'version'",
    )?;
    if version != VERSION {
        return fail(
            "/version",
            format!("unsupported version {version} (this build reads version {VERSION})"),
        );
    }
    let name = string(field(top, "name", "", "the graph")?, "/name", "'name'")?;
    let description = match top.get("description") {
        Some(d) => string(d, "/description", "'description'")?,
        None => String::new(),
    };
    let empty = Value::Array(Vec::new());

    let mut inputs = Vec::new();
    let ins = array(top.get("inputs").unwrap_or(&empty), "/inputs", "'inputs'")?;
    for (i, iv) in ins.iter().enumerate() {
        let ptr = format!("/inputs/{i}");
        let what = format!("input {i}");
        let m = object(iv, &ptr, &what, &["name", "dtype", "shape"])?;
        let name = string(
            field(m, "name", &ptr, &what)?,
            &format!("{ptr}/name"),
            "'name'",
        )?;
        let ty = tensor_type(m, &ptr, &what)?;
        inputs.push(ValueInfo { name, ty });
    }

    let mut initializers = Vec::new();
    let inits = array(
        top.get("initializers").unwrap_or(&empty),
        "/initializers",
        "'initializers'",
    )?;
    for (i, iv) in inits.iter().enumerate() {
        let ptr = format!("/initializers/{i}");
        let what = format!("initializer {i}");
        let m = object(iv, &ptr, &what, &["name", "dtype", "shape", "data", "init"])?;
        let name = string(
            field(m, "name", &ptr, &what)?,
            &format!("{ptr}/name"),
            "'name'",
        )?;
        let ty = tensor_type(m, &ptr, &what)?;
        let init = match (m.get("data"), m.get("init")) {
            (Some(_), Some(_)) => {
                return fail(
                    &ptr,
                    format!("initializer '{name}' has both 'data' and 'init'; give one"),
                )
            }
            (None, None) => {
                return fail(&ptr, format!("initializer '{name}' needs 'data' or 'init'"))
            }
            (Some(d), None) => {
                let dptr = format!("{ptr}/data");
                InitSpec::Data(
                    array(d, &dptr, "'data'")?
                        .iter()
                        .enumerate()
                        .map(|(k, x)| f32_of(x, &format!("{dptr}/{k}"), "each value of 'data'"))
                        .collect::<DResult<Vec<f32>>>()?,
                )
            }
            (None, Some(s)) => init_spec(s, &format!("{ptr}/init"))?,
        };
        initializers.push(Initializer { name, ty, init });
    }

    let mut nodes = Vec::new();
    let nv = array(top.get("nodes").unwrap_or(&empty), "/nodes", "'nodes'")?;
    for (i, n) in nv.iter().enumerate() {
        let ptr = format!("/nodes/{i}");
        let what = format!("node {i}");
        let m = object(
            n,
            &ptr,
            &what,
            &["name", "op", "inputs", "outputs", "attrs"],
        )?;
        let name = string(
            field(m, "name", &ptr, &what)?,
            &format!("{ptr}/name"),
            "'name'",
        )?;
        let op = string(field(m, "op", &ptr, &what)?, &format!("{ptr}/op"), "'op'")?;
        let inputs = strings(
            field(m, "inputs", &ptr, &what)?,
            &format!("{ptr}/inputs"),
            "'inputs'",
        )?;
        let outputs = strings(
            field(m, "outputs", &ptr, &what)?,
            &format!("{ptr}/outputs"),
            "'outputs'",
        )?;
        let mut attrs = BTreeMap::new();
        if let Some(a) = m.get("attrs") {
            let aptr = format!("{ptr}/attrs");
            let Some(am) = a.as_object() else {
                return fail(&aptr, format!("'attrs' must be an object, got {}", kind(a)));
            };
            for (k, v) in am {
                let p = format!("{aptr}/{}", escape_pointer(k));
                let float_attr = OpKind::from_name(&op)
                    .and_then(|o| o.spec().attr(k))
                    .is_some_and(|a| a.kind == AttrKind::Float);
                attrs.insert(k.clone(), attr_value(v, &p, float_attr)?);
            }
        }
        nodes.push(Node {
            name,
            op,
            inputs,
            outputs,
            attrs,
        });
    }

    let outputs = strings(
        field(top, "outputs", "", "the graph")?,
        "/outputs",
        "'outputs'",
    )?;
    Ok(Graph {
        name,
        description,
        inputs,
        outputs,
        initializers,
        nodes,
    })
}

fn init_spec(v: &Value, ptr: &str) -> DResult<InitSpec> {
    match v {
        Value::String(s) if s == "zeros" => Ok(InitSpec::Zeros),
        Value::String(s) if s == "ones" => Ok(InitSpec::Ones),
        Value::Object(m) if m.len() == 1 => {
            let (k, body) = m.iter().next().ok_or_else(|| (ptr.to_string(), "empty".to_string()))?;
            let p = format!("{ptr}/{}", escape_pointer(k));
            match k.as_str() {
                "constant" => Ok(InitSpec::Constant(f32_of(body, &p, "'constant'")?)),
                "uniform" => {
                    let b = object(body, &p, "'uniform'", &["seed", "low", "high"])?;
                    Ok(InitSpec::Uniform {
                        seed: u64_of(field(b, "seed", &p, "'uniform'")?, &format!("{p}/seed"), "'seed'")?,
                        low: f32_of(field(b, "low", &p, "'uniform'")?, &format!("{p}/low"), "'low'")?,
                        high: f32_of(field(b, "high", &p, "'uniform'")?, &format!("{p}/high"), "'high'")?,
                    })
                }
                "normal" => {
                    let b = object(body, &p, "'normal'", &["seed", "mean", "std"])?;
                    Ok(InitSpec::Normal {
                        seed: u64_of(field(b, "seed", &p, "'normal'")?, &format!("{p}/seed"), "'seed'")?,
                        mean: f32_of(field(b, "mean", &p, "'normal'")?, &format!("{p}/mean"), "'mean'")?,
                        std: f32_of(field(b, "std", &p, "'normal'")?, &format!("{p}/std"), "'std'")?,
                    })
                }
                _ => fail(&p, format!("unknown init '{k}' (expected uniform, normal or constant)")),
            }
        }
        _ => fail(
            ptr,
            format!(
                "'init' must be \"zeros\", \"ones\", {{\"constant\": v}}, {{\"uniform\": {{...}}}} or {{\"normal\": {{...}}}}, got {v}"
            ),
        ),
    }
}

fn attr_value(v: &Value, ptr: &str, float_attr: bool) -> DResult<AttrValue> {
    let special = |s: &str| matches!(s, "nan" | "inf" | "-inf");
    match v {
        Value::Number(n) => match n.as_i64() {
            Some(i) => Ok(AttrValue::Int(i)),
            None => Ok(AttrValue::Float(f32_of(v, ptr, "an attribute")?)),
        },
        Value::String(s) if float_attr && special(s) => Ok(AttrValue::Float(f32_of(v, ptr, "")?)),
        Value::String(s) => Ok(AttrValue::String(s.clone())),
        Value::Array(items) => {
            if items.iter().all(|x| x.as_i64().is_some()) {
                Ok(AttrValue::Ints(
                    items.iter().filter_map(Value::as_i64).collect(),
                ))
            } else {
                items
                    .iter()
                    .enumerate()
                    .map(|(i, x)| {
                        f32_of(x, &format!("{ptr}/{i}"), "each entry of a list attribute")
                    })
                    .collect::<DResult<Vec<f32>>>()
                    .map(AttrValue::Floats)
            }
        }
        _ => fail(
            ptr,
            format!(
                "an attribute must be a number, a string or a list of numbers, got {}",
                kind(v)
            ),
        ),
    }
}

// ---------------------------------------------------------------------------------------
// Writer

fn jstr(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

fn jf32(x: f32) -> String {
    if x.is_nan() {
        "\"nan\"".into()
    } else if x == f32::INFINITY {
        "\"inf\"".into()
    } else if x == f32::NEG_INFINITY {
        "\"-inf\"".into()
    } else {
        serde_json::to_string(&x).unwrap_or_else(|_| "0".to_string())
    }
}

fn list<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    let parts: Vec<String> = items.iter().map(f).collect();
    format!("[{}]", parts.join(", "))
}

fn type_fields(ty: &TensorType) -> String {
    format!(
        "\"dtype\": {}, \"shape\": {}",
        jstr(ty.dtype.name()),
        list(&ty.shape, |d| d.to_string())
    )
}

fn attr_json(v: &AttrValue) -> String {
    match v {
        AttrValue::Int(i) => i.to_string(),
        AttrValue::Float(x) => jf32(*x),
        AttrValue::Ints(v) => list(v, |i| i.to_string()),
        AttrValue::Floats(v) => list(v, |x| jf32(*x)),
        AttrValue::String(s) => jstr(s),
    }
}

fn block(out: &mut String, key: &str, rows: Vec<String>, last: bool) {
    let comma = if last { "" } else { "," };
    if rows.is_empty() {
        let _ = writeln!(out, "  {}: []{comma}", jstr(key));
    } else {
        let _ = writeln!(
            out,
            "  {}: [\n    {}\n  ]{comma}",
            jstr(key),
            rows.join(",\n    ")
        );
    }
}

/// Writes a graph in the JSON format, one input, initializer or node per line.
/// `load_json(&to_json(g))` gives back `g` (non-finite floats are written as the strings
/// "nan", "inf", "-inf"; an empty `Floats` attribute reads back as an empty `Ints`).
pub fn to_json(graph: &Graph) -> String {
    let mut out = String::new();
    out.push_str("{\n");
    let _ = writeln!(out, "  \"format\": {},", jstr(FORMAT));
    let _ = writeln!(out, "  \"version\": {VERSION},");
    let _ = writeln!(out, "  \"name\": {},", jstr(&graph.name));
    let _ = writeln!(out, "  \"description\": {},", jstr(&graph.description));
    let inputs = graph
        .inputs
        .iter()
        .map(|v| format!("{{ \"name\": {}, {} }}", jstr(&v.name), type_fields(&v.ty)))
        .collect();
    block(&mut out, "inputs", inputs, false);
    let inits = graph
        .initializers
        .iter()
        .map(|i| {
            let body = match &i.init {
                InitSpec::Data(d) => format!("\"data\": {}", list(d, |x| jf32(*x))),
                InitSpec::CausalMask { .. } => {
                    let d = i
                        .init
                        .values(i.ty.numel(), i.ty.shape.last().copied().unwrap_or(1))
                        .unwrap_or_default();
                    format!("\"data\": {}", list(&d, |x| jf32(*x)))
                }
                InitSpec::Uniform { seed, low, high } => format!(
                    "\"init\": {{ \"uniform\": {{ \"seed\": {seed}, \"low\": {}, \"high\": {} }} }}",
                    jf32(*low),
                    jf32(*high)
                ),
                InitSpec::Normal { seed, mean, std } => format!(
                    "\"init\": {{ \"normal\": {{ \"seed\": {seed}, \"mean\": {}, \"std\": {} }} }}",
                    jf32(*mean),
                    jf32(*std)
                ),
                InitSpec::Zeros => "\"init\": \"zeros\"".to_string(),
                InitSpec::Ones => "\"init\": \"ones\"".to_string(),
                InitSpec::Constant(c) => format!("\"init\": {{ \"constant\": {} }}", jf32(*c)),
                // JSON graphs hold their data: read it; data that cannot be read is written
                // as a reference the JSON loader refuses, naming the file.
                InitSpec::External(x) => match x.values(&i.ty) {
                    Ok(d) => format!("\"data\": {}", list(&d, |x| jf32(*x))),
                    Err(_) => format!("\"init\": {{ \"external\": {} }}", jstr(&x.location)),
                },
            };
            format!("{{ \"name\": {}, {}, {body} }}", jstr(&i.name), type_fields(&i.ty))
        })
        .collect();
    block(&mut out, "initializers", inits, false);
    let nodes = graph
        .nodes
        .iter()
        .map(|n| {
            let mut s = format!(
                "{{ \"name\": {}, \"op\": {}, \"inputs\": {}, \"outputs\": {}",
                jstr(&n.name),
                jstr(&n.op),
                list(&n.inputs, |s| jstr(s)),
                list(&n.outputs, |s| jstr(s))
            );
            if !n.attrs.is_empty() {
                let parts: Vec<String> = n
                    .attrs
                    .iter()
                    .map(|(k, v)| format!("{}: {}", jstr(k), attr_json(v)))
                    .collect();
                let _ = write!(s, ", \"attrs\": {{ {} }}", parts.join(", "));
            }
            s.push_str(" }");
            s
        })
        .collect();
    block(&mut out, "nodes", nodes, false);
    let _ = writeln!(out, "  \"outputs\": {}", list(&graph.outputs, |s| jstr(s)));
    out.push_str("}\n");
    out
}

// ---------------------------------------------------------------------------------------
// Locating a JSON pointer in the text

/// 1-based (line, column) of the value at `pointer` in `text` (which must be valid JSON);
/// if the pointer cannot be followed to the end, the deepest value reached.
pub(crate) fn locate(text: &str, pointer: &str) -> (usize, usize) {
    let offset = find_offset(text.as_bytes(), pointer);
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

fn find_offset(b: &[u8], pointer: &str) -> usize {
    let mut pos = skip_ws(b, 0);
    let tokens = pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"));
    for tok in tokens {
        match b.get(pos) {
            Some(b'{') => {
                let mut p = skip_ws(b, pos + 1);
                let mut found = None;
                while b.get(p) == Some(&b'"') {
                    let key_end = skip_string(b, p);
                    let key: Option<String> = std::str::from_utf8(b.get(p..key_end).unwrap_or(&[]))
                        .ok()
                        .and_then(|s| serde_json::from_str(s).ok());
                    p = skip_ws(b, key_end);
                    if b.get(p) == Some(&b':') {
                        p = skip_ws(b, p + 1);
                    }
                    if key.as_deref() == Some(tok.as_str()) {
                        found = Some(p);
                        break;
                    }
                    p = skip_ws(b, skip_value(b, p));
                    if b.get(p) == Some(&b',') {
                        p = skip_ws(b, p + 1);
                    } else {
                        break;
                    }
                }
                match found {
                    Some(p) => pos = p,
                    None => return pos,
                }
            }
            Some(b'[') => {
                let Ok(index) = tok.parse::<usize>() else {
                    return pos;
                };
                let mut p = skip_ws(b, pos + 1);
                if b.get(p) == Some(&b']') {
                    return pos;
                }
                let mut ok = true;
                for _ in 0..index {
                    p = skip_ws(b, skip_value(b, p));
                    if b.get(p) == Some(&b',') {
                        p = skip_ws(b, p + 1);
                    } else {
                        ok = false;
                        break;
                    }
                }
                if !ok {
                    return pos;
                }
                pos = p;
            }
            _ => return pos,
        }
    }
    pos
}

fn skip_ws(b: &[u8], mut p: usize) -> usize {
    while matches!(b.get(p), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        p += 1;
    }
    p
}

/// `p` is at an opening quote; returns the index just past the closing quote.
fn skip_string(b: &[u8], mut p: usize) -> usize {
    p += 1;
    while let Some(&c) = b.get(p) {
        match c {
            b'\\' => p += 2,
            b'"' => return p + 1,
            _ => p += 1,
        }
    }
    p
}

/// Returns the index just past the value starting at `p` (iterative; no recursion).
fn skip_value(b: &[u8], mut p: usize) -> usize {
    let mut depth = 0usize;
    loop {
        match b.get(p) {
            None => return p,
            Some(b'"') => p = skip_string(b, p),
            Some(b'{' | b'[') => {
                depth += 1;
                p += 1;
            }
            Some(b'}' | b']') => {
                if depth == 0 {
                    return p;
                }
                depth -= 1;
                p += 1;
            }
            Some(b',') if depth == 0 => return p,
            Some(_) => p += 1,
        }
        if depth == 0 && matches!(b.get(p.wrapping_sub(1)), Some(b'}' | b']' | b'"')) {
            return p;
        }
    }
}
