//! The TypeScript declarations of every type the page receives, generated from the Rust
//! types with ts-rs into `web/src/generated/types.ts`. The test fails when the checked-in
//! file differs from what the types generate; `UPDATE_EXPECT=1` rewrites it.

use crate::views::UnitName;
use crate::*;
use ts_rs::TS;

/// One declaration per type, in dependency order.
fn declarations() -> Vec<String> {
    let cfg = ts_rs::Config::default();
    vec![
        UnitName::decl(&cfg),
        SourceKind::decl(&cfg),
        Stage::decl(&cfg),
        DiagnosticView::decl(&cfg),
        DriverError::decl(&cfg),
        TensorView::decl(&cfg),
        NodeView::decl(&cfg),
        ValueSummary::decl(&cfg),
        InitializerView::decl(&cfg),
        GraphView::decl(&cfg),
        PassView::decl(&cfg),
        StopView::decl(&cfg),
        MachineView::decl(&cfg),
        OutputCheck::decl(&cfg),
        EventView::decl(&cfg),
        UnitUsageView::decl(&cfg),
        CoreView::decl(&cfg),
        LinkView::decl(&cfg),
        SummaryView::decl(&cfg),
        Role::decl(&cfg),
        BufferSpec::decl(&cfg),
        ScratchpadSpec::decl(&cfg),
        ScalarSpec::decl(&cfg),
        TensorArgSpec::decl(&cfg),
        KtirInputs::decl(&cfg),
        Bound::decl(&cfg),
        Rates::decl(&cfg),
        Bounds::decl(&cfg),
        KernelRoofline::decl(&cfg),
        ProgramRoofline::decl(&cfg),
        Roofline::decl(&cfg),
        LatencyParamView::decl(&cfg),
        KernelLatency::decl(&cfg),
        LatencyModelReport::decl(&cfg),
        LayerCycles::decl(&cfg),
        SequenceView::decl(&cfg),
        PaddingCost::decl(&cfg),
        PageRead::decl(&cfg),
        PagedPlan::decl(&cfg),
        RunResult::decl(&cfg),
        LineRange::decl(&cfg),
        NodeLink::decl(&cfg),
        OpLink::decl(&cfg),
        KernelLink::decl(&cfg),
        SourceMap::decl(&cfg),
        Run::decl(&cfg),
        OpSdscLines::decl(&cfg),
        PassText::decl(&cfg),
        PassesApart::decl(&cfg),
        LinkEventView::decl(&cfg),
        CollectiveView::decl(&cfg),
        SegmentView::decl(&cfg),
        HostEventView::decl(&cfg),
        HostView::decl(&cfg),
        SystemCardView::decl(&cfg),
        SystemLinkView::decl(&cfg),
        SystemView::decl(&cfg),
        TpRun::decl(&cfg),
    ]
}

#[test]
fn generated_typescript_types_match_the_rust_types() {
    let mut out = String::from(
        "// Generated from the Rust types of crates/driver by ts-rs; do not edit.\n\
         // Regenerate with: UPDATE_EXPECT=1 cargo test -p driver --lib ts_types\n",
    );
    for d in declarations() {
        out.push('\n');
        out.push_str("export ");
        out.push_str(&d);
        out.push('\n');
    }
    expect_test::expect_file!["../../../web/src/generated/types.ts"].assert_eq(&out);
}
