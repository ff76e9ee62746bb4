import assert from "node:assert/strict";
import { UsageHistory } from "./container_usage.ts";
import {
  blame,
  type MemberFacts,
  type ProcessDeath,
  suspects,
  withoutNativeStack,
} from "./process_blame.ts";

const MIB = 2 ** 20;
const OOM: ProcessDeath = {
  status: { code: 133, signal: "SIGTRAP" },
  stderrTail: "# Fatal JavaScript out of memory: Reached heap limit",
  at: 10_000,
};
const KILLED: ProcessDeath = {
  status: { code: 137, signal: "SIGKILL" },
  stderrTail: "",
  at: 10_000,
};

function member(id: string, grownMb: number, serving = 0): MemberFacts {
  const history = new UsageHistory();
  history.record(10 * MIB, 0, 0, 8_000);
  history.record((10 + grownMb) * MIB, 100_000, 2, 9_000);
  return { id, usage: history.latest(), serving, memoryLimitBytes: 64 * MIB };
}

Deno.test("usage: the latest figures and their trend", () => {
  const usage = member("a", 30).usage!;
  assert.equal(usage.memoryBytes, 40 * MIB);
  assert.equal(usage.memoryGrowthBytes, 30 * MIB);
  assert.equal(usage.cpuShare, 0.1);
  assert.equal(usage.outboundInFlight, 2);
});

Deno.test("blame: the container ended by its limits just before the death", () => {
  const ends = [{ id: "flood", code: 86, why: "out of memory", at: 9_000 }];
  assert.equal(blame(OOM, [member("calm", 0)], ends)?.id, "flood");
  // Long before: it explains nothing.
  assert.equal(blame(KILLED, [member("calm", 0)], [{ ...ends[0], at: 1_000 }]), undefined);
});

Deno.test("blame: the one growing by far, else the one alone serving", () => {
  assert.equal(blame(OOM, [member("calm", 1), member("grow", 40)], [])?.id, "grow");
  // Growing, but far from its limit: V8 did not stop at its heap; the one serving did it.
  assert.equal(blame(OOM, [member("grow", 12), member("busy", 0, 1)], [])?.id, "busy");
  // Two growing alike: no one stands out.
  assert.equal(blame(OOM, [member("a", 30), member("b", 25)], []), undefined);
  assert.equal(blame(OOM, [member("calm", 0), member("busy", 0, 1)], [])?.id, "busy");
  assert.equal(blame(OOM, [member("a", 0, 1), member("b", 0, 1)], []), undefined);
});

Deno.test("blame: one serving and another clearly growing: both suspects, neither named", () => {
  // Off-heap memory (WebAssembly, Intl) charged to a sibling grows in its reports while V8's
  // heap limit stopped a worker allocating without yielding in its request; or a worker grew
  // its heap between two reports while an innocent sibling served: the node cannot tell.
  const members = [member("wasm", 90), member("bomb", 0, 1)];
  assert.equal(blame(OOM, members, []), undefined);
  assert.deepEqual(suspects(OOM, members).ids, ["bomb", "wasm"]);
  assert.match(suspects(OOM, members).why, /1 container was serving requests and one's memory/);
});

Deno.test("suspects: those serving when the process aborted, else all; none when killed", () => {
  const members = [member("bomb", 0, 1), member("flood", 0, 1), member("idle", 0)];
  assert.equal(blame(OOM, members, []), undefined);
  assert.deepEqual(suspects(OOM, members).ids, ["bomb", "flood"]);
  assert.match(suspects(OOM, members).why, /2 containers were serving requests \(bomb, flood\)/);
  assert.deepEqual(suspects(OOM, [member("a", 30), member("b", 25)]).ids, ["a", "b"]);
  assert.deepEqual(suspects(KILLED, members).ids, []);
});

Deno.test("blame: a kill from outside with no evidence names no one", () => {
  assert.equal(blame(KILLED, [member("a", 0), member("b", 0)], []), undefined);
});

Deno.test("a container's log gets no native stack", () => {
  const tail = "# Fatal JavaScript out of memory: Reached heap limit\n#\n" +
    "==== C stack trace ===============================\n" +
    "    /usr/lib/node_modules/deno/deno(+0x28b0d2e) [0x559ba1e7ad2e]";
  assert.equal(withoutNativeStack(tail), "# Fatal JavaScript out of memory: Reached heap limit\n#");
});
