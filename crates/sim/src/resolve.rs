//! The resolved form of a function, built once per launch: values live in numbered slots,
//! attributes (sets, maps) and elementwise ops are resolved, last uses are precomputed.
//! Nothing is looked up by name while running.

use crate::value::{err, SimError};
use ktir::ast::*;
use ktir::ast::{ElementwiseOp, LinalgNamedOp};
use std::collections::HashMap;
use std::rc::Rc;

/// A region in resolved form: the slots of its block arguments and its ops.
pub(crate) struct Region<'a> {
    pub args: Vec<usize>,
    pub ops: Vec<ROp<'a>>,
}

/// A resolved integer set, shared by the op and the views built from it.
pub(crate) type SharedSet = Option<Rc<AffineSet>>;

/// One op in resolved form.
pub(crate) struct ROp<'a> {
    pub op: &'a Op,
    /// The op's name, shared by every task it records.
    pub name: crate::timing::OpName,
    /// Unique within a launch (identifies collective instances).
    pub id: usize,
    pub operands: Vec<usize>,
    pub results: Vec<usize>,
    /// Slots whose last use is this op (freed after it completes).
    pub frees: Vec<usize>,
    pub regions: Vec<Region<'a>>,
    pub line: u32,
    /// Resolved integer sets, per op kind (see `Resolver::attrs`); shared, as views hold
    /// them too.
    pub sets: Vec<SharedSet>,
    /// Resolved affine maps, per op kind.
    pub maps: Vec<Option<AffineMap>>,
    /// Op-specific precomputed integers.
    pub ints: Vec<i64>,
    /// The elementwise operation, for elementwise ops (`arith`/`math` and named linalg).
    pub ew: Option<ElementwiseOp>,
    /// What a collective op's sets give, worked out on first use (see
    /// [`crate::collectives::CollectiveMemo`]).
    pub collective: crate::collectives::CollectiveMemo,
}

pub(crate) struct Resolver<'a> {
    pub(crate) module: &'a Module,
    pub(crate) scopes: Vec<HashMap<&'a str, usize>>,
    pub(crate) slots: usize,
    pub(crate) next_id: usize,
    pub(crate) line_index: &'a LineLookup,
    /// Producer and group sets of each future's slot.
    pub(crate) produced: HashMap<usize, (SharedSet, SharedSet)>,
}

/// Turns byte offsets into line numbers for task labels.
pub struct LineLookup {
    starts: Vec<usize>,
}

impl LineLookup {
    /// Indexes `text`'s lines.
    pub fn new(text: &str) -> LineLookup {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineLookup { starts }
    }

    /// The 1-based line of byte `offset`.
    pub fn line(&self, offset: u32) -> u32 {
        match self.starts.binary_search(&(offset as usize)) {
            Ok(i) => i as u32 + 1,
            Err(i) => i as u32,
        }
    }
}

impl<'a> Resolver<'a> {
    pub(crate) fn new_slot(&mut self, name: &'a str) -> usize {
        let s = self.slots;
        self.slots += 1;
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name, s);
        }
        s
    }

    fn lookup(&self, v: &Value) -> Result<usize, SimError> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(v.name.as_str()).copied())
            .map_or_else(|| err(format!("use of undefined value '%{}'", v.name)), Ok)
    }

    fn set(&self, a: &Option<Attr>) -> Option<Rc<AffineSet>> {
        match a.as_ref().and_then(|a| self.module.resolve(a)) {
            Some(Attr::Set(s)) => Some(Rc::new(s.clone())),
            _ => None,
        }
    }

    fn map(&self, a: &Option<Attr>) -> Option<AffineMap> {
        match a.as_ref().and_then(|a| self.module.resolve(a)) {
            Some(Attr::Map(m)) => Some(m.clone()),
            _ => None,
        }
    }

    pub(crate) fn block(&mut self, ops: &'a [Op]) -> Result<Vec<ROp<'a>>, SimError> {
        let mut out = Vec::with_capacity(ops.len());
        for op in ops {
            let operands = op
                .kind
                .operands()
                .into_iter()
                .map(|v| self.lookup(v))
                .collect::<Result<Vec<_>, _>>()?;
            let mut regions = Vec::new();
            if let OpKind::For {
                induction,
                iter_args,
                body,
                ..
            } = &op.kind
            {
                self.scopes.push(HashMap::new());
                let mut args = vec![self.new_slot(induction)];
                for (name, _) in iter_args {
                    args.push(self.new_slot(name));
                }
                let inner = self.block(&body.ops)?;
                self.scopes.pop();
                regions.push(Region { args, ops: inner });
            } else {
                for region in op.kind.regions() {
                    self.scopes.push(HashMap::new());
                    let args = region.args.iter().map(|(n, _)| self.new_slot(n)).collect();
                    let inner = self.block(&region.ops)?;
                    self.scopes.pop();
                    regions.push(Region { args, ops: inner });
                }
            }
            let results: Vec<usize> = op.results.iter().map(|r| self.new_slot(r)).collect();
            let (sets, maps, ints, ew) = self.attrs(op, &operands, &results);
            let id = self.next_id;
            self.next_id += 1;
            out.push(ROp {
                op,
                name: crate::timing::OpName::from(op.kind.name()),
                id,
                operands,
                results,
                frees: Vec::new(),
                regions,
                line: self.line_index.line(op.span.start),
                sets,
                maps,
                ints,
                ew,
                collective: Default::default(),
            });
        }
        Ok(out)
    }

    /// Precomputes what an op needs at run time from its attributes.
    #[allow(clippy::type_complexity)]
    fn attrs(
        &mut self,
        op: &'a Op,
        operands: &[usize],
        results: &[usize],
    ) -> (
        Vec<SharedSet>,
        Vec<Option<AffineMap>>,
        Vec<i64>,
        Option<ElementwiseOp>,
    ) {
        let mut sets = Vec::new();
        let mut maps = Vec::new();
        let mut ints = Vec::new();
        let mut ew = None;
        match &op.kind {
            OpKind::ConstructMemoryView {
                coordinate_set: None,
                sizes,
                ..
            } => sets.push(Some(Rc::new(AffineSet::whole_view(sizes)))),
            OpKind::ConstructMemoryView { coordinate_set, .. } => {
                sets.push(self.set(coordinate_set))
            }
            OpKind::ConstructAccessTile {
                access_tile_set,
                access_tile_order,
                ..
            } => {
                sets.push(self.set(access_tile_set));
                maps.push(self.map(access_tile_order));
            }
            OpKind::ConstructIndirectAccessTile {
                variables,
                dims,
                variables_space_set,
                variables_space_order,
                ..
            } => {
                sets.push(self.set(variables_space_set));
                maps.push(self.map(variables_space_order));
                // Where each subscript dimension comes from: a variable (>= 0) or the k-th
                // captured operand (-(k + 1)).
                let mut captured = 0;
                for d in dims {
                    if let Some(i) = variables.iter().position(|v| *v == d.name) {
                        ints.push(i as i64);
                    } else {
                        captured += 1;
                        ints.push(-captured);
                    }
                }
            }
            OpKind::InterTileProduce {
                producer_tiles_per_group,
                ..
            } => {
                let producers = self.set(&Some(producer_tiles_per_group.clone()));
                let groups = match op.result_types.first() {
                    Some(Type::TileFuture { groups, .. }) => self.set(&Some(groups.clone())),
                    _ => None,
                };
                sets.push(producers.clone());
                sets.push(groups.clone());
                if let Some(&r) = results.first() {
                    self.produced.insert(r, (producers, groups));
                }
            }
            OpKind::InterTileReduce {
                consumer_tiles_per_group,
                producer_dependency_per_consumer,
                future_type,
                ..
            }
            | OpKind::InterTileConsume {
                consumer_tiles_per_group,
                producer_dependency_per_consumer,
                future_type,
                ..
            } => {
                let (producers, mut groups) = operands
                    .first()
                    .and_then(|s| self.produced.get(s).cloned())
                    .unwrap_or((None, None));
                if groups.is_none() {
                    if let Type::TileFuture { groups: g, .. } = future_type {
                        groups = self.set(&Some(g.clone()));
                    }
                }
                sets.push(producers);
                sets.push(groups);
                sets.push(self.set(&Some(consumer_tiles_per_group.clone())));
                sets.push(self.set(producer_dependency_per_consumer));
            }
            OpKind::LinalgGeneric {
                indexing_maps,
                iterator_types,
                ..
            } => {
                for m in indexing_maps {
                    maps.push(self.map(&Some(m.clone())));
                }
                ints.extend(
                    iterator_types
                        .iter()
                        .map(|t| i64::from(t.contains("reduction"))),
                );
            }
            OpKind::Elementwise { op: e, .. }
            | OpKind::LinalgNamed {
                op: LinalgNamedOp::Elementwise(e),
                ..
            } => ew = Some(*e),
            OpKind::LinalgReduce {
                shorthand, body, ..
            } => {
                let op = shorthand.or_else(|| {
                    // A region of exactly one combining op over the two block arguments.
                    let real: Vec<&Op> = body
                        .ops
                        .iter()
                        .filter(|o| !o.kind.is_terminator())
                        .collect();
                    match real.as_slice() {
                        [one] => match &one.kind {
                            OpKind::Elementwise { op, .. } => Some(*op),
                            // The generic form of an arith op still names its combiner.
                            OpKind::Generic { name, .. } => ElementwiseOp::from_name(name),
                            _ => None,
                        },
                        _ => None,
                    }
                });
                if let Some(op) = op {
                    ints.push(match crate::exec_ops::Combiner::from_op(op) {
                        Some(crate::exec_ops::Combiner::Add) => 1,
                        Some(crate::exec_ops::Combiner::Mul) => 2,
                        Some(crate::exec_ops::Combiner::Max) => 3,
                        Some(crate::exec_ops::Combiner::Min) => 4,
                        None => 0,
                    });
                }
            }
            _ => {}
        }
        (sets, maps, ints, ew)
    }
}

/// Records, per op, the slots defined in this block (`block_args` or op results) whose last
/// use is that op, so values can be freed: the working-set analysis's rule
/// ([`ktir::working_set::frees_after_last_use`]), so the charges it predicts are the ones
/// made here.
pub(crate) fn compute_frees(ops: &mut [ROp<'_>], block_args: &[usize]) {
    fn uses(op: &ROp<'_>, out: &mut Vec<usize>) {
        out.extend(&op.operands);
        for r in &op.regions {
            for inner in &r.ops {
                uses(inner, out);
            }
        }
    }
    let op_uses: Vec<Vec<usize>> = ops
        .iter()
        .map(|op| {
            let mut u = Vec::new();
            uses(op, &mut u);
            u
        })
        .collect();
    let op_results: Vec<Vec<usize>> = ops.iter().map(|op| op.results.clone()).collect();
    let defined: std::collections::HashSet<usize> = block_args
        .iter()
        .copied()
        .chain(ops.iter().flat_map(|o| o.results.iter().copied()))
        .collect();
    let by_op =
        ktir::working_set::frees_after_last_use(&op_uses, &op_results, |s| defined.contains(s));
    for (op, f) in ops.iter_mut().zip(by_op) {
        op.frees = f;
        for r in &mut op.regions {
            let args = r.args.clone();
            compute_frees(&mut r.ops, &args);
        }
    }
}
