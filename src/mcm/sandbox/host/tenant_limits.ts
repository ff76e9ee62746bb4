/**
 * The limits a client's process keeps over its containers together (tenant_host.ts): the
 * process's memory against their shares, and each one's share of the process's CPU time while
 * it serves nothing (tenant_host.ts's module text says how, and why by estimate).
 *
 * @module
 */
import process from "node:process";
import type { BusyProbe } from "./busy_probe.ts";
import type { OutboundRelay } from "./outbound_relay.ts";
import { EXIT_OUT_OF_MEMORY } from "../channel_protocol.ts";
import { SAMPLE_MS } from "../host_protocol.ts";
import { type ContainerWatch, LAG_JITTER_MS } from "./watchdog.ts";

/** The process's own memory beyond its containers' (Deno, this thread), MiB. */
const PROCESS_BASE_MB = 96;
const MEMORY_CHECK_MS = 100;
const CPU_CHECK_MS = 250;
/** Checks after a container's end whose CPU time is charged to none of its siblings. */
const SETTLING_CHECKS = 2;
/** What serving a request weighs when the process's CPU time is shared out, in report lag. */
const SERVING_WEIGHT_MS = CPU_CHECK_MS;
/** The workers together busier than this share of a core: worth finding which one (probes). */
const BUSY_SHARE = 0.05;
/** How much of a container's lateness history one check replaces (about 2.5 s of checks). */
const LATENESS_SMOOTHING = 0.1;
/** A worker that has not reported for this long is busy without a break (SAMPLE_MS apart). */
const SILENT_MS = SAMPLE_MS + 100;
/** Over the budget with every worker reporting, the largest ends after this long. */
const OVER_GRACE_MS = 2000;
/** After ending a container for memory, the next check waits this long for the memory to go. */
const MEMORY_COOLDOWN_MS = 1000;
const MIB = 2 ** 20;

/** One container of the process, as its limits see it. */
export interface Member {
  worker: Worker;
  /**
   * The port of the container's channel bytes; where its worker connected to the node itself
   * (`direct`), only the host's pings and their pongs cross it.
   */
  pipe: MessagePort;
  /** Its worker speaks to the node over its own connection (runtime/channel_socket.ts). */
  direct?: boolean;
  watch?: ContainerWatch;
  /** Its share of the process's memory, bytes. */
  budget: number;
  /** Its CPU time as estimated so far (watchCpu), microseconds. */
  cpuMicros: number;
  /** How late its reports came lately, on average (watchCpu's weights, smoothed). */
  lateness: number;
  /** Pings it at random moments: how late it answers says whether it was busy. */
  probe: BusyProbe;
  /** Its outbound requests (aborted when it ends). */
  outbound?: OutboundRelay;
}

/** Checks the process's memory against its containers' shares (see the module's text). */
export function watchMemory(
  members: Map<number, Member>,
  end: (slot: number, code: number, why: string) => void,
): ReturnType<typeof setInterval> {
  let quietUntil = 0;
  let overSince: number | undefined;
  return setInterval(() => {
    if (members.size === 0 || Date.now() < quietUntil) return;
    const rss = Deno.memoryUsage().rss;
    let budget = PROCESS_BASE_MB * MIB;
    for (const member of members.values()) budget += member.budget;
    if (rss <= budget) {
      overSince = undefined;
      return;
    }
    overSince ??= Date.now();
    // A worker that reports is checked by its own samples (its heap and buffers): the one at
    // fault is one that stopped reporting, serving a request first. Only when none is silent
    // and the memory stays over does the largest go.
    const silent = (member: Member) => (member.watch?.silence() ?? 0) > SILENT_MS;
    const rank = (member: Member) =>
      (silent(member) ? (member.watch?.serving() ? 2 : 1) : 0) * 2 ** 52 + memoryOf(member);
    const [slot, worst] = [...members].reduce((a, b) => rank(b[1]) > rank(a[1]) ? b : a);
    if (!silent(worst) && Date.now() - overSince < OVER_GRACE_MS) return;
    quietUntil = Date.now() + MEMORY_COOLDOWN_MS;
    overSince = undefined;
    end(
      slot,
      EXIT_OUT_OF_MEMORY,
      `out of memory: its client's process used ${Math.round(rss / MIB)} MB of the ${
        Math.round(budget / MIB)
      } MB its containers may use together, and this container was the one growing`,
    );
  }, MEMORY_CHECK_MS);
}

/** A container's memory as this process knows it: its worker's report and what the host holds. */
export function memoryOf(member: Member): number {
  return (member.watch?.heap() ?? 0) + (member.outbound?.heldBytes() ?? 0);
}

/**
 * Charges each container its share of the process's CPU time (see the module's text): every
 * CPU_CHECK_MS, the process's CPU time beyond this thread's own goes to the containers in
 * proportion to how late their reports came in that time (a worker busy when its report was
 * due), evenly where none came late; each container's watchdog counts what it was charged as it
 * counts a measured thread's, against its budget while it serves nothing.
 */
export function watchCpu(
  members: Map<number, Member>,
  /** Hears whether the workers used more than a trace of CPU in the last check. */
  onSpent: (busy: boolean) => void = () => {},
): ReturnType<typeof setInterval> {
  // Where a thread's own CPU time cannot be read (threadCpuUsage throws), this thread's work
  // is shared out with the rest, as the workers' own.
  const ownMicros = () => {
    try {
      const own = process.threadCpuUsage();
      return own.user + own.system;
    } catch {
      return 0;
    }
  };
  const micros = () => {
    // The whole process's, less this thread's (it runs Node's layer anyway: node:sqlite).
    const all = process.cpuUsage();
    return all.user + all.system - ownMicros();
  };
  let last = micros();
  let before = new Set<Member>();
  let settling = 0;
  return setInterval(() => {
    const now = micros();
    const spent = Math.max(0, now - last);
    onSpent(spent > BUSY_SHARE * CPU_CHECK_MS * 1000);
    last = now;
    const watched = [...members.values()].filter((member) => member.watch);
    // A container just ended: its thread's last work (terminating, its heap freed) lands in the
    // next checks, with nobody left to have been seen busy for it but its siblings: charged to
    // none of them.
    const current = new Set(watched);
    if ([...before].some((member) => !current.has(member))) settling = SETTLING_CHECKS;
    before = current;
    if (settling > 0) {
      settling--;
      for (const member of watched) member.watch!.charge(member.cpuMicros);
      return;
    }
    // A worker loading its code (before its first report) is busy with it: what the process
    // spent now is put down to it (not against its budget until its first report: watchdog.ts),
    // never to a sibling, whose scheduler noise would otherwise be the only lateness seen.
    const loading = watched.filter(({ watch }) => watch!.heap() === 0);
    if (loading.length > 0) {
      for (const member of loading) member.cpuMicros += spent / loading.length;
      for (const member of watched) member.watch!.charge(member.cpuMicros);
      return;
    }
    // A container that served in this time may have used any of it (serving is not charged).
    // A report overdue now is lateness too: that worker is busy this very moment. Lateness
    // within LAG_JITTER_MS is the scheduler's, not a busy thread's (watchdog.ts).
    // Squared: a busy spell delays a report by tens of ms, a loaded machine's scheduler an idle
    // thread's by a few, which then weigh a hundredth, not a tenth.
    // An answer late for every container was late on this thread (busy starting a worker,
    // say): only what one was later than the most prompt counts.
    const late = watched.map(({ probe }) => probe.takeLate());
    const floor = watched.length > 1 ? Math.min(...late) : 0;
    // No more than the whole time is counted for one check.
    const weights = watched.map(({ watch }, i) =>
      Math.min(
        CPU_CHECK_MS,
        late[i] - floor + watch!.takeLag() +
          Math.max(0, watch!.silence() - SAMPLE_MS - LAG_JITTER_MS),
      ) ** 2
    );
    // Serving weighs in this time only (its time is not charged: watchdog.ts), never later.
    const serving = watched.map(({ watch }) => watch!.takeBusy() ? SERVING_WEIGHT_MS ** 2 : 0);
    // Shared out by the lateness of the last seconds, not of this moment alone: a busy
    // loop's is there most of the time, an idle thread's (the scheduler's on a loaded machine)
    // now and then. With none seen at all, to nobody: an idle sibling is never charged for
    // what it did not do.
    watched.forEach((member, i) => {
      member.lateness += (weights[i] - member.lateness) * LATENESS_SMOOTHING;
    });
    const history = watched.reduce((sum, member, i) => sum + member.lateness + serving[i], 0);
    watched.forEach((member, i) => {
      if (history > 0) member.cpuMicros += spent * (member.lateness + serving[i]) / history;
      member.watch!.charge(member.cpuMicros);
    });
  }, CPU_CHECK_MS);
}
