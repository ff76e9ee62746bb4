/**
 * Who brought down a client's process (mcm.containerProcess `per-client`): when the process
 * that hosts several containers dies (V8 aborts it on a heap limit, a native crash, a kill), the
 * node names the container that caused it from its own records, or no one. It never guesses: a
 * container is named only when the evidence singles it out, in this order:
 *
 * 1. it was ended by its own limits (memory, CPU) just before the process died (its requests
 *    or buffers outlived it on the process's main thread);
 * 2. it is the one container that was serving a request when the process died (a worker that
 *    allocates without yielding sends no report: it was serving the request that made it), and
 *    no other container's memory was clearly growing;
 * 3. nobody was serving, and its memory, as the process last reported it, is past half its
 *    limit (V8's heap limit is each worker's) and grew over the last reports by far more than
 *    any other's.
 *
 * When the process died of its own doing (V8's heap limit, a crash signal) and none of these
 * singles one out, the containers that were serving a request then and the one clearly growing
 * (or, if none was serving, all of them) are suspects: one of them did it. Each suspect's end counts as its own and toward its
 * quarantine, so that after two such ends the one that did it runs alone and its siblings stop
 * paying for it; the others are bystanders. A kill from outside (SIGKILL, SIGTERM) or a plain
 * exit blames no one, and every container's end counts as its own, as before.
 *
 * @module
 */
import type { ExitStatus } from "./container_process.ts";
import type { ContainerUsage } from "./container_usage.ts";

/** What the node knows of a container in the process when it died. */
export interface MemberFacts {
  /** The container's id, as its siblings' records name it. */
  id: string;
  /** Its latest figures from the process's usage events, if any came. */
  usage: ContainerUsage | undefined;
  /** Its memory limit (MCM.MEMORY_MB), bytes. */
  memoryLimitBytes: number;
  /** Requests it was serving when the process died. */
  serving: number;
}

/** A container the process ended by its limits shortly before the process itself died. */
export interface RecentEnd {
  id: string;
  /** Its exit code (watchdog.ts's) and reason, as the process sent them. */
  code: number;
  why: string | undefined;
  at: number;
}

/** How the process ended, as the node saw it. */
export interface ProcessDeath {
  status: ExitStatus;
  /** The last of its error output. */
  stderrTail: string;
  at: number;
}

/** The container blamed, and why, in a user's words (with its figures). */
export interface Blame {
  id: string;
  why: string;
}

/** How close before the process's death a container's own end still explains it. */
const RECENT_END_MS = 3000;
/** Exit codes of a container ended by its own limits (watchdog.ts). */
const LIMIT_CODES = new Set([86, 87]);
/** Memory growth that counts as growing: at least this much… */
const GROWTH_FLOOR_BYTES = 8 * 2 ** 20;
/** …and this many times any other container's growth. */
const GROWTH_LEAD = 2;

const MIB = 2 ** 20;

/** What killed the process, in a user's words. */
export function deathCause(death: ProcessDeath): string {
  const { status, stderrTail } = death;
  // V8 ends a process whose heap cannot grow with SIGTRAP, its message maybe scrolled out.
  if (/out of memory|heap limit/i.test(stderrTail) || status.signal === "SIGTRAP") {
    return "V8 ran out of heap memory";
  }
  if (status.signal === "SIGKILL") return "it was killed (SIGKILL: the kernel out of memory?)";
  if (status.signal) return `it was ended by ${status.signal}`;
  return `it exited with code ${status.code}`;
}

/**
 * A dead process's last error output as a container's log may show it: without V8's native
 * stack trace (its frames name the runtime's files on the host), which the node's own log keeps.
 */
export function withoutNativeStack(tail: string): string {
  const cut = tail.indexOf("==== C stack trace");
  const kept = cut >= 0 ? tail.slice(0, cut) : tail;
  return kept.split("\n").filter((line) => !/\(\+0x[0-9a-f]+\)/.test(line)).join("\n").trim();
}

/** The container's figures, for its record's lastError. */
export function describeUsage(usage: ContainerUsage | undefined, serving: number): string {
  const parts: string[] = [];
  if (usage) {
    const growth = usage.memoryGrowthBytes;
    parts.push(
      `memory ${(usage.memoryBytes / MIB).toFixed(1)} MiB${
        growth > 0 ? ` (grew ${(growth / MIB).toFixed(1)} MiB in its last reports)` : ""
      }`,
      `CPU ${Math.round(usage.cpuShare * 100)}% of a core`,
    );
    if (usage.outboundInFlight) parts.push(`${usage.outboundInFlight} outbound requests in flight`);
  }
  if (serving > 0) parts.push(`serving ${serving} request${serving === 1 ? "" : "s"}`);
  return parts.join(", ");
}

/** The container that brought the process down (see the module's text), or undefined. */
export function blame(
  death: ProcessDeath,
  members: MemberFacts[],
  recentEnds: RecentEnd[],
): Blame | undefined {
  const cause = deathCause(death);
  const ended = recentEnds.findLast((end) =>
    LIMIT_CODES.has(end.code) && death.at - end.at <= RECENT_END_MS
  );
  if (ended) {
    return {
      id: ended.id,
      why: `${cause} ${Math.round((death.at - ended.at) / 100) / 10} s after this container ` +
        `was ended${ended.why ? ` (${ended.why})` : ""}`,
    };
  }
  const serving = members.filter((member) => member.serving > 0);
  const grower = clearGrower(members);
  if (serving.length === 1 && (!grower || grower === serving[0])) {
    return {
      id: serving[0].id,
      why: `${cause} while this container alone was serving a request (${figures(serving[0])})`,
    };
  }
  // One serving and another growing: either may have done it (suspects), neither is named.
  if (serving.length > 0 || !grower) return undefined;
  return {
    id: grower.id,
    why: `${cause}; this container's memory was growing (${figures(grower)})`,
  };
}

/**
 * The container whose memory grew by far the most over the last reports and is past half its
 * limit, if one did: a sibling growing legitimately far from its limit is not the one V8
 * stopped at its limit.
 */
function clearGrower(members: MemberFacts[]): MemberFacts | undefined {
  const growth = (member: MemberFacts) => (member.usage?.memoryGrowthBytes ?? 0);
  const [top, next] = [...members].sort((a, b) => growth(b) - growth(a));
  const clear = top && growth(top) >= GROWTH_FLOOR_BYTES &&
    growth(top) >= GROWTH_LEAD * Math.max(0, next ? growth(next) : 0) &&
    (top.usage?.memoryBytes ?? 0) >= top.memoryLimitBytes / 2;
  return clear ? top : undefined;
}

/** Signals of a process that ended by its own doing (V8's abort on its heap limit, a crash). */
const SELF_INFLICTED = new Set(["SIGTRAP", "SIGABRT", "SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE"]);

/**
 * When {@link blame} names no one: the containers one of which brought the process down (see
 * the module's text), with why in a user's words; empty for a kill from outside or a plain
 * exit.
 */
export function suspects(
  death: ProcessDeath,
  members: MemberFacts[],
): { ids: string[]; why: string } {
  const selfInflicted = SELF_INFLICTED.has(death.status.signal ?? "") ||
    /out of memory|heap limit/i.test(death.stderrTail);
  if (!selfInflicted || members.length === 0) return { ids: [], why: "" };
  const serving = members.filter((member) => member.serving > 0);
  const grower = clearGrower(members);
  const chosen = serving.length > 0
    ? [...serving, ...(grower && !serving.includes(grower) ? [grower] : [])]
    : members;
  const ids = chosen.map((member) => member.id);
  const among = serving.length > 0
    ? `while ${serving.length} container${serving.length === 1 ? " was" : "s were"} serving ` +
      `requests${grower && !serving.includes(grower) ? " and one's memory was growing" : ""} ` +
      `(${ids.join(", ")})`
    : `while none was serving a request (${ids.join(", ")})`;
  return { ids, why: `${deathCause(death)} ${among}: one of them did it` };
}

/** How a container in a shared process ended, judged (tenant_process.ts's SlotVerdict). */
export type Verdict =
  /** This container brought the process down, or (`suspect`) may have: see suspects(). */
  | { culprit: true; why: string; suspect?: boolean }
  /** Another container (`by`) brought it down: this one's end is not its own failure. */
  | { culprit: false; by: string; cause: string };

/** The reason a container's record shows for an end judged so, and whether its code did it. */
export function verdictReason(verdict: Verdict): { reason: string; byCode: boolean } {
  if (verdict.culprit && verdict.suspect) {
    return { reason: `its client's process died, ${verdict.why}`, byCode: true };
  }
  return verdict.culprit
    ? { reason: `it brought down its client's process: ${verdict.why}`, byCode: true }
    : {
      reason: `restarted because container ${verdict.by} brought down the process it shared ` +
        `with it (${verdict.cause}); not a failure of this container`,
      byCode: false,
    };
}

function figures(member: MemberFacts): string {
  return describeUsage(member.usage, member.serving) || "no figures reported";
}
