/**
 * The node's side of a client's container process (mcm.containerProcess `per-client`,
 * sandbox/host/tenant_host.ts): the process, and a ContainerPipe for each container in it, so that a
 * container's channel (container_channel.ts) runs the same over a slot of this process as over
 * a process of its own. What the process says is untrusted: a malformed frame ends it (an event
 * type or field this node does not know is ignored). Where the process has a socket
 * (channel_socket.ts), a container's channel runs over its worker's own connection to it
 * (the pipe's `direct`), not over its slot: the process's main thread then only opens, closes
 * and kills containers, and reports on them.
 *
 * The process reports its containers' figures about every 500 ms (usage events): the latest and
 * their trend are kept per slot. When the process dies with containers in it, the node judges
 * from those records which container brought it down (process_blame.ts): that one is told (its
 * record counts it), and each other container's end says who did it, not counted as its own.
 *
 * @module
 */
import { EXIT_REASON_PREFIX } from "../sandbox/channel_protocol.ts";
import { type ChannelSocket, directPipe, type ExpectedConnection } from "./channel_socket.ts";
import type { ContainerPipe, ExitStatus } from "./container_process.ts";
import { type ContainerUsage, UsageHistory } from "./container_usage.ts";
import {
  blame,
  deathCause,
  type RecentEnd,
  suspects,
  type Verdict,
  withoutNativeStack,
} from "./process_blame.ts";
import {
  CONTROL_SLOT,
  encodeGroupFrames,
  type GroupControl,
  type GroupEvent,
  GroupFrameDecoder,
  GroupFrameError,
  parseGroupEvent,
} from "../sandbox/group_frames.ts";

/** A process left without containers ends after this long (a redeploy comes back at once). */
const IDLE_MS = 5000;
/** How long a closed process may take to end before it is killed. */
const CLOSE_GRACE_MS = 2000;
/** Containers ended by the process are remembered this long (a death they may explain). */
const RECENT_END_MS = 5000;

const encoder = new TextEncoder();

/** Feeds a slot's stream; one its reader cancelled takes nothing more. */
function enqueue(
  controller: ReadableStreamDefaultController<Uint8Array> | undefined,
  bytes: Uint8Array,
): void {
  try {
    controller?.enqueue(bytes);
  } catch {
    // Cancelled: the channel stopped reading it.
  }
}

/** A container's slot, as the process's reader feeds it. */
interface Slot {
  /** Its stdout's, unless its worker connected to the node itself (`direct`). */
  out?: ReadableStreamDefaultController<Uint8Array>;
  err: ReadableStreamDefaultController<Uint8Array>;
  status: PromiseWithResolvers<ExitStatus>;
  /** Whether the node killed it (its status says SIGKILL, as a killed process's would). */
  killed: boolean;
  /** Its figures from the process's usage events. */
  usage: UsageHistory;
  /** Who it is, once its channel said (describe). */
  member?: SlotMember;
  /** How the process's death was judged for it (process_blame.ts). */
  verdict?: SlotVerdict;
  /** Its worker's own connection (the process has a socket), once it came. */
  direct?: ExpectedConnection;
}

/** What the node's channel tells the process about the container in a slot. */
export interface SlotMember {
  /** The container's id. */
  id: string;
  /** Requests it is serving now. */
  serving(): number;
  /** Its memory limit (MCM.MEMORY_MB), bytes. */
  memoryLimitBytes: number;
  /**
   * It brought down its client's process, or (`suspect`) was one of the containers one of
   * which did (called once per death, even after it ended).
   */
  broughtDown(why: string, suspect?: boolean): void;
}

/** How a slot's end by its process's death was judged. */
export type SlotVerdict = Verdict;

/** A container's slot in a client's process, with what the process reports of it. */
export interface TenantSlot {
  /** Says who the container is (its channel, once it runs). */
  describe(member: SlotMember): void;
  /** Its latest figures (usage events); undefined before the first. */
  usage(): ContainerUsage | undefined;
  /** Once its status resolved: how the process's death was judged for it, if it died. */
  verdict(): SlotVerdict | undefined;
}

/** What a client's process tells its owner. */
export interface TenantProcessOptions {
  /** The node's own log lines about the process (its stderr, its end). */
  log(message: string): void;
  /** The process ended, or was closed for want of containers: it takes no more. */
  onEnd(): void;
}

/** A running client's process. */
export class TenantProcess {
  readonly #child: Deno.ChildProcess;
  readonly #stdin: WritableStreamDefaultWriter<Uint8Array>;
  readonly #slots = new Map<number, Slot>();
  readonly #options: TenantProcessOptions;
  readonly #socket: ChannelSocket | undefined;
  #nextSlot = 1;
  #stderrTail = "";
  #open = true;
  /** Whether the node itself killed the process (then no container is blamed). */
  #killed = false;
  #idle: ReturnType<typeof setTimeout> | undefined;
  /** Containers the process ended lately, with their members. */
  #recentEnds: (RecentEnd & { member: SlotMember })[] = [];
  /** Resolves once the process ended. */
  readonly exited: Promise<void>;

  /**
   * Takes over `child`, a process started as a client's (container_process.ts, `group`), with
   * `socket` if it was started with one (its workers then connect to the node themselves).
   */
  constructor(child: Deno.ChildProcess, options: TenantProcessOptions, socket?: ChannelSocket) {
    this.#child = child;
    this.#options = options;
    this.#socket = socket;
    this.#stdin = child.stdin.getWriter();
    const reading = Promise.allSettled([this.#readStdout(), this.#readStderr()]);
    this.exited = child.status.then(async (status) => {
      const at = Date.now();
      await reading;
      this.#socket?.close();
      this.#retire();
      const tail = this.#stderrTail.trim();
      if (!this.#killed && this.#slots.size > 0) this.#judge({ status, stderrTail: tail, at });
      for (const [slot, entry] of this.#slots) {
        // A bystander's log does not get its sibling's crash, and no log the native stack.
        const shown = entry.verdict?.culprit === false ? "" : withoutNativeStack(tail);
        if (shown) enqueue(entry.err, encoder.encode(`${shown}\n`));
        this.#finish(slot, { code: status.code, signal: status.signal });
      }
    });
  }

  /** Whether it takes more containers. */
  get open(): boolean {
    return this.#open;
  }

  /** Starts a container in the process: its pipe, and its slot. */
  join(): { pipe: ContainerPipe; slot: TenantSlot } {
    if (!this.#open) throw new Error("the client's process is closed");
    clearTimeout(this.#idle);
    this.#idle = undefined;
    const slot = this.#nextSlot++;
    const status = Promise.withResolvers<ExitStatus>();
    const entry = { status, killed: false, usage: new UsageHistory() } as Slot;
    const stderr = new ReadableStream<Uint8Array>({ start: (c) => void (entry.err = c) });
    this.#slots.set(slot, entry);
    const direct = this.#socket?.expect();
    entry.direct = direct;
    this.#control(direct ? { t: "open", slot, token: direct.token } : { t: "open", slot });
    const close = () => this.#control({ t: "close", slot });
    const pipe: ContainerPipe = {
      ...(direct ? directPipe(direct, close) : {
        stdin: new WritableStream<Uint8Array>({
          write: (bytes) => this.#write(encodeGroupFrames(slot, bytes)),
          close,
          abort: close,
        }),
        stdout: new ReadableStream<Uint8Array>({ start: (c) => void (entry.out = c) }),
      }),
      stderr,
      status: status.promise,
      kill: () => {
        if (!this.#slots.has(slot)) return;
        entry.killed = true;
        this.#control({ t: "kill", slot });
      },
    };
    return {
      pipe,
      slot: {
        describe: (member) => void (entry.member = member),
        usage: () => entry.usage.latest(),
        verdict: () => entry.verdict,
      },
    };
  }

  /**
   * The process died with containers in it: names the one that brought it down, if the
   * evidence singles one out (process_blame.ts), and tells it; the others' verdicts say who.
   */
  #judge(death: Parameters<typeof blame>[0]): void {
    const members = [...this.#slots.values()].flatMap((entry) =>
      entry.member
        ? [{
          id: entry.member.id,
          usage: entry.usage.latest(),
          serving: entry.member.serving(),
          memoryLimitBytes: entry.member.memoryLimitBytes,
        }]
        : []
    );
    const found = blame(death, members, this.#recentEnds);
    if (!found) return this.#suspect(death, members);
    const cause = deathCause(death);
    this.#options.log(`container ${found.id} brought down its client's process: ${found.why}`);
    const ended = this.#recentEnds.findLast((end) => end.id === found.id);
    let told = false;
    for (const entry of this.#slots.values()) {
      if (entry.member?.id === found.id) {
        entry.verdict = { culprit: true, why: found.why };
        if (!told) entry.member.broughtDown(found.why);
        told = true;
      } else entry.verdict = { culprit: false, by: found.id, cause };
    }
    if (!told) ended?.member.broughtDown(found.why);
  }

  /**
   * No container stands out, but the process died of its own doing: the suspects' ends count
   * as theirs and toward their quarantine (process_blame.ts, suspects); the others' do not.
   */
  #suspect(death: Parameters<typeof blame>[0], members: Parameters<typeof blame>[1]): void {
    const { ids, why } = suspects(death, members);
    if (ids.length === 0) return;
    this.#options.log(`a client's process died, ${why}`);
    const cause = deathCause(death);
    const by = ids.join(" or ");
    for (const entry of this.#slots.values()) {
      if (!entry.member) continue;
      if (ids.includes(entry.member.id)) {
        entry.verdict = { culprit: true, suspect: true, why };
        entry.member.broughtDown(why, true);
      } else entry.verdict = { culprit: false, by, cause };
    }
  }

  /** Ends the process: its stdin closes, and it is killed if it has not ended in a moment. */
  async close(): Promise<void> {
    this.#retire();
    await this.#stdin.close().catch(() => {});
    const timer = setTimeout(() => this.#kill(), CLOSE_GRACE_MS);
    await this.exited;
    clearTimeout(timer);
  }

  #retire(): void {
    clearTimeout(this.#idle);
    if (!this.#open) return;
    this.#open = false;
    this.#options.onEnd();
  }

  #kill(): void {
    this.#killed = true;
    try {
      this.#child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  }

  #write(bytes: Uint8Array): Promise<void> {
    return this.#stdin.write(bytes).catch(() => {
      // The process is gone: its end finishes every slot.
    });
  }

  #control(message: GroupControl): void {
    this.#write(encodeGroupFrames(CONTROL_SLOT, encoder.encode(JSON.stringify(message))));
  }

  /** A slot ended: its streams close and its status resolves; an empty process idles out. */
  #finish(slot: number, status: ExitStatus): void {
    const entry = this.#slots.get(slot);
    if (!entry) return;
    this.#slots.delete(slot);
    // Its worker's connection ends with it (the worker may be gone without closing it).
    entry.direct?.cancel();
    for (const controller of [entry.out, entry.err]) {
      try {
        controller?.close();
      } catch {
        // Already closed by its reader's cancel.
      }
    }
    entry.status.resolve(entry.killed ? { code: 137, signal: "SIGKILL" } : status);
    if (this.#slots.size === 0 && this.#open) {
      this.#idle = setTimeout(() => this.close(), IDLE_MS);
    }
  }

  #onEvent(event: GroupEvent | undefined): void {
    // An event type this node does not know: a newer process's, ignored.
    if (!event) return;
    if (event.t === "usage") {
      const at = Date.now();
      // A row of a slot already ended (the event crossed its end) is dropped.
      for (const [slot, memory, cpu, outbound] of event.usage) {
        this.#slots.get(slot)?.usage.record(memory, cpu, outbound, at);
      }
      return;
    }
    const entry = this.#slots.get(event.slot);
    if (!entry) throw new GroupFrameError(`an \`ended\` event for slot ${event.slot}, not open`);
    if (typeof event.why === "string") {
      enqueue(entry.err, encoder.encode(`${EXIT_REASON_PREFIX}${event.why.slice(0, 1000)}\n`));
    }
    if (entry.member && event.code !== 0) {
      const at = Date.now();
      this.#recentEnds = this.#recentEnds.filter((end) => at - end.at < RECENT_END_MS);
      this.#recentEnds.push({
        id: entry.member.id,
        code: event.code,
        why: event.why?.slice(0, 300),
        at,
        member: entry.member,
      });
    }
    this.#finish(event.slot, { code: event.code, signal: null });
  }

  async #readStdout(): Promise<void> {
    const frames = new GroupFrameDecoder();
    try {
      for await (const chunk of this.#child.stdout) {
        for (const { slot, payload } of frames.push(chunk)) {
          if (slot === CONTROL_SLOT) this.#onEvent(parseGroupEvent(payload));
          else enqueue(this.#slots.get(slot)?.out, payload);
        }
      }
    } catch (error) {
      this.#options.log(`a client's process broke its channel (${(error as Error).message})`);
      this.#kill();
    }
  }

  async #readStderr(): Promise<void> {
    for await (const text of this.#child.stderr.pipeThrough(new TextDecoderStream())) {
      this.#stderrTail = (this.#stderrTail + text).slice(-4096);
      for (const line of text.split("\n")) {
        if (line.trim()) this.#options.log(`a client's process: ${line.slice(0, 1000)}`);
      }
    }
  }
}
