/**
 * A client's container process (mcm.containerProcess `per-client`): one process hosts all the
 * containers of one client that share its flags, each container a sandboxed worker without any
 * permission, and the host of each (storage, outbound requests, watchdog: container_host.ts) on
 * this thread. A container then costs a worker (a V8 isolate and a thread), not a process with
 * two of them, and starts in the time a worker takes to load.
 *
 * The process keeps one sandboxed worker loaded ahead, its channel waiting for a take, which
 * the next container takes: a start is then the take and the microservice's own load (about
 * 8 ms). Its memory (about 6 MiB) is the process's, not a container's.
 *
 * The node speaks to it in group frames (group_frames.ts): `open` a container on a slot, its
 * channel's bytes on that slot (relayed to and from the worker's byte port unparsed), `close`
 * or `kill` it; the process answers `ended` with the code and reason the container would have
 * had as a process of its own.
 *
 * Memory: each worker's heap and external memory is checked against its MCM.MEMORY_MB from its
 * samples (watchdog.ts), and V8's heap limit (the process's --max-old-space-size) applies to
 * each worker's heap. A worker that allocates buffers without yielding sends no sample, so the
 * process's resident memory is checked too, against its containers' limits added up: over it,
 * the container most likely at fault ends (one silent while serving, else one silent, else the
 * largest). What one client's code does to memory reaches that client's containers only.
 *
 * CPU: a worker here does not measure its own CPU time (that costs it a third of its memory:
 * host_globals.ts), and this thread cannot read another thread's: Deno refuses /proc (even
 * /proc/self/task, even through a link) to any process without --allow-all, and a web Worker's
 * CPU time (Node's `worker.cpuUsage()`) is not exposed. So the process's CPU time is measured,
 * less this thread's own (measured exactly: the relaying and the node's frames are the node's
 * work, never a container's), and what is left is shared out among the workers by how late
 * their periodic reports came (a worker that was busy when its report was due) and whether
 * they served requests; each container's budget while it serves nothing is kept with its share
 * (watchCpu). The estimate can spread a container's CPU time over its idle siblings (short
 * bursts that never delay a report): then the client's containers together, not each one, are
 * held to their idle budgets. A worker that runs without yielding is caught as in a process of
 * its own, by its silence.
 *
 * Outbound requests are the host's (outbound_relay.ts): bounded per container, counted in its
 * memory here, aborted when it ends.
 *
 * @module
 */
import process from "node:process";
import { hostContainer } from "./container_host.ts";
import {
  CONTROL_SLOT,
  encodeGroupFrames,
  type GroupControl,
  type GroupEvent,
  GroupFrameDecoder,
} from "./group_frames.ts";
import type { OutboundRelay } from "./outbound_relay.ts";
import { CoalescingWriter } from "../../tunnel/pipe_frames.ts";
import { type ContainerWatch, EXIT_OUT_OF_MEMORY, SAMPLE_MS } from "./watchdog.ts";

/** The process's own memory beyond its containers' (Deno, this thread), MiB. */
const PROCESS_BASE_MB = 96;
/** A worker's own memory beyond its MCM.MEMORY_MB (its isolate and thread), MiB. */
const WORKER_BASE_MB = 24;
const MEMORY_CHECK_MS = 100;
/** After a container took the loaded worker, the next is loaded this much later. */
const SPARE_WORKER_DELAY_MS = 250;
const CPU_CHECK_MS = 250;
/** How often the node hears each container's usage (a `usage` event). */
const USAGE_MS = 500;
/** What serving a request weighs when the process's CPU time is shared out, in report lag. */
const SERVING_WEIGHT_MS = CPU_CHECK_MS;
/** A worker that has not reported for this long is busy without a break (SAMPLE_MS apart). */
const SILENT_MS = SAMPLE_MS + 100;
/** Over the budget with every worker reporting, the largest ends after this long. */
const OVER_GRACE_MS = 2000;
/** After ending a container for memory, the next check waits this long for the memory to go. */
const MEMORY_COOLDOWN_MS = 1000;
/** Exit code of a worker that failed (as a process whose worker failed: container_host_main). */
const EXIT_WORKER_FAILED = 70;

const MIB = 2 ** 20;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Where the client's process runs. */
export interface TenantSurroundings {
  stdin: ReadableStream<Uint8Array>;
  stdout: WritableStream<Uint8Array>;
  /** Starts a worker of the sandbox (named GROUP_SANDBOX) without any permission. */
  startSandbox(): Worker;
}

interface Member {
  worker: Worker;
  /** The port of the container's channel bytes. */
  pipe: MessagePort;
  watch?: ContainerWatch;
  /** Its share of the process's memory, bytes. */
  budget: number;
  /** Its CPU time as estimated so far (watchCpu), microseconds. */
  cpuMicros: number;
  /** Its outbound requests (aborted when it ends). */
  outbound?: OutboundRelay;
}

/** Hosts a client's containers until the node closes the process's stdin. */
export async function hostTenant(surroundings: TenantSurroundings): Promise<void> {
  const members = new Map<number, Member>();
  const out = surroundings.stdout.getWriter();
  const writer = new CoalescingWriter((bytes) => out.write(bytes), () => {});
  const send = (slot: number, bytes: Uint8Array) => writer.push(encodeGroupFrames(slot, bytes));
  const event = (message: GroupEvent) =>
    send(CONTROL_SLOT, encoder.encode(JSON.stringify(message)));

  const end = (slot: number, code: number, why?: string) => {
    const member = members.get(slot);
    if (!member) return;
    members.delete(slot);
    member.watch?.stop();
    member.outbound?.close();
    member.worker.terminate();
    member.pipe.close();
    event({ t: "ended", slot, code, ...(why ? { why } : {}) });
  };

  // One sandboxed worker loaded ahead with its ports, its channel already waiting for a take:
  // the next container takes it and skips loading the sandbox (most of a start). Another is
  // loaded a moment after each take.
  type Loaded = { worker: Worker; host: MessagePort; pipe: MessagePort };
  const load = (): Loaded => {
    const worker = surroundings.startSandbox();
    const link = new MessageChannel();
    const pipe = new MessageChannel();
    worker.postMessage({ host: link.port1, pipe: pipe.port1 }, [link.port1, pipe.port1]);
    return { worker, host: link.port2, pipe: pipe.port2 };
  };
  let spare: Loaded | undefined;
  let refill: ReturnType<typeof setTimeout> | undefined;
  const loadSpare = () => {
    const loaded = load();
    loaded.worker.onerror = (error) => {
      // It never served: the next container loads one of its own.
      error.preventDefault();
      if (spare === loaded) spare = undefined;
      loaded.worker.terminate();
    };
    spare = loaded;
  };
  const takeLoaded = (): Loaded => {
    const loaded = spare ?? load();
    spare = undefined;
    clearTimeout(refill);
    refill = setTimeout(() => spare ?? loadSpare(), SPARE_WORKER_DELAY_MS);
    return loaded;
  };

  // From the start: a spare process's first container starts as fast as its next ones.
  loadSpare();

  const open = (slot: number) => {
    if (members.has(slot)) return;
    const { worker, host, pipe } = takeLoaded();
    const member: Member = {
      worker,
      pipe,
      budget: WORKER_BASE_MB * MIB,
      cpuMicros: 0,
    };
    members.set(slot, member);
    pipe.onmessage = (message: MessageEvent<Uint8Array>) => send(slot, message.data);
    worker.onerror = (error) => {
      error.preventDefault();
      end(slot, EXIT_WORKER_FAILED, `the microservice's worker failed: ${error.message}`);
    };
    hostContainer({
      startSandbox: () => host,
      exit: (code, why) => end(slot, code, why),
      memory: "worker",
      onWatch: (watch, limits, outbound) => {
        member.watch = watch;
        member.outbound = outbound;
        member.budget = limits.heapBytes + WORKER_BASE_MB * MIB;
      },
    });
  };

  const memory = watchMemory(members, end);
  const cpu = watchCpu(members);
  // The node's records of each container (what it blames a dead process on, what its record
  // shows): memory as counted here, CPU as charged, outbound requests open.
  const usage = setInterval(() => {
    if (members.size === 0) return;
    event({
      t: "usage",
      usage: [...members].map(([slot, member]) => [
        slot,
        memoryOf(member),
        Math.round(member.cpuMicros),
        member.outbound?.inFlight() ?? 0,
      ]),
    });
  }, USAGE_MS);
  try {
    const frames = new GroupFrameDecoder();
    for await (const chunk of surroundings.stdin) {
      for (const { slot, payload } of frames.push(chunk)) {
        if (slot !== CONTROL_SLOT) {
          members.get(slot)?.pipe.postMessage(payload, [payload.buffer as ArrayBuffer]);
          continue;
        }
        const control = JSON.parse(decoder.decode(payload)) as GroupControl;
        if (control.t === "open") open(control.slot);
        else if (control.t === "close") members.get(control.slot)?.pipe.postMessage(null);
        else if (control.t === "kill") end(control.slot, 137);
      }
    }
  } finally {
    // The node closed the process: it has no container left, or it is shutting down.
    clearInterval(memory);
    clearInterval(cpu);
    clearInterval(usage);
    clearTimeout(refill);
    spare?.worker.terminate();
    for (const slot of [...members.keys()]) end(slot, 0);
  }
}

/** Checks the process's memory against its containers' shares (see the module's text). */
function watchMemory(
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
function memoryOf(member: Member): number {
  return (member.watch?.heap() ?? 0) + (member.outbound?.heldBytes() ?? 0);
}

/**
 * Charges each container its share of the process's CPU time (see the module's text): every
 * CPU_CHECK_MS, the process's CPU time beyond this thread's own goes to the containers in
 * proportion to how late their reports came in that time (a worker busy when its report was
 * due), evenly where none came late; each container's watchdog counts what it was charged as it
 * counts a measured thread's, against its budget while it serves nothing.
 */
function watchCpu(members: Map<number, Member>): ReturnType<typeof setInterval> {
  const micros = () => {
    // The whole process's, less this thread's (it runs Node's layer anyway: node:sqlite).
    const all = process.cpuUsage();
    const own = process.threadCpuUsage();
    return all.user + all.system - own.user - own.system;
  };
  let last = micros();
  return setInterval(() => {
    const now = micros();
    const spent = now - last;
    last = now;
    const watched = [...members.values()].filter((member) => member.watch);
    // A container that served in this time may have used any of it (serving is not charged).
    // A report overdue now is lateness too: that worker is busy this very moment.
    const weights = watched.map(({ watch }) =>
      watch!.takeLag() + Math.max(0, watch!.silence() - SAMPLE_MS) +
      (watch!.takeBusy() ? SERVING_WEIGHT_MS : 0)
    );
    const total = weights.reduce((sum, weight) => sum + weight, 0);
    watched.forEach((member, i) => {
      const share = total > 0 ? weights[i] / total : 1 / watched.length;
      member.cpuMicros += Math.max(0, spent) * share;
      member.watch!.charge(member.cpuMicros);
    });
  }, CPU_CHECK_MS);
}
