//! Movement kernels: reshape, transpose, expand, slice, concat, restickify and gather.
//!
//! Each core reads its boxes of the inputs in device layout, brings them to host order,
//! rearranges them there, and writes its slice of the result in the output's device
//! layout. The work division splits only dims that map one-to-one between output and
//! inputs (`crate::movement_split`), stick dims only in whole sticks, so a box is always
//! whole sticks. A transpose whose input and output hold their sticks along different
//! dims and whose slice does not fit moves it in 2-D blocks of whole sticks on both sides
//! ([`KernelEmitter::blocked`]): a loop over the whole blocks of each cut dim, then one
//! remainder block (its last stick possibly part padding) where the block does not divide
//! the slice.

use super::*;

impl KernelEmitter<'_> {
    /// The host shape of this core's tile of an operand: its host shape with each split
    /// or blocked dim cut to the tile's extent (a cut stick dim to its whole sticks, or to
    /// the exact elements of a block, padding left out).
    fn box_host(&self, operand: usize) -> Vec<usize> {
        let o = &self.operands[operand];
        let mut b = o.layout.host_shape.clone();
        let lanes = o.extent.last().copied().unwrap_or(1);
        for (j, d) in o.dims.iter().enumerate() {
            let Some(h) = o.layout.host_dim_of_device_dim[j] else {
                continue;
            };
            if !matches!(d.kind, Kind::Elem | Kind::Sticks) {
                continue;
            }
            if let Some(n) = d
                .iter
                .and_then(|i| self.box_elems.get(i).copied().flatten())
            {
                b[h] = n;
            } else if o.extent[j] != o.layout.device_size[j] {
                b[h] = match d.kind {
                    Kind::Sticks => o.extent[j] * lanes,
                    _ => o.extent[j],
                };
            }
        }
        b
    }

    /// The elements of iteration dim `d` in this core's current tile: the block being
    /// emitted, else the extent of an operand dim that holds it in whole elements.
    pub(super) fn iter_elems(&self, d: usize) -> usize {
        if let Some(n) = self.box_elems.get(d).copied().flatten() {
            return n;
        }
        let mut sticks = None;
        for o in &self.operands {
            for (j, r) in o.dims.iter().enumerate() {
                if r.iter != Some(d) {
                    continue;
                }
                match r.kind {
                    Kind::Elem => return o.extent[j],
                    Kind::Sticks => {
                        let n = o.extent[j] * o.extent.last().copied().unwrap_or(1);
                        let host = o.layout.host_dim_of_device_dim[j]
                            .and_then(|h| o.layout.host_shape.get(h).copied())
                            .unwrap_or(n);
                        sticks.get_or_insert(n.min(host));
                    }
                    _ => {}
                }
            }
        }
        sticks.unwrap_or(1)
    }

    /// Cuts every operand's tile to a block of `elems` elements of iteration dim `d` (in
    /// each operand's own units: elements, or sticks rounded up), placed at `start`
    /// elements (a multiple of the stick length where sticks are cut) plus, inside a
    /// loop, the loop index `iv` times the block.
    fn cut_block(&mut self, d: usize, elems: usize, start: usize, iv: Option<&str>) {
        for o in &mut self.operands {
            let lanes = o.extent.last().copied().unwrap_or(1).max(1);
            for j in 0..o.dims.len() {
                if o.dims[j].iter != Some(d) {
                    continue;
                }
                let (extent, step, at) = match o.dims[j].kind {
                    Kind::Elem => (elems, elems, start),
                    Kind::Sticks => (elems.div_ceil(lanes), elems / lanes, start / lanes),
                    _ => continue,
                };
                o.extent[j] = extent;
                if at > 0 {
                    o.step_offset[j].push(Subscript::Const(at as i64));
                }
                if let Some(iv) = iv {
                    let term = Subscript::value(ssa(iv));
                    o.step_offset[j].push(if step == 1 {
                        term
                    } else {
                        term.times(step as i64)
                    });
                }
            }
        }
        if let Some(b) = self.box_elems.get_mut(d) {
            *b = Some(elems);
        }
    }

    /// The blocked movement kernel from block dim `level` inwards: a loop over the whole
    /// blocks of that dim, then its remainder block, each holding the levels inside; the
    /// innermost level builds the tiles and moves one block. `first` lists the operands
    /// that own a view (a tensor read twice has one).
    pub(super) fn blocked(&mut self, level: usize, first: &[usize]) -> Result<(), CompileError> {
        let Some(&(d, block)) = self.blocks.get(level) else {
            for &i in first {
                self.tile(i);
            }
            self.movement()?;
            self.next_part();
            return Ok(());
        };
        let extent = self.iter_elems(d);
        let block = block.clamp(1, extent.max(1));
        let (whole, rem) = (extent / block, extent % block);
        let saved: Vec<(Vec<usize>, Vec<Vec<Subscript>>)> = self
            .operands
            .iter()
            .map(|o| (o.extent.clone(), o.step_offset.clone()))
            .collect();
        let restore = |em: &mut Self| {
            for (o, (e, s)) in em.operands.iter_mut().zip(&saved) {
                o.extent = e.clone();
                o.step_offset = s.clone();
            }
            if let Some(b) = em.box_elems.get_mut(d) {
                *b = None;
            }
        };
        if whole > 1 {
            let iv = self.open_loop(whole);
            self.cut_block(d, block, 0, Some(&iv));
            self.blocked(level + 1, first)?;
            self.close_loop();
            restore(self);
        } else if whole == 1 {
            self.cut_block(d, block, 0, None);
            self.blocked(level + 1, first)?;
            restore(self);
        }
        if rem > 0 {
            self.cut_block(d, rem, whole * block, None);
            self.blocked(level + 1, first)?;
            restore(self);
        }
        Ok(())
    }

    /// A new name suffix for the next block body.
    fn next_part(&mut self) {
        let n = self
            .part
            .trim_start_matches("_p")
            .parse::<usize>()
            .unwrap_or(0);
        self.part = format!("_p{}", n + 1);
    }

    /// A blocked kernel's cut for its header comment: each block dim with its block and
    /// remainder, and the steps a core runs.
    pub(super) fn blocks_note(&self) -> String {
        let mut steps = 1usize;
        let dims: Vec<String> = self
            .blocks
            .iter()
            .map(|&(d, block)| {
                let label = self.op.iteration.get(d).map_or("?", |x| x.label.as_str());
                let extent = self.iter_elems(d);
                let block = block.clamp(1, extent.max(1));
                let (whole, rem) = (extent / block, extent % block);
                steps = steps.saturating_mul(whole + usize::from(rem > 0));
                if rem > 0 {
                    format!("{label} {whole} x {block} + {rem}")
                } else {
                    format!("{label} {whole} x {block}")
                }
            })
            .collect();
        format!(
            "{steps} blocks per core, moved through the scratchpad one at a time: {} (elements, outermost first)",
            dims.join(", ")
        )
    }

    /// This core's tile of an operand, in device order, as a host-order tensor of the
    /// tile's exact host shape: device dims sorted into host order, each stick dim merged
    /// with its lanes, padding sliced off, unit host dims put back.
    pub(super) fn host_order_of(
        &mut self,
        value: String,
        operand: usize,
    ) -> Result<String, CompileError> {
        let o = &self.operands[operand];
        let (elem, layout) = (o.elem, o.layout.clone());
        let shape = o.extent.clone();
        // Element and stick dims may be cut (sticks whole); lanes never are.
        let split_only_elems = o.dims.iter().enumerate().all(|(j, d)| {
            shape.get(j) == layout.device_size.get(j)
                    || matches!(d.kind, Kind::Elem | Kind::Sticks)
                    // One-element sticks are held one lane wide.
                    || shape.get(j) == Some(&1)
        });
        let host = layout.host_shape.clone();
        let bx = self.box_host(operand);
        let n = layout.device_size.len();
        if host.is_empty() {
            let v = self.fresh("scalar");
            self.collapse(&v, &value, Vec::new(), (&shape, &[]), elem);
            return Ok(v);
        }
        if !split_only_elems {
            return Err(self.fail("movement kernels cut element and stick dims only, never lanes"));
        }
        // A layout with zero-padded element dims (matmul B's K) is first cut to its unpadded
        // sizes (padded dims are never split, so split dims keep the tile's extent).
        let unpadded = layout.unpadded_device_size();
        let target: Vec<usize> = (0..n)
            .map(|j| {
                if shape[j] != layout.device_size[j] {
                    shape[j]
                } else {
                    unpadded.get(j).copied().unwrap_or(shape[j])
                }
            })
            .collect();
        let (value, shape) = if target != shape && unpadded.len() == shape.len() {
            let sl = self.fresh("unpadded");
            self.slice(
                &sl,
                &value,
                (&vec![0; n], &target, &vec![1; n]),
                &shape,
                elem,
            );
            (sl, target)
        } else {
            (value, shape)
        };
        // Order: by host dim; the stick count before its lanes.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&j| (layout.host_dim_of_device_dim[j].unwrap_or(0), j + 1 == n));
        let perm_shape: Vec<usize> = order.iter().map(|&j| shape[j]).collect();
        let mut v = value;
        if order.iter().enumerate().any(|(i, &j)| i != j) {
            let e = self.fresh("empty");
            let t = self.fresh("host");
            self.transpose_into((&e, &t), &v, (&shape, &perm_shape), order.clone(), elem);
            v = t;
        }
        // Merge sticks and lanes (the last two dims) into the padded last host dim.
        let m = perm_shape.len();
        let mut merged: Vec<usize> = perm_shape[..m - 2].to_vec();
        merged.push(perm_shape[m - 2] * perm_shape[m - 1]);
        let mut groups: Vec<Vec<usize>> = (0..m - 2).map(|i| vec![i]).collect();
        groups.push(vec![m - 2, m - 1]);
        let c = self.fresh("rows");
        self.collapse(&c, &v, groups, (&perm_shape, &merged), elem);
        v = c;
        // Drop the padding of the last stick.
        let last = *bx.last().unwrap_or(&1);
        let mut exact = merged.clone();
        if let Some(l) = exact.last_mut() {
            *l = last;
        }
        if exact != merged {
            let sl = self.fresh("unpadded");
            let m = merged.len();
            self.slice(&sl, &v, (&vec![0; m], &exact, &vec![1; m]), &merged, elem);
            v = sl;
        }
        // Unit host dims other than the last are not in the layout: put them back.
        if exact.len() != host.len() {
            let kept: Vec<usize> = {
                let mut k: Vec<usize> = (0..host.len() - 1).filter(|&h| host[h] != 1).collect();
                k.push(host.len() - 1);
                k
            };
            let e = self.fresh("shaped");
            let groups = unit_groups(host.len(), &kept);
            self.expand(&e, &v, groups, (&exact, &bx), elem);
            v = e;
        }
        Ok(v)
    }

    /// The inverse of [`Self::host_order_of`] for the output operand: a host-order tensor of
    /// this core's box into its device-order tile (padding zero).
    pub(super) fn device_order_of(
        &mut self,
        value: String,
        operand: usize,
    ) -> Result<(String, Vec<usize>), CompileError> {
        let o = &self.operands[operand];
        let (elem, layout) = (o.elem, o.layout.clone());
        let host = layout.host_shape.clone();
        let full = layout.device_size.clone();
        let dev = o.extent.clone();
        let bx = self.box_host(operand);
        let n = dev.len();
        if host.is_empty() {
            let v = self.fresh("tile");
            self.expand(&v, &value, Vec::new(), (&[], &dev), elem);
            return Ok((v, dev));
        }
        let mut v = value;
        // Drop unit host dims that take no part.
        let kept: Vec<usize> = {
            let mut k: Vec<usize> = (0..host.len() - 1).filter(|&h| host[h] != 1).collect();
            k.push(host.len() - 1);
            k
        };
        let mut exact: Vec<usize> = kept.iter().map(|&h| bx[h]).collect();
        if kept.len() != host.len() {
            let c = self.fresh("squeezed");
            let groups = unit_groups(host.len(), &kept);
            self.collapse(&c, &v, groups, (&bx, &exact), elem);
            v = c;
        }
        // Pad the last dim to whole sticks.
        // A one-element stick (a last host dim of 1) is one lane wide in the tile, as
        // compute kernels hold it.
        let eps = if dev.last() == Some(&1) {
            1
        } else {
            layout.elems_per_stick.max(1)
        };
        let last = *exact.last().unwrap_or(&1);
        let sticks = last.div_ceil(eps);
        if sticks * eps != last {
            let mut padded = exact.clone();
            if let Some(l) = padded.last_mut() {
                *l = sticks * eps;
            }
            v = self.zero_padded(&v, &exact, &padded, elem);
            exact = padded;
        }
        // Split the last dim into sticks and lanes.
        let k = exact.len();
        let mut split: Vec<usize> = exact[..k - 1].to_vec();
        split.extend([sticks, eps]);
        let mut groups: Vec<Vec<usize>> = (0..k - 1).map(|i| vec![i]).collect();
        groups.push(vec![k - 1, k]);
        let s = self.fresh("sticked");
        self.expand(&s, &v, groups, (&exact, &split), elem);
        v = s;
        // Into device order: `order` lists, for each host-ordered dim, its device dim.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&j| (layout.host_dim_of_device_dim[j].unwrap_or(0), j + 1 == n));
        // perm[d] = position in host order of device dim d.
        let perm: Vec<usize> = (0..n)
            .map(|d| order.iter().position(|&j| j == d).unwrap_or(d))
            .collect();
        if perm.iter().enumerate().any(|(i, &p)| i != p) {
            let e = self.fresh("empty");
            let t = self.fresh("device");
            let permuted: Vec<usize> = perm.iter().map(|&p| split[p]).collect();
            self.transpose_into((&e, &t), &v, (&split, &permuted), perm.clone(), elem);
            v = t;
        }
        // Zero-padded element dims (matmul B's K): place the tensor in a zero tile.
        let unpadded = layout.unpadded_device_size();
        if unpadded != full && unpadded.len() == n {
            let from: Vec<usize> = (0..n)
                .map(|j| {
                    if dev[j] != full[j] {
                        dev[j]
                    } else {
                        unpadded[j]
                    }
                })
                .collect();
            v = self.zero_padded(&v, &from, &dev, elem);
        }
        Ok((v, dev))
    }

    /// Reshape, transpose, expand, slice and concat: each core reads its input boxes,
    /// rearranges them in host order and writes its box of the output.
    pub(super) fn movement(&mut self) -> Result<(), CompileError> {
        let out = self.op.inputs.len();
        if self.operands.len() != out + 1 {
            return Err(self.fail("a movement op has one output"));
        }
        let elem = self.operands[out].elem;
        if self.operands[..out].iter().any(|o| o.elem != elem) {
            return Err(self.fail("movement ops keep the element type"));
        }
        // Whole host shapes decide broadcasting; the boxes are what this core moves.
        let (in_full, out_full) = (
            self.operands[0].layout.host_shape.clone(),
            self.operands[out].layout.host_shape.clone(),
        );
        let out_host = self.box_host(out);
        let mut hosts = Vec::new();
        for i in 0..out {
            let v = self.load(i);
            hosts.push(self.host_order_of(v, i)?);
        }
        let in_host = self.box_host(0);
        let DeviceOpKind::Movement(kind) = self.op.kind else {
            return Err(self.fail(format!("'{}' is not a movement op", self.op.kind)));
        };
        let result = match kind {
            Movement::Reshape => {
                let x = hosts[0].clone();
                let numel: usize = in_host.iter().product();
                let mut v = x;
                let mut cur = in_host.clone();
                // Through one flat dim: a rank-0 side is one element, so reaching it from
                // [1] collapses (and leaving it expands) with no groups.
                if cur.is_empty() {
                    let flat = self.fresh("flat");
                    self.expand(&flat, &v, Vec::new(), (&[], &[numel]), elem);
                    v = flat;
                    cur = vec![numel];
                } else if cur.len() != 1 {
                    let flat = self.fresh("flat");
                    let groups = vec![(0..cur.len()).collect()];
                    self.collapse(&flat, &v, groups, (&cur, &[numel]), elem);
                    v = flat;
                    cur = vec![numel];
                }
                if out_host.is_empty() {
                    let r = self.fresh("reshaped");
                    self.collapse(&r, &v, Vec::new(), (&cur, &[]), elem);
                    v = r;
                } else if out_host.len() != 1 {
                    let r = self.fresh("reshaped");
                    let groups = vec![(0..out_host.len()).collect()];
                    self.expand(&r, &v, groups, (&cur, &out_host), elem);
                    v = r;
                }
                v
            }
            Movement::Transpose => {
                let perm = crate::movement_split::transpose_perm(self.op, in_host.len())
                    .unwrap_or_default();
                let e = self.fresh("empty");
                let t = self.fresh("transposed");
                let x = hosts[0].clone();
                self.transpose_into((&e, &t), &x, (&in_host, &out_host), perm, elem);
                t
            }
            Movement::Expand => {
                // numpy broadcasting: input dims align right; size-1 or missing dims repeat.
                let lead = out_host.len() - in_host.len().min(out_host.len());
                let kept: Vec<usize> = (0..in_full.len())
                    .filter(|&i| in_full[i] == out_full[lead + i])
                    .collect();
                let mut v = hosts[0].clone();
                let kept_shape: Vec<usize> = kept.iter().map(|&i| in_host[i]).collect();
                if kept.len() != in_host.len() {
                    let c = self.fresh("squeezed");
                    let groups = unit_groups(in_host.len(), &kept);
                    self.collapse(&c, &v, groups, (&in_host, &kept_shape), elem);
                    v = c;
                }
                let kept_out: Vec<usize> = kept.iter().map(|&i| lead + i).collect();
                let dims: Vec<usize> = (0..out_host.len())
                    .filter(|d| !kept_out.contains(d))
                    .collect();
                if dims.is_empty() {
                    v
                } else {
                    let e = self.fresh("empty");
                    let b = self.fresh("expanded");
                    let empty = self.b.empty(ssa(&e), shape_str(&out_host, elem));
                    self.b.broadcast(
                        ssa(&b),
                        &val(&v),
                        shape_str(&kept_shape, elem),
                        &empty,
                        shape_str(&out_host, elem),
                        dims,
                    );
                    b
                }
            }
            Movement::Slice => {
                let r = in_host.len();
                let starts = self.ints("starts").unwrap_or_default();
                let ends = self.ints("ends").unwrap_or_default();
                let axes = self
                    .ints("axes")
                    .unwrap_or_else(|| (0..starts.len() as i64).collect());
                let steps = self.ints("steps").unwrap_or_else(|| vec![1; starts.len()]);
                let mut offsets = vec![0i64; r];
                let mut strides = vec![1i64; r];
                for (k, &a) in axes.iter().enumerate() {
                    let a = a.rem_euclid(r.max(1) as i64) as usize;
                    let dim = in_host[a] as i64;
                    let step = steps.get(k).copied().unwrap_or(1);
                    if step < 1 {
                        return Err(
                            self.fail("slices with negative steps are not lowered to KTIR yet")
                        );
                    }
                    let st = starts.get(k).copied().unwrap_or(0);
                    let st = if st < 0 { st + dim } else { st }.clamp(0, dim);
                    let _ = ends.get(k);
                    offsets[a] = st;
                    strides[a] = step;
                }
                let sl = self.fresh("sliced");
                let sizes = |v: &[i64]| v.iter().map(|&x| ktir::SizeOperand::Static(x)).collect();
                self.b.extract_slice(
                    ssa(&sl),
                    &val(&hosts[0]),
                    sizes(&offsets),
                    build::static_sizes(&out_host),
                    sizes(&strides),
                    shape_str(&in_host, elem),
                    shape_str(&out_host, elem),
                );
                sl
            }
            Movement::Restickify => hosts[0].clone(),
            Movement::Concat => {
                let r = out_host.len();
                let axis = match self.ints("axis").as_deref() {
                    Some([a]) => a.rem_euclid(r.max(1) as i64) as usize,
                    _ => 0,
                };
                let ty = shape_str(&out_host, elem);
                let mut acc = self.fresh("empty");
                self.b.empty(ssa(&acc), ty.clone());
                let mut offset = 0usize;
                for (i, h) in hosts.iter().enumerate() {
                    let shape = self.box_host(i);
                    let mut offs = vec![0usize; r];
                    offs[axis] = offset;
                    let next = self.fresh("joined");
                    self.b.insert_slice(
                        ssa(&next),
                        &val(h),
                        &val(&acc),
                        build::static_sizes(&offs),
                        build::static_sizes(&shape),
                        build::static_sizes(&vec![1; r]),
                        shape_str(&shape, elem),
                        ty.clone(),
                    );
                    acc = next;
                    offset += shape.get(axis).copied().unwrap_or(0);
                }
                acc
            }
            // Gather has its own kernel (`gather`).
            Movement::Gather => {
                return Err(self.fail(format!("movement op '{}' has no lowering", kind.name())))
            }
        };
        let (v, dev) = self.device_order_of(result, out)?;
        let name = self.operands[out].ssa.clone();
        self.b.store(
            &val(&v),
            &build::value(&format!("{name}_tile{}", self.part)),
            shape_str(&dev, elem),
            tile_str(&dev),
        );
        Ok(())
    }

    /// Embedding lookup (Gather on axis 0 of a 2-D table): one indirect access tile reads,
    /// for every id of this core, its sticks of that id's row of the table, and the loaded
    /// tile is this core's box of the output. Cores split the ids, the row's sticks or
    /// both; the ids and the table are read through views of the whole tensors.
    pub(super) fn gather(&mut self) -> Result<(), CompileError> {
        if self.operands.len() != 3 || self.ints("axis").is_some_and(|a| a != [0]) {
            return Err(self.fail("Gather is lowered for axis 0 of a 2-D table"));
        }
        let (table, ids, out) = (&self.operands[0], &self.operands[1], &self.operands[2]);
        let host = table.layout.host_shape.clone();
        if host.len() != 2 {
            return Err(self.fail("Gather is lowered for a 2-D table"));
        }
        // The ids: one dim that is not 1 (the sequence), held in [sticks, lanes].
        let id_host = ids.layout.host_shape.clone();
        let n: usize = id_host.iter().product();
        if ids.layout.device_size.len() != 2 || id_host.iter().filter(|&&d| d != 1).count() > 1 {
            return Err(self.fail("Gather is lowered for a vector of ids"));
        }
        let id_eps = ids.layout.elems_per_stick.max(1);
        // Table [sticks(H), V, lanes]; output [sticks(H), n, lanes].
        let t_dev = table.layout.device_size.clone();
        let o_dev = out.layout.device_size.clone();
        // One id: the output's single row takes no part in its layout, so the tile reads
        // [sticks(H), 1, lanes] and the loaded rows drop the unit dim before the store.
        let single = n == 1 && t_dev.len() == 3 && o_dev == [t_dev[0], t_dev[2]];
        let whole_dev = if single {
            vec![t_dev[0], 1, t_dev[2]]
        } else {
            o_dev.clone()
        };
        if t_dev.len() != 3 || whole_dev != vec![t_dev[0], n, t_dev[2]] {
            return Err(self.fail(format!(
                "Gather output layout {o_dev:?} does not match the table's {t_dev:?} for {n} ids"
            )));
        }
        // This core's box of the output: its sticks of the row and its ids (the lanes are
        // never split), with where they start.
        let (o_ext, o_origin) = (out.extent.clone(), out.origin.clone());
        let (stick_at, row_at) = if single {
            (o_origin[0].clone(), build::Subscript::Const(0))
        } else {
            (o_origin[0].clone(), o_origin[1].clone())
        };
        let tile_dev = if single {
            vec![o_ext[0], 1, o_ext[1]]
        } else {
            o_ext.clone()
        };
        let out_core = o_ext.clone();
        let out_local = out.local.is_some();
        let out_view_dev = if out_local {
            out.slice_extent()
        } else {
            o_dev.clone()
        };
        let (t_name, i_name, o_name) = (table.ssa.clone(), ids.ssa.clone(), out.ssa.clone());
        let (t_elem, i_elem, o_elem) = (table.elem, ids.elem, out.elem);
        let i_dev = ids.layout.device_size.clone();
        let rows = tile_dev[1];
        let steps = self.gather_steps.max(1);
        if rows % steps != 0 {
            return Err(self.fail(format!(
                "cannot cut this core's {rows} gathered rows into {steps} blocks"
            )));
        }
        // One block of rows per time step; the block's first row is the loop index times
        // the block, captured by the indirect tile and added to its row variable.
        let block = rows / steps;
        let mut b_dev = tile_dev.clone();
        b_dev[1] = block;
        let iv = (steps > 1).then(|| self.open_loop(steps));
        let tile = self.fresh("rows");
        let data = self.fresh("gathered");
        use ktir::{AffineExpr, Attr, IndirectSubscript, OpKind};
        let eps = AffineExpr::Const(id_eps as i64);
        let mut names: Vec<String> = vec!["stick".into()];
        let row: AffineExpr = match &iv {
            Some(iv) => {
                names.push(ssa(iv).to_string());
                names.push("row".into());
                AffineExpr::Add(
                    Box::new(AffineExpr::Mul(
                        Box::new(AffineExpr::Dim(1)),
                        Box::new(AffineExpr::Const(block as i64)),
                    )),
                    Box::new(AffineExpr::Dim(2)),
                )
            }
            None => {
                names.push("row".into());
                AffineExpr::Dim(1)
            }
        };
        names.push("lane".into());
        let lane = AffineExpr::Dim(names.len() - 1);
        // The core's first stick and first id, over the values they read (the core id),
        // which become further dims of the tile.
        let mut dims: Vec<ktir::Value> = names.iter().map(|v| build::value(v)).collect();
        let offset = |e: AffineExpr, at: &build::Subscript, dims: &mut Vec<ktir::Value>| {
            if *at == build::Subscript::Const(0) {
                e
            } else {
                AffineExpr::Add(Box::new(e), Box::new(at.lower(dims)))
            }
        };
        let stick = offset(AffineExpr::Dim(0), &stick_at, &mut dims);
        let row = Box::new(offset(row, &row_at, &mut dims));
        let variables: Vec<String> = ["stick", "row", "lane"].map(String::from).to_vec();
        self.b.def(
            ssa(&tile),
            OpKind::ConstructIndirectAccessTile {
                dims,
                variables,
                base: build::value(&format!("{t_name}_view")),
                subscripts: vec![
                    IndirectSubscript::Direct(stick),
                    IndirectSubscript::Indirect {
                        view: build::value(&format!("{i_name}_view")),
                        exprs: vec![
                            AffineExpr::FloorDiv(row.clone(), Box::new(eps.clone())),
                            AffineExpr::Mod(row, Box::new(eps)),
                        ],
                    },
                    IndirectSubscript::Direct(lane),
                ],
                symbols: Vec::new(),
                variables_space_set: Some(Attr::Set(box_set(&b_dev))),
                variables_space_order: Some(Attr::Map(identity_map(3))),
                base_type: build::memref(&t_dev, t_elem),
                index_types: vec![build::memref(&i_dev, i_elem)],
            },
            tile_str(&b_dev),
        );
        self.b.load(
            ssa(&data),
            &val(&tile),
            tile_str(&b_dev),
            shape_str(&b_dev, o_elem),
        );
        // A single id's row drops its unit dim to take the output's 2-D layout.
        let (data, store_dev) = if single {
            let row = self.fresh("row");
            self.collapse(
                &row,
                &data,
                vec![vec![0, 1], vec![2]],
                (&b_dev, &out_core),
                o_elem,
            );
            (row, out_core.clone())
        } else {
            (data, b_dev.clone())
        };
        let dst = match &iv {
            // The output's block at the same rows, inside the core's box (a scratchpad
            // output's view is the core's slice already).
            Some(iv) => {
                let dst = self.fresh("dst");
                let at = |s: &build::Subscript, or: build::Subscript| {
                    if out_local || *s == build::Subscript::Const(0) {
                        or
                    } else {
                        s.clone().plus(or)
                    }
                };
                let subs = [
                    at(&stick_at, build::Subscript::value("c0")),
                    at(
                        &row_at,
                        build::Subscript::value(ssa(iv)).times(block as i64),
                    ),
                    build::Subscript::value("c0"),
                ];
                self.b.access_tile(
                    ssa(&dst),
                    &build::value(&format!("{o_name}_view")),
                    &subs,
                    Some(box_set(&b_dev)),
                    Some(identity_map(3)),
                    build::memref(&out_view_dev, o_elem),
                    tile_str(&b_dev),
                );
                val(&dst)
            }
            None => build::value(&format!("{o_name}_tile")),
        };
        self.b.store(
            &val(&data),
            &dst,
            shape_str(&store_dev, o_elem),
            tile_str(&store_dev),
        );
        if iv.is_some() {
            self.close_loop();
        }
        Ok(())
    }
}
