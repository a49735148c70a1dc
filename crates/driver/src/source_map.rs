//! The links between what the page shows, computed once per run: graph node -> device ops
//! -> kernel -> KTIR line range -> events, and each device op's SDSC op and its lines in
//! the SDSC text. The page follows these indices instead of matching names or text.

use crate::EventView;
use ktir::ast::{Module, Op};
use serde::Serialize;
use std::collections::BTreeMap;

/// An inclusive range of 1-based lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LineRange {
    /// First line.
    pub from: u32,
    /// Last line.
    pub to: u32,
}

impl LineRange {
    /// Whether `line` is in the range.
    pub fn contains(&self, line: u32) -> bool {
        self.from <= line && line <= self.to
    }
}

/// A graph node and the device ops the compiler made of it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct NodeLink {
    /// The node's name (as in `graph.nodes`, same order).
    pub name: String,
    /// Indices into [`SourceMap::ops`] (none for nodes canonicalization folded away).
    pub ops: Vec<usize>,
}

/// A device op of the compiled plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct OpLink {
    /// The op's name (`node` or `node/step`), also its SDSC op's name.
    pub name: String,
    /// The SDSC op kind ("batchmatmul", "add", ...).
    pub kind: String,
    /// Index into [`SourceMap::nodes`] of the node it came from.
    pub node: Option<usize>,
    /// Index into [`SourceMap::kernels`] of the kernel that runs it (none when an edited
    /// module dropped it).
    pub kernel: Option<usize>,
    /// Its SDSC op's lines in the SDSC pass text.
    pub sdsc_lines: Option<LineRange>,
}

/// A KTIR function that ran.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct KernelLink {
    /// The function's name (without `@`).
    pub func: String,
    /// Its lines in the module text the run carries (`ktir`).
    pub lines: LineRange,
    /// Index into [`SourceMap::ops`] of the device op it implements (graphs only).
    pub op: Option<usize>,
    /// Indices into `run.events` of the events its operations caused.
    pub events: Vec<usize>,
}

/// Graph node <-> device op <-> kernel <-> KTIR lines <-> events, for one run. KTIR
/// modules have kernels only.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SourceMap {
    /// Graph nodes, in graph order.
    pub nodes: Vec<NodeLink>,
    /// Device ops, in execution order.
    pub ops: Vec<OpLink>,
    /// KTIR functions, in module order.
    pub kernels: Vec<KernelLink>,
}

/// The end of the last operation written in `ops`, nested regions included.
fn last_op_end(ops: &[Op]) -> u32 {
    ops.iter()
        .map(|op| {
            let inner = op
                .kind
                .regions()
                .into_iter()
                .map(|b| last_op_end(&b.ops))
                .max()
                .unwrap_or(0);
            op.span.end.max(inner)
        })
        .max()
        .unwrap_or(0)
}

/// The kernels of `module` (parsed from `text`): each function's lines, from its header to
/// the line before the next function (blank lines and the next function's leading comments
/// left out, never before its last operation), and the events whose KTIR line falls in
/// them.
pub(crate) fn kernel_links(module: &Module, text: &str, events: &[EventView]) -> Vec<KernelLink> {
    let index = sim::LineLookup::new(text);
    let lines: Vec<&str> = text.split('\n').collect();
    let last_line = u32::try_from(lines.len()).unwrap_or(u32::MAX);
    let mut out: Vec<KernelLink> = Vec::with_capacity(module.funcs.len());
    for (i, f) in module.funcs.iter().enumerate() {
        let from = index.line(f.span.start);
        let next = module
            .funcs
            .get(i + 1)
            .map(|g| index.line(g.span.start).saturating_sub(1))
            .unwrap_or(last_line);
        let body_end = index.line(last_op_end(&f.body.ops));
        let mut to = next.max(from);
        while to > from.max(body_end)
            && lines.get(to as usize - 1).is_none_or(|l| {
                let l = l.trim();
                l.is_empty() || l.starts_with("//")
            })
        {
            to -= 1;
        }
        out.push(KernelLink {
            func: f.name.clone(),
            lines: LineRange { from, to },
            op: None,
            events: Vec::new(),
        });
    }
    // The kernels' line ranges are disjoint and in order: find an event's by bisection
    // (a run has far more events than kernels), scanning only if that ever fails.
    for (e_index, e) in events.iter().enumerate() {
        if let Some(k) = kernel_at(&out, e.line) {
            out[k].events.push(e_index);
        }
    }
    out
}

/// The kernel whose lines hold `line`: the first such in `kernels`, found by bisection as
/// their ranges are disjoint and in order (scanning only if that ever fails), so reports
/// over every event stay linear in the events.
pub(crate) fn kernel_at(kernels: &[KernelLink], line: u32) -> Option<usize> {
    let at = kernels.partition_point(|k| k.lines.from <= line);
    match at.checked_sub(1) {
        Some(k) if kernels[k].lines.contains(line) => Some(k),
        _ => kernels.iter().position(|k| k.lines.contains(line)),
    }
}

/// The device ops of a compilation, linked to the kernels that run them (by the lowering's
/// kernel list) and to their SDSC ops' lines; sets each kernel's op.
pub(crate) fn op_links(c: &compiler::Compilation, kernels: &mut [KernelLink]) -> Vec<OpLink> {
    let lowered = compiler::lower_ktir::kernels(c);
    let sdsc = match (&c.sdsc, c.snapshot("sdsc")) {
        (Some(b), Some(snap)) => sdsc_lines(b, &snap.text),
        _ => Vec::new(),
    };
    // First kernel of each name (reversed, so the first insert of a name is the last).
    let kernel_of: BTreeMap<String, usize> = kernels
        .iter()
        .enumerate()
        .rev()
        .map(|(k, x)| (x.func.clone(), k))
        .collect();
    let sdsc_of: BTreeMap<&str, LineRange> = sdsc
        .iter()
        .rev()
        .map(|(name, r)| (name.as_str(), *r))
        .collect();
    c.ops
        .iter()
        .enumerate()
        .map(|(i, op)| {
            // A fused kernel runs several ops; it is linked back to its first.
            let kernel = lowered
                .iter()
                .find(|k| k.ops.contains(&i))
                .and_then(|k| kernel_of.get(k.func.as_str()).copied());
            if let Some(k) = kernel {
                if kernels[k].op.is_none() {
                    kernels[k].op = Some(i);
                }
            }
            OpLink {
                name: op.name.clone(),
                kind: op.kind.name().to_string(),
                node: None,
                kernel,
                sdsc_lines: sdsc_of.get(op.name.as_str()).copied(),
            }
        })
        .collect()
}

/// Links the graph's nodes to the device ops made of them. The compiler names a node's
/// device ops after it (`node`, `node/step`, `node/restickify_i`); node names may contain
/// `/` themselves, so each op goes to the longest node name it extends.
pub(crate) fn node_links(nodes: &[graph::Node], ops: &mut [OpLink]) -> Vec<NodeLink> {
    let mut out: Vec<NodeLink> = nodes
        .iter()
        .map(|n| NodeLink {
            name: n.name.clone(),
            ops: Vec::new(),
        })
        .collect();
    let by_name: BTreeMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(j, n)| (n.name.as_str(), j))
        .collect();
    for (i, op) in ops.iter_mut().enumerate() {
        // The op's own name, then each prefix that ends before a `/`, longest first.
        let name = op.name.as_str();
        let owner = std::iter::once(name)
            .chain(name.rmatch_indices('/').map(|(at, _)| &name[..at]))
            .find_map(|prefix| by_name.get(prefix).copied());
        op.node = owner;
        if let Some(j) = owner {
            out[j].ops.push(i);
        }
    }
    out
}

/// The lines of each SDSC op (its `"name": {...}` entry under `sdscs`) in the bundle's
/// pretty JSON text (the SDSC pass's snapshot), from the entry's name to its closing brace.
/// Found by reading the text's lines: serde_json's pretty printer puts each entry of the
/// top-level `sdscs` list on lines of its own at a fixed indent, and escapes every newline
/// inside strings, so no serialising again. Empty when the text is not laid out that way
/// or its entries do not name the bundle's ops in order.
pub(crate) fn sdsc_lines(bundle: &sdsc::Bundle, text: &str) -> Vec<(String, LineRange)> {
    sdsc_lines_in_text(bundle, text).unwrap_or_default()
}

fn sdsc_lines_in_text(bundle: &sdsc::Bundle, text: &str) -> Option<Vec<(String, LineRange)>> {
    let mut lines = (1u32..).zip(text.lines());
    lines.find(|(_, l)| *l == "  \"sdscs\": [")?;
    let mut out = Vec::with_capacity(bundle.sdscs.len());
    let mut names = bundle.sdscs.iter().map(|n| n.name.as_str());
    loop {
        let (_, open) = lines.next()?;
        match open {
            "    {" => {}
            "  ]" | "  ]," => break,
            _ => return None,
        }
        let name = names.next()?;
        let (from, key) = lines.next()?;
        // The entry's one key, the op's name, as serde_json writes it.
        let quoted = serde_json::to_string(name).ok()?;
        let rest = key.strip_prefix("      ")?.strip_prefix(quoted.as_str())?;
        if !rest.starts_with(": ") {
            return None;
        }
        let (to, _) = lines.find(|(_, l)| *l == "    }" || *l == "    },")?;
        out.push((name.to_string(), LineRange { from, to }));
    }
    names.next().is_none().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::LineRange;
    use crate::{Run, RunOptions, Session};
    use serde::Serialize;
    use serde_json::ser::Formatter;
    use sim::timing::Unit;
    use std::cell::{Cell, RefCell};
    use std::io::{self, Write};
    use std::rc::Rc;

    /// [`sdsc_lines`] found by writing the bundle again with a formatter that notes each
    /// entry's lines: the reference the text-reading version is checked against.
    fn sdsc_lines_by_writing(bundle: &sdsc::Bundle, text: &str) -> Vec<(String, LineRange)> {
        let newlines = Rc::new(Cell::new(0u32));
        let ranges = Rc::new(RefCell::new(Vec::new()));
        let tracker = SdscTracker {
            pretty: serde_json::ser::PrettyFormatter::new(),
            newlines: newlines.clone(),
            depth: 0,
            key: None,
            in_top: String::new(),
            start: 0,
            ranges: ranges.clone(),
        };
        let mut writer = Counting {
            bytes: Vec::new(),
            newlines,
        };
        let mut ser = serde_json::Serializer::with_formatter(&mut writer, tracker);
        let written = bundle.serialize(&mut ser).is_ok();
        let ranges = ranges.take();
        if !written || writer.bytes != text.as_bytes() || ranges.len() != bundle.sdscs.len() {
            return Vec::new();
        }
        bundle
            .sdscs
            .iter()
            .map(|n| n.name.clone())
            .zip(ranges)
            .collect()
    }

    /// A byte sink that counts the newlines written, for [`SdscTracker`].
    struct Counting {
        bytes: Vec<u8>,
        newlines: Rc<Cell<u32>>,
    }

    impl std::io::Write for Counting {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let n = buf.iter().filter(|b| **b == b'\n').count();
            self.newlines
                .set(self.newlines.get() + u32::try_from(n).unwrap_or(u32::MAX));
            self.bytes.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// serde_json's pretty formatter, noting the lines each entry of the bundle's top-level
    /// `sdscs` list spans: the reference [`sdsc_lines`] is checked against.
    struct SdscTracker {
        pretty: serde_json::ser::PrettyFormatter<'static>,
        /// Newlines written so far (shared with the [`Counting`] writer).
        newlines: Rc<Cell<u32>>,
        /// Objects open.
        depth: usize,
        /// The top-level key being written.
        key: Option<String>,
        /// The top-level key whose value is being written.
        in_top: String,
        /// The line the current `sdscs` entry started on.
        start: u32,
        /// The lines of each entry, in order (shared with the caller).
        ranges: Rc<RefCell<Vec<LineRange>>>,
    }

    impl SdscTracker {
        fn line(&self) -> u32 {
            self.newlines.get() + 1
        }
        fn in_entries(&self) -> bool {
            self.in_top == "sdscs"
        }
    }

    impl Formatter for SdscTracker {
        fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.depth += 1;
            self.pretty.begin_object(w)
        }
        fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.pretty.end_object(w)?;
            // An entry of `sdscs` is an object (depth 2) holding one named descriptor.
            if self.depth == 2 && self.in_entries() {
                self.ranges.borrow_mut().push(LineRange {
                    from: self.start,
                    to: self.line(),
                });
            }
            self.depth = self.depth.saturating_sub(1);
            Ok(())
        }
        fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.pretty.begin_array(w)
        }
        fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.pretty.end_array(w)
        }
        fn begin_array_value<W: ?Sized + Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> io::Result<()> {
            self.pretty.begin_array_value(w, first)
        }
        fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.pretty.end_array_value(w)
        }
        fn begin_object_key<W: ?Sized + Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> io::Result<()> {
            self.pretty.begin_object_key(w, first)?;
            if self.depth == 1 {
                self.key = Some(String::new());
            } else if self.depth == 2 && self.in_entries() {
                // The descriptor's name: the entry's text starts here.
                self.start = self.line();
            }
            Ok(())
        }
        fn write_string_fragment<W: ?Sized + Write>(
            &mut self,
            w: &mut W,
            fragment: &str,
        ) -> io::Result<()> {
            if let Some(k) = &mut self.key {
                k.push_str(fragment);
            }
            self.pretty.write_string_fragment(w, fragment)
        }
        fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
            if let Some(k) = self.key.take() {
                self.in_top = k;
            }
            self.pretty.begin_object_value(w)
        }
        fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.pretty.end_object_value(w)
        }
    }

    fn run(name: &str) -> Run {
        let ex = crate::examples();
        let e = ex.iter().find(|e| e.name == name).unwrap();
        let mut s = Session::open(e.source.as_bytes(), e.name).unwrap();
        s.run(&RunOptions::default(), &mut |_| {}).unwrap().clone()
    }

    #[test]
    fn a_graph_run_links_nodes_ops_kernels_lines_and_events() {
        let r = run("matmul_add");
        let m = &r.source_map;
        let text: Vec<&str> = r.ktir.lines().collect();
        let sdsc = r
            .passes
            .iter()
            .find(|p| p.name == "sdsc")
            .unwrap()
            .text
            .as_deref()
            .unwrap();
        let sdsc: Vec<&str> = sdsc.lines().collect();
        assert_eq!(m.nodes.len(), r.graph.nodes.len());
        assert!(!m.ops.is_empty());
        for (i, op) in m.ops.iter().enumerate() {
            let node = &m.nodes[op.node.unwrap()];
            assert!(node.ops.contains(&i));
            assert!(op.name == node.name || op.name.starts_with(&format!("{}/", node.name)));
            // A fused kernel (the matmul and its bias-add epilogue here) names its first op.
            let k = &m.kernels[op.kernel.unwrap()];
            assert!(k.op.is_some_and(|first| first <= i), "{:?}", k.op);
            let header = text[k.lines.from as usize - 1];
            assert!(
                header.contains(&format!("func.func @{}(", k.func)),
                "{header}"
            );
            assert_eq!(text[k.lines.to as usize - 1].trim(), "}");
            let s = op.sdsc_lines.unwrap();
            assert!(
                sdsc[s.from as usize - 1].contains(&format!("\"{}\": {{", op.name)),
                "{}",
                sdsc[s.from as usize - 1]
            );
        }
        // Every event belongs to exactly one kernel, and lies in its lines.
        let mut seen = vec![0; r.run.events.len()];
        for k in &m.kernels {
            for &e in &k.events {
                seen[e] += 1;
                assert!(k.lines.contains(r.run.events[e].line));
            }
        }
        assert!(seen.iter().all(|n| *n == 1), "{seen:?}");
        // Transfers carry their route, from source to destination, one hop at a time.
        let stops = r.run.machine.stops.len();
        for e in &r.run.events {
            if e.unit == Unit::Dma {
                let (s, d) = (e.src_stop.unwrap(), e.dst_stop.unwrap());
                assert_eq!(e.route.first(), Some(&s));
                assert_eq!(e.route.last(), Some(&d));
                for w in e.route.windows(2) {
                    let step = (w[1] + stops - w[0]) % stops;
                    assert!(step == 1 || step == stops - 1, "{:?}", e.route);
                }
            } else {
                assert!(e.route.is_empty());
            }
        }
        assert!(r.run.events.iter().any(|e| e.route.len() > 2));
    }

    #[test]
    fn sdsc_lines_read_from_the_text_are_the_lines_the_writer_notes() {
        for machine in ["spyre32", "tiny4"] {
            let m = sim::machine::Machine::preset(machine).unwrap();
            for e in crate::examples().iter().filter(|e| e.kind == "graph") {
                let g = graph::load_json(e.source).unwrap();
                let c = crate::compile(&g, &m, &compiler::Options::default()).unwrap();
                let (b, text) = (c.sdsc.as_ref().unwrap(), &c.snapshot("sdsc").unwrap().text);
                let read = super::sdsc_lines(b, text);
                assert_eq!(read.len(), b.sdscs.len(), "{} on {machine}", e.name);
                assert_eq!(
                    read,
                    sdsc_lines_by_writing(b, text),
                    "{} on {machine}",
                    e.name
                );
            }
        }
        // Text that is not the bundle's pretty JSON maps no lines.
        let g = graph::load_json(crate::examples()[0].source).unwrap();
        let m = sim::machine::Machine::preset("spyre32").unwrap();
        let c = crate::compile(&g, &m, &compiler::Options::default()).unwrap();
        let (b, text) = (c.sdsc.as_ref().unwrap(), &c.snapshot("sdsc").unwrap().text);
        let compact = serde_json::to_string(b).unwrap();
        assert!(super::sdsc_lines(b, &compact).is_empty());
        // matmul_add's bundle has two ops: in the other order they do not match the text.
        assert_eq!(b.sdscs.len(), 2);
        let mut other = b.clone();
        other.sdscs.reverse();
        assert!(super::sdsc_lines(&other, text).is_empty());
        other.sdscs.truncate(0);
        assert!(super::sdsc_lines(&other, text).is_empty());
        let cut: String = text
            .lines()
            .take(text.lines().count() / 2)
            .collect::<Vec<_>>()
            .join("\n");
        assert!(super::sdsc_lines(b, &cut).is_empty());
    }

    #[test]
    fn a_ktir_run_maps_its_functions() {
        let ex = crate::examples();
        let prog = ex.iter().find(|e| e.kind == "ktir").unwrap();
        let r = run(prog.name);
        let m = &r.source_map;
        assert!(m.nodes.is_empty() && m.ops.is_empty());
        assert_eq!(m.kernels.len(), r.run.functions.len());
        let n: usize = m.kernels.iter().map(|k| k.events.len()).sum();
        assert_eq!(n, r.run.events.len());
        assert!(m.kernels.iter().all(|k| k.op.is_none()));
    }
}
