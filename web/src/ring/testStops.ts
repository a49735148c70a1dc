// The ring the ring's unit tests draw on.

import type { RingStop } from "../api";

/** 4 cores then one memory stop: ring order core0, core1, mem, core2, core3. */
export const stops: RingStop[] = [
  { kind: "core", index: 0, label: "c0" },
  { kind: "core", index: 1, label: "c1" },
  { kind: "memory", index: 0, label: "M0" },
  { kind: "core", index: 2, label: "c2" },
  { kind: "core", index: 3, label: "c3" },
];
