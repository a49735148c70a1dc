// The status line of a run under way: what it is doing, how far it has come, for how long.

import type { RunProgress } from "./api";
import type { RunResult } from "./protocol";

/** Longest run a link may start on its own (edited KTIR or a file in the link); see docs/limits.md. */
export const LINK_RUN_BUDGET_MS = 10_000;

/**
 * "compiling… 3 s", "compiling… pass ktir · 40% · 3 s", "executing 42% · 3 s",
 * "scheduling 80% · 4 s". Before the first report the run is still loading (`before` says
 * which word to use: "compiling" or "running KTIR").
 */
export function progressText(before: string, p: RunProgress | null, elapsedMs: number): string {
  const secs = Math.max(0, Math.floor(elapsedMs / 1000));
  const time = secs > 0 ? ` · ${secs} s` : "";
  if (!p) return `${before}…${time}`;
  const total = Math.max(1, p.total, p.done);
  // The step total is an estimate: say 99% until the phase really ends.
  const pct = p.done >= total ? 100 : Math.min(99, Math.floor((p.done * 100) / total));
  if (p.phase === "compile") {
    const pass = p.pass ? `pass ${p.pass} · ` : "";
    return `compiling… ${pass}${pct}%${time}`;
  }
  const what = p.phase === "execute" ? "executing" : "scheduling";
  return `${what} ${pct}%${time}`;
}

/** The message for a run stopped before its end. */
export function stoppedText(reason: "cancelled" | "budget", budgetMs = LINK_RUN_BUDGET_MS): string {
  return reason === "budget"
    ? `the run did not finish within the ${budgetMs / 1000} s time budget for links and was stopped`
    : "the run was cancelled";
}

/**
 * The status line after a run: "name · compiled (cache hit, 12 ms) and simulated in 900 ms",
 * "(cold, 1200 ms)" when the compile ran, a KTIR module's "verified and simulated"; a note
 * from a failing compile cache follows.
 */
export function runStatusText(
  res: Pick<RunResult, "kind" | "compileCache"> & { result: { graph: { name: string } } },
  totalMs: number,
): string {
  const name = res.result.graph.name;
  if (res.kind === "ktir") return `${name} · verified and simulated in ${totalMs} ms`;
  const c = res.compileCache;
  let compiled = "compiled";
  if (c && c.outcome !== "off") {
    const ms = `${Math.round(c.compileMs)} ms`;
    const how =
      c.outcome === "hit"
        ? `cache hit, ${ms}`
        : c.outcome === "bypassed"
          ? `not cached, ${ms}`
          : c.outcome === "rebuilt"
            ? `cold, ${ms}, stored entry rebuilt`
            : `cold, ${ms}`;
    compiled = `compiled (${how})`;
  }
  const note = c?.note ? ` · ${c.note}` : "";
  return `${name} · ${compiled} and simulated in ${totalMs} ms${note}`;
}
