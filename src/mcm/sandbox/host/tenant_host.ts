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
 * The node speaks to it in group frames (group_frames.ts): `open` a container on a slot, `close`
 * or `kill` it; the process answers `ended` with the code and reason the container would have
 * had as a process of its own. A container's channel does not cross this thread where the node
 * listens on a socket for the process (`group SOCKET`, src/mcm/runtime/channel_socket.ts): its
 * `open` carries a token, which this thread hands the worker, and the worker connects and
 * speaks to the node itself (its permissions: that socket's path, nothing else). Otherwise its
 * bytes come and go on its slot, relayed to and from the worker's byte port unparsed.
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
 * less this thread's own (measured exactly: any relaying and the node's frames are the node's
 * work, never a container's), and shared out among the workers by how busy each was seen
 * (tenant_limits.ts, watchCpu): pinged at random moments through its byte port (busy_probe.ts),
 * a busy thread answers late; its periodic reports come late too; a worker serving a request
 * may have used any of it (and is not charged for that time). The lateness of the last
 * seconds decides, squared (a busy spell delays tens of ms, a loaded machine's scheduler a
 * few), so a loop busy 40 ms in every 100 ms is charged nearly all of the process's time and an
 * idle sibling almost none; time no container was seen busy for is charged to nobody. Each
 * container's budget while it serves nothing is kept with its share. A worker that runs
 * without yielding is caught as in a process of its own, by its silence.
 *
 * Outbound requests are the host's (outbound_relay.ts): bounded per container, counted in its
 * memory here, aborted when it ends.
 *
 * @module
 */
import { hostContainer } from "./container_host.ts";
import {
  CONTROL_SLOT,
  encodeGroupFrames,
  type GroupControl,
  type GroupEvent,
  GroupFrameDecoder,
} from "../group_frames.ts";
import { BusyProbe } from "./busy_probe.ts";
import { CoalescingWriter } from "../../../tunnel/pipe_frames.ts";
import { type Member, memoryOf, watchCpu, watchMemory } from "./tenant_limits.ts";

/** A worker's own memory beyond its MCM.MEMORY_MB (its isolate and thread), MiB. */
const WORKER_BASE_MB = 24;
/** After a container took the loaded worker, the next is loaded this much later. */
const SPARE_WORKER_DELAY_MS = 250;
/** How often the node hears each container's usage (a `usage` event). */
const USAGE_MS = 500;
/** Containers are pinged this long apart at least, and up to PROBE_SPREAD_MS more (ms). */
const PROBE_MIN_MS = 100;
const PROBE_SPREAD_MS = 300;
/** ... once the workers were busy this many CPU checks in a row, */
const PROBE_AFTER_CHECKS = 4;
/** ... and no worker started for this long (ms). */
const PROBE_AFTER_START_MS = 1500;
/** Exit code of a worker that failed (as a process whose worker failed: container_host_main). */
const EXIT_WORKER_FAILED = 70;

const MIB = 2 ** 20;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Where the client's process runs. */
export interface TenantSurroundings {
  stdin: ReadableStream<Uint8Array>;
  stdout: WritableStream<Uint8Array>;
  /**
   * Starts a worker of the sandbox (named GROUP_SANDBOX) without any permission but, with a
   * `socket`, to connect to that path.
   */
  startSandbox(): Worker;
  /**
   * The node's socket for this process (src/mcm/runtime/channel_socket.ts): a container opened
   * with a token connects to it and speaks to the node directly; absent, this thread relays.
   */
  socket?: string;
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
  let lastStart = performance.now();
  const load = (): Loaded => {
    lastStart = performance.now();
    const worker = surroundings.startSandbox();
    const link = new MessageChannel();
    const pipe = new MessageChannel();
    const { socket } = surroundings;
    worker.postMessage({ host: link.port1, pipe: pipe.port1, socket }, [link.port1, pipe.port1]);
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

  const open = (slot: number, token?: string) => {
    if (members.has(slot)) return;
    // Connected to the node itself, the worker hears only pings here (and answers them here).
    const direct = token !== undefined && surroundings.socket !== undefined;
    lastStart = performance.now();
    const { worker, host, pipe } = takeLoaded();
    const member: Member = {
      worker,
      pipe,
      budget: WORKER_BASE_MB * MIB,
      cpuMicros: 0,
      lateness: 0,
      probe: new BusyProbe(),
      direct,
    };
    members.set(slot, member);
    pipe.onmessage = (message: MessageEvent<Uint8Array>) => {
      member.probe.fromWorker(message.data);
      if (!direct) send(slot, message.data);
    };
    if (direct) pipe.postMessage(token);
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
  // Pinging costs a worker the garbage of a frame each time, which keeps about 1 MiB of its
  // young heap resident at four pings a second: only while the workers keep using CPU that no
  // start explains (a container's or the loaded worker's, on their own threads).
  let busyChecks = 0;
  const cpu = watchCpu(members, (now) => void (busyChecks = now ? busyChecks + 1 : 0));
  const probing = () =>
    busyChecks >= PROBE_AFTER_CHECKS && performance.now() - lastStart > PROBE_AFTER_START_MS;
  // At random moments (a periodic loop cannot keep out of their way), each container that
  // serves nothing is pinged (busy_probe.ts).
  let probes: ReturnType<typeof setTimeout> | undefined;
  const probe = () => {
    for (const member of probing() ? members.values() : []) {
      // Once its code loaded (its first report came): loading, it answers nothing.
      if (member.watch && member.watch.heap() > 0 && !member.watch.serving()) {
        member.probe.ping((bytes) => member.pipe.postMessage(bytes));
      }
    }
    probes = setTimeout(probe, PROBE_MIN_MS + Math.random() * PROBE_SPREAD_MS);
  };
  probe();
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
          const member = members.get(slot);
          // A container connected to the node gets its bytes there, never here.
          if (member?.direct) continue;
          member?.probe.toWorker(payload);
          member?.pipe.postMessage(payload, [payload.buffer as ArrayBuffer]);
          continue;
        }
        const control = JSON.parse(decoder.decode(payload)) as GroupControl;
        if (control.t === "open") open(control.slot, control.token);
        else if (control.t === "close") members.get(control.slot)?.pipe.postMessage(null);
        else if (control.t === "kill") end(control.slot, 137);
      }
    }
  } finally {
    // The node closed the process: it has no container left, or it is shutting down.
    clearInterval(memory);
    clearInterval(cpu);
    clearInterval(usage);
    clearTimeout(probes);
    clearTimeout(refill);
    spare?.worker.terminate();
    for (const slot of [...members.keys()]) end(slot, 0);
  }
}
