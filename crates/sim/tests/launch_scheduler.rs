//! Scheduling each launch as it ends (`Simulator::schedule_each_launch`): the schedule is
//! the one the whole task list gives, and the tasks of a scheduled launch stop counting
//! against the task-byte limit while their events do.

use sim::timing::{schedule_launches, task_footprint, Event, Limits, SCHEDULER_BYTES_PER_TASK};
use sim::{ExecLimits, LineLookup, Machine, Simulator};

mod common;
use common::{module, program};

/// Runs `add_rows` three times (the second a replay of the first) on a timing-only
/// simulator with `limit` task bytes, scheduling each launch as it ends or not.
fn run(
    machine: &Machine,
    limit: u64,
    each: bool,
) -> Result<(Simulator<'_>, Option<sim::timing::Schedule>), String> {
    let text = program("add_rows.mlir");
    let m = module(&text);
    let limits = ExecLimits {
        max_task_bytes: limit,
        ..ExecLimits::default()
    };
    let mut sim = Simulator::new_timing_only(machine, limits);
    if each {
        sim.schedule_each_launch().map_err(|e| e.to_string())?;
    }
    let ba = sim.reserve("a", ktir::ScalarType::F16, 64 * 64).unwrap();
    let bb = sim.reserve("b", ktir::ScalarType::F16, 64 * 64).unwrap();
    let bc = sim.reserve("c", ktir::ScalarType::F16, 64 * 64).unwrap();
    let lines = LineLookup::new(&text);
    sim.launch(&m, &lines, "add_rows", &[ba, bb, bc])
        .map_err(|e| e.to_string())?;
    sim.replay_launch(0, "add_rows", 7)
        .map_err(|e| e.to_string())?;
    sim.launch(&m, &lines, "add_rows", &[ba, bb, bc])
        .map_err(|e| e.to_string())?;
    let sched = sim.take_schedule();
    Ok((sim, sched))
}

#[test]
fn launches_scheduled_as_they_end_give_the_whole_lists_schedule() {
    let machine = Machine::preset("tiny4").unwrap();
    let (whole, none) = run(&machine, u64::MAX, false).unwrap();
    assert!(none.is_none());
    let plan = whole.launch_plan().unwrap();
    let want = schedule_launches(
        &machine,
        whole.tasks(),
        &plan,
        &Limits::sized_for(whole.tasks()),
        &mut |_, _| {},
    )
    .unwrap();
    let (each, got) = run(&machine, u64::MAX, true).unwrap();
    let got = got.unwrap();
    assert_eq!(got, want);
    assert_eq!(got.event_count(), 3 * got.events.len() / 2);
    // Every launch was let go once scheduled.
    assert!(each.tasks().is_empty());
    assert!(each.launch_plan().is_err());
    assert_eq!(each.steps(), whole.steps());
}

/// Held tasks count their records and events; scheduled ones only their events. The two
/// interpreted launches are equally long, so the run holds most when the second is
/// recorded: every event, the second launch's records, and the scheduler's state for it.
#[test]
fn scheduled_launches_count_only_their_events() {
    let machine = Machine::preset("tiny4").unwrap();
    let (whole, _) = run(&machine, u64::MAX, false).unwrap();
    let tasks = whole.tasks();
    let half = tasks.len() / 2;
    let event = std::mem::size_of::<Event>() as u64;
    let held: u64 = tasks[half..].iter().map(task_footprint).sum();
    let needed = held + half as u64 * event + half as u64 * SCHEDULER_BYTES_PER_TASK;
    let all: u64 = tasks.iter().map(task_footprint).sum();
    assert!(needed < all + half as u64 * SCHEDULER_BYTES_PER_TASK);
    assert!(run(&machine, needed, true).is_ok());
    let e = run(&machine, needed - 1, true).err().unwrap();
    assert!(e.contains("by 1 bytes"), "{e}");
    // Without scheduling as they end, the same limit stops the run.
    assert!(run(&machine, needed, false).is_err());
}

#[test]
fn scheduling_as_launches_end_starts_with_the_run() {
    let machine = Machine::preset("tiny4").unwrap();
    let text = program("add_rows.mlir");
    let m = module(&text);
    let mut sim = Simulator::new_timing_only(&machine, ExecLimits::default());
    let a = sim.reserve("a", ktir::ScalarType::F16, 64 * 64).unwrap();
    sim.launch(&m, &LineLookup::new(&text), "add_rows", &[a, a, a])
        .unwrap();
    assert!(sim.schedule_each_launch().is_err());
    assert!(sim.take_schedule().is_none());
}
